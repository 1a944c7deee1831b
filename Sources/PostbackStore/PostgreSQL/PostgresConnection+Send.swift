import Logging
import NIOCore
import PostgresNIO

extension PostgresConnection {
    /// How often ``send(_:logger:)`` looks whether the connection has closed.
    static let closedCheckInterval = TimeAmount.milliseconds(250)

    /// Runs `query` like `query(_:logger:)`, and fails with ``PostgresStoreError/lost`` when the
    /// connection closes before the server answers.
    ///
    /// PostgresNIO 1.33 writes a query to its channel without a promise, so a query sent in the
    /// instant after the server closed the connection (a restart, a failover, a terminated
    /// backend) is dropped and its caller waits forever. Every statement postbackd sends goes
    /// through here, so a transaction broken off that way fails and is retried instead. Once the
    /// rows have started, PostgresNIO itself fails their sequence when the connection closes.
    @discardableResult
    func send(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw PostgresStoreError.lost }
        let answer = eventLoop.makePromise(of: PostgresRowSequence.self)
        let sent = Task {
            do {
                answer.succeed(try await self.query(query, logger: logger))
            } catch {
                answer.fail(error)
            }
        }
        let watch = eventLoop.scheduleRepeatedTask(
            initialDelay: Self.closedCheckInterval,
            delay: Self.closedCheckInterval
        ) { _ in
            // A promise completed twice keeps its first result: this is a no-op once answered.
            if self.isClosed { answer.fail(PostgresStoreError.lost) }
        }
        answer.futureResult.whenComplete { _ in watch.cancel() }
        return try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            sent.cancel()
        }
    }

    /// The first column of the row `query` answers (of its last row when it answers several),
    /// or nil when it answers none.
    func value<Value: PostgresDecodable & Sendable>(
        _ query: PostgresQuery,
        as type: Value.Type,
        logger: Logger
    ) async throws -> Value? {
        var value: Value?
        for try await row in try await send(query, logger: logger).decode(Value.self) {
            value = row
        }
        return value
    }
}

import PostgresNIO
import Synchronization

extension PostgresClient {
    /// As `withConnection`, but stops waiting for a connection after `seconds`, and when the
    /// calling task is cancelled.
    ///
    /// PostgresNIO's lease waits for ever: while the server is down the pool keeps trying to
    /// connect and the request stays queued, so a job would hang and a server would never
    /// answer. Only the wait is bounded, not `body`: a transaction under way is not broken off.
    ///
    /// The lease is taken in a child task, which hands the connection over and holds the lease
    /// until `body` is done; `body` itself runs in the calling task, so it need not be
    /// `Sendable`. Cancelling the child withdraws the queued request from the pool.
    func withConnection<Result>(
        waitingAtMost seconds: Int64,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let handoff = LeaseHandoff()
        return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
            group.addTask {
                do {
                    try await self.withConnection { connection in await handoff.deliver(connection) }
                } catch {
                    handoff.fail(error)
                }
            }
            let timer = Task {
                try await Task.sleep(for: .seconds(seconds))
                handoff.fail(PostgresStoreError.noConnection(within: seconds))
            }
            let connection: PostgresConnection
            do {
                connection = try await withTaskCancellationHandler {
                    try await handoff.connection()
                } onCancel: {
                    handoff.fail(CancellationError())
                }
            } catch {
                timer.cancel()
                group.cancelAll()
                throw error
            }
            timer.cancel()
            defer { handoff.release() }
            return try await body(connection)
        }
    }
}

/// Hands one leased connection from the task holding the lease to the task that uses it, and
/// the end of the use back.
private final class LeaseHandoff: Sendable {
    private struct State {
        var waiting: CheckedContinuation<PostgresConnection, any Error>?
        var delivered: PostgresConnection?
        var handedOver = false
        var failure: (any Error)?
        var holding: CheckedContinuation<Void, Never>?
        var released = false
    }

    private let state = Mutex(State())

    /// Called by the lease holder; returns once the user is done (at once if it gave up).
    func deliver(_ connection: PostgresConnection) async {
        await withCheckedContinuation { (holding: CheckedContinuation<Void, Never>) in
            let (user, giveBack) = state.withLock {
                state -> (CheckedContinuation<PostgresConnection, any Error>?, Bool) in
                if state.failure != nil || state.released { return (nil, true) }
                state.holding = holding
                if let waiting = state.waiting {
                    state.waiting = nil
                    state.handedOver = true
                    return (waiting, false)
                }
                state.delivered = connection
                return (nil, false)
            }
            if giveBack { holding.resume() }
            user?.resume(returning: connection)
        }
    }

    /// Ends the wait with `error`, unless the connection was delivered already.
    func fail(_ error: any Error) {
        let waiting = state.withLock { state -> CheckedContinuation<PostgresConnection, any Error>? in
            guard state.delivered == nil, !state.handedOver, state.failure == nil else { return nil }
            state.failure = error
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(throwing: error)
    }

    /// Waits for the connection, or the failure that ended the wait.
    func connection() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (waiting: CheckedContinuation<PostgresConnection, any Error>) in
            let ready: Result<PostgresConnection, any Error>? = state.withLock { state in
                if let connection = state.delivered {
                    state.delivered = nil
                    state.handedOver = true
                    return .success(connection)
                }
                if let failure = state.failure { return .failure(failure) }
                state.waiting = waiting
                return nil
            }
            if let ready { waiting.resume(with: ready) }
        }
    }

    /// The user is done with the connection: the lease may be returned.
    func release() {
        let holding = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.holding = nil }
            return state.holding
        }
        holding?.resume()
    }
}

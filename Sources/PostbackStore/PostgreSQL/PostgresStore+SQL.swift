import Foundation
import Logging
import NIOCore
import PostbackKit
import PostgresNIO

/// ``SQLDatabase`` on PostgreSQL: each statement on the connection of the transaction
/// ``PostgresStore/withSQL(_:_:retry:_:)`` runs, through the store's `send` (its time limit
/// and its watch for a lost connection).
struct PostgresSQL: SQLDatabase {
    let connection: PostgresConnection
    let logger: Logger

    var dialect: SQLDialect { .postgres }

    func forEachRow(_ query: SQLQuery, _ body: (SQLRow) throws -> Void) async throws {
        var values = SQLRow([])
        for try await row in try await connection.send(Self.query(query), logger: logger) {
            try Self.read(row, into: &values.values)
            try body(values)
        }
    }

    func execute(_ query: SQLQuery) async throws {
        _ = try await connection.send(Self.query(query), logger: logger)
    }

    static func query(_ query: SQLQuery) -> PostgresQuery {
        let (sql, values) = query.rendered(for: .postgres)
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let value): bindings.append(ByteBuffer(bytes: value))
            case .boolean(let value): bindings.append(value)
            case .instant(let value): bindings.append(value.iso8601)
            case .day(let value): bindings.append(value.description)
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    /// The row's cells as ``SQLValue``s, by their PostgreSQL types.
    static func row(_ row: PostgresRow) throws -> SQLRow {
        var values: [SQLValue] = []
        try read(row, into: &values)
        return SQLRow(values)
    }

    /// The row's cells as ``SQLValue``s, replacing those of `values`.
    static func read(_ row: PostgresRow, into values: inout [SQLValue]) throws {
        values.removeAll(keepingCapacity: true)
        for cell in row {
            guard cell.bytes != nil else {
                values.append(.null)
                continue
            }
            switch cell.dataType {
            case .int2, .int4, .int8, .oid:
                values.append(.integer(try cell.decode(Int64.self)))
            case .float4, .float8:
                values.append(.real(try cell.decode(Double.self)))
            case .numeric:
                let number = try cell.decode(Decimal.self)
                let integer = NSDecimalNumber(decimal: number)
                if number == number.rounded(), let exact = Int64(exactly: integer.doubleValue), Decimal(exact) == number
                {
                    values.append(.integer(exact))
                } else {
                    values.append(.real(integer.doubleValue))
                }
            case .bool:
                values.append(.boolean(try cell.decode(Bool.self)))
            case .bytea:
                values.append(.blob(Array(buffer: try cell.decode(ByteBuffer.self))))
            case .timestamptz, .timestamp:
                let date = try cell.decode(Date.self)
                values.append(.instant(UTCInstant(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))))
            case .date:
                let date = try cell.decode(Date.self)
                values.append(.day(UTCDay(daysSinceEpoch: Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)))))
            default:
                values.append(.text(try cell.decode(String.self)))
            }
        }
    }
}

extension Decimal {
    fileprivate func rounded() -> Decimal {
        var value = self
        var result = Decimal()
        NSDecimalRound(&result, &value, 0, .plain)
        return result
    }
}

extension PostgresStore {
    /// One transaction on a pooled connection (see ``SQLAccess``), retried when the
    /// connection is lost, as every operation of this store is.
    package func withSQL<Result: Sendable>(
        _ what: String,
        _ access: SQLAccess,
        retry: SQLRetry,
        _ body: (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        let logger = self.logger
        return try await transaction(
            what,
            isolation: access == .read ? " ISOLATION LEVEL REPEATABLE READ READ ONLY" : "",
            retryingFor: retrySeconds(retry),
            oneStatement: access == .statement,
            // What a client waits for, and (in `serve`) the models read between two commits.
            answerBy: answersClients && (retry == .answering || retry == .repeated) ? Self.answerDeadline() : nil
        ) { connection in
            try await body(PostgresSQL(connection: connection, logger: logger))
        }
    }

    private func retrySeconds(_ retry: SQLRetry) -> Int64 {
        switch retry {
        case .standard: Self.retrySeconds
        case .repeated: modelsRetrySeconds
        case .run: runRetrySeconds
        case .answering: answersClients ? Self.receiveRetrySeconds : Self.retrySeconds
        }
    }
}

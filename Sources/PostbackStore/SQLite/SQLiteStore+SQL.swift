import Foundation
import GRDB
import PostbackKit
import Synchronization

/// ``SQLDatabase`` on SQLite: each statement on the store's one connection, inside the
/// transaction ``SQLiteStore/withSQL(_:_:retry:_:)`` began.
struct SQLiteSQL: SQLDatabase {
    let queue: DatabaseQueue

    var dialect: SQLDialect { .sqlite }

    func forEachRow(_ query: SQLQuery, _ body: (SQLRow) throws -> Void) throws {
        try queue.inDatabase { db in try Self.forEachRow(db, query, body) }
    }

    /// Calls `body` with each row `query` answers on `db`: for the engine's own operations
    /// (aggregate) that run a written-once statement inside their transaction.
    static func forEachRow(_ db: Database, _ query: SQLQuery, _ body: (SQLRow) throws -> Void) throws {
        let (sql, values) = query.rendered(for: .sqlite)
        // A cursor, each row read once into its values (no array of GRDB rows first), in one
        // buffer that `body` leaves uniquely referenced unless it keeps the row.
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments(values))
        var row = SQLRow([])
        while let next = try cursor.next() {
            Self.read(next, into: &row.values)
            try body(row)
        }
    }

    /// Every row `query` answers on `db`.
    static func rows(_ db: Database, _ query: SQLQuery) throws -> [SQLRow] {
        var rows: [SQLRow] = []
        try forEachRow(db, query) { rows.append($0) }
        return rows
    }

    /// Runs `query` on `db`, inside the engine's own transaction.
    static func execute(_ db: Database, _ query: SQLQuery) throws {
        let (sql, values) = query.rendered(for: .sqlite)
        try db.execute(sql: sql, arguments: arguments(values))
    }

    func execute(_ query: SQLQuery) throws {
        try queue.inDatabase { db in try Self.execute(db, query) }
    }

    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: nil
                case .integer(let value): value
                case .real(let value): value
                case .text(let value): value
                case .blob(let value): Data(value)
                case .boolean(let value): value ? Int64(1) : Int64(0)
                case .instant(let value): value.iso8601
                case .day(let value): value.description
                }
            }
        )
    }

    /// `row`'s values, replacing those of `values`.
    static func read(_ row: Row, into values: inout [SQLValue]) {
        values.removeAll(keepingCapacity: true)
        for index in 0..<row.count {
            let value: DatabaseValue = row[index]
            switch value.storage {
            case .null: values.append(.null)
            case .int64(let value): values.append(.integer(value))
            case .double(let value): values.append(.real(value))
            case .string(let value): values.append(.text(value))
            case .blob(let value): values.append(.blob(Array(value)))
            }
        }
    }
}

extension SQLiteStore {
    /// One transaction on the store's connection (see ``SQLAccess``), which it holds until the
    /// transaction ends: another task's transaction waits for its turn (GRDB's queue
    /// serializes each access, not a transaction of several). Inside ingest's open
    /// transaction, `body` runs in that one.
    package func withSQL<Result: Sendable>(
        _ what: String,
        _ access: SQLAccess,
        retry: SQLRetry,
        _ body: (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        await turn.acquire()
        defer { turn.release() }
        let began = try queue.inDatabase { db -> Bool in
            if db.isInsideTransaction { return false }
            switch access {
            case .statement: return false
            case .read: try db.execute(sql: "BEGIN DEFERRED")
            case .write: try db.execute(sql: "BEGIN IMMEDIATE")
            }
            return true
        }
        do {
            let result = try await body(SQLiteSQL(queue: queue))
            if began { try queue.inDatabase { db in try db.execute(sql: "COMMIT") } }
            return result
        } catch {
            if began { try? queue.inDatabase { db in try db.execute(sql: "ROLLBACK") } }
            throw error
        }
    }
}

/// Turns at one connection: one holder at a time, the others waiting in order, suspended (a
/// waiting task holds no thread).
final class ConnectionTurn: Sendable {
    private let state = Mutex<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Waits until the connection is this task's.
    func acquire() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the connection to the next task waiting, if any.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

import Foundation
import GRDB
import GRDBSQLite
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
        // Stepped and read through SQLite's C API, each column once straight into its value
        // (GRDB's rows would make a `DatabaseValue`, and copy a blob twice), in one buffer that
        // `body` leaves uniquely referenced unless it keeps the row.
        let statement = try prepare(db, sql, values)
        let handle = statement.sqliteStatement
        let columns = sqlite3_column_count(handle)
        var row = SQLRow([])
        row.values.reserveCapacity(Int(columns))
        while try SQLiteStep.next(handle) {
            row.values.removeAll(keepingCapacity: true)
            for column in 0..<columns {
                switch sqlite3_column_type(handle, column) {
                case SQLITE_INTEGER: row.values.append(.integer(sqlite3_column_int64(handle, column)))
                case SQLITE_FLOAT: row.values.append(.real(sqlite3_column_double(handle, column)))
                case SQLITE_TEXT:
                    let count = Int(sqlite3_column_bytes(handle, column))
                    let text = sqlite3_column_text(handle, column).map {
                        String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
                    }
                    row.values.append(text.map(SQLValue.text) ?? .null)
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(handle, column))
                    let bytes = sqlite3_column_blob(handle, column).map {
                        Array(UnsafeRawBufferPointer(start: $0, count: count))
                    }
                    row.values.append(.blob(bytes ?? []))
                default: row.values.append(.null)
                }
            }
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
        let statement = try prepare(db, sql, values)
        while try SQLiteStep.next(statement.sqliteStatement) {}
    }

    /// `sql` prepared on `db` (not cached: a written-once statement's text varies with its
    /// lists), its values bound through SQLite's C API (GRDB's `StatementArguments` would box
    /// each one first).
    private static func prepare(_ db: Database, _ sql: String, _ values: [SQLValue]) throws -> Statement {
        let statement = try db.makeStatement(sql: sql)
        var binder = SQLiteBinder(statement)
        for value in values { binder.bind(value) }
        return statement
    }

    func execute(_ query: SQLQuery) throws {
        try queue.inDatabase { db in try Self.execute(db, query) }
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

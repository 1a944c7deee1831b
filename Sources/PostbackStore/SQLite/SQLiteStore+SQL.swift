import Foundation
import GRDB
import PostbackKit

/// ``SQLDatabase`` on SQLite: each statement on the store's one connection, inside the
/// transaction ``SQLiteStore/withSQL(_:_:_:)`` began.
struct SQLiteSQL: SQLDatabase {
    let queue: DatabaseQueue

    var dialect: SQLDialect { .sqlite }

    func rows(_ query: SQLQuery) throws -> [SQLRow] {
        try queue.inDatabase { db in try Self.rows(db, query) }
    }

    /// Every row `query` answers on `db`: for the engine's own operations (aggregate) that run
    /// a written-once statement inside their transaction.
    static func rows(_ db: Database, _ query: SQLQuery) throws -> [SQLRow] {
        let (sql, values) = query.rendered(for: .sqlite)
        // A cursor, each row read once into its values (no array of GRDB rows first).
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments(values))
        var rows: [SQLRow] = []
        while let row = try cursor.next() { rows.append(Self.row(row)) }
        return rows
    }

    func execute(_ query: SQLQuery) throws {
        let (sql, values) = query.rendered(for: .sqlite)
        try queue.inDatabase { db in try db.execute(sql: sql, arguments: Self.arguments(values)) }
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

    static func row(_ row: Row) -> SQLRow {
        var values: [SQLValue] = []
        values.reserveCapacity(row.count)
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
        return SQLRow(values)
    }
}

extension SQLiteStore: SQLStore {
    /// One transaction on the store's connection (see ``SQLAccess``). Inside ingest's open
    /// transaction, `body` runs in that one.
    package func withSQL<Result: Sendable>(
        _ what: String,
        _ access: SQLAccess,
        retry: SQLRetry,
        _ body: (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
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

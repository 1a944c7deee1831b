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
        return try Row.fetchAll(db, sql: sql, arguments: arguments(values)).map(row)
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
        SQLRow(
            row.databaseValues.map { value in
                switch value.storage {
                case .null: .null
                case .int64(let value): .integer(value)
                case .double(let value): .real(value)
                case .string(let value): .text(value)
                case .blob(let value): .blob(Array(value))
                }
            }
        )
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

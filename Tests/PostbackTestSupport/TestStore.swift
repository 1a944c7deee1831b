import Foundation
import GRDB
import Logging
import PostbackKit
import PostbackStore
import PostgresNIO

/// A storage engine the conformance tests run against.
package enum TestEngine: String, Sendable, CustomStringConvertible {
    case sqlite, postgres

    /// The PostgreSQL server the tests use: `POSTBACKD_TEST_POSTGRES_URL`
    /// (`scripts/postgres-dev.sh start` prints one), or nil.
    package static let postgresURL: PostgresURL? = {
        guard let text = ProcessInfo.processInfo.environment["POSTBACKD_TEST_POSTGRES_URL"], !text.isEmpty else {
            return nil
        }
        return try? PostgresURL(text)
    }()

    /// SQLite always; PostgreSQL when a server was named.
    package static let available: [TestEngine] = postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]

    package static let skipNotice =
        "POSTBACKD_TEST_POSTGRES_URL is not set: the PostgreSQL cases are skipped (export POSTBACKD_TEST_POSTGRES_URL=$(scripts/postgres-dev.sh start))"

    /// The PostgreSQL cases, skipped without a server.
    package static let postgresCases = SkippedCases(skipped: postgresURL == nil, notice: skipNotice)

    package var description: String { rawValue }
}

/// A fresh, empty store of one engine, and engine-neutral ways to look inside it.
package struct TestStore: Sendable {
    package let engine: TestEngine
    package let location: StoreLocation

    package init(engine: TestEngine, location: StoreLocation) {
        self.engine = engine
        self.location = location
    }

    /// A new SQLite file in `directory`, or a new PostgreSQL database on the test server.
    package static func make(
        _ engine: TestEngine,
        in directory: TemporaryDirectory,
        name: String = "store"
    ) async throws
        -> TestStore
    {
        switch engine {
        case .sqlite:
            return TestStore(engine: engine, location: .sqlite(path: directory.path + "/\(name).sqlite"))
        case .postgres:
            guard var url = TestEngine.postgresURL else {
                throw TestStoreError(description: TestEngine.skipNotice)
            }
            let database = "pbt_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
            try await withConnection(url) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: logger)
            }
            url.database = String(database)
            return TestStore(engine: engine, location: .postgres(url))
        }
    }

    /// `--db` for the command line.
    package var argument: String {
        switch location {
        case .sqlite(let path): path
        case .postgres(let url):
            "postgres://\(url.user)\(url.password.map { ":" + $0 } ?? "")@"
                + url.servers.map(\.description).joined(separator: ",")
                + "/\(url.database)?sslmode=\(url.sslMode.rawValue)"
                + (url.sessionAttributes.map { "&target_session_attrs=\($0.rawValue)" } ?? "")
                + (url.connectTimeout.map { "&connect_timeout=\($0)" } ?? "")
                + (url.keepalives ? "" : "&keepalives=0")
        }
    }

    /// The first column of each row of `sql`, as text (NULL as nil). Write booleans as 0 and 1
    /// in `sql` (`CASE WHEN … THEN 1 ELSE 0 END`) so that both engines print them alike.
    package func strings(_ sql: String) async throws -> [String?] {
        switch location {
        case .sqlite(let path):
            return try await DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    let value: DatabaseValue = row[0]
                    switch value.storage {
                    case .null: return nil
                    case .blob(let data): return "\\x" + data.map { String(format: "%02x", $0) }.joined()
                    case .string(let text): return text
                    case .int64(let number): return String(number)
                    case .double(let number): return String(number)
                    }
                }
            }
        case .postgres(let url):
            return try await Self.withConnection(url) { connection in
                var values: [String?] = []
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "SELECT x::text FROM (\(sql)) AS q(x)"
                    ),
                    logger: logger
                )
                for try await value in rows.decode(String?.self) { values.append(value) }
                return values
            }
        }
    }

    /// `SELECT COUNT(*) FROM table WHERE condition`.
    package func count(_ table: String, where condition: String = "1 = 1") async throws -> Int {
        Int(try await strings("SELECT COUNT(*) FROM \(table) WHERE \(condition)").first??.description ?? "0") ?? 0
    }

    /// The stored data, table by table, without row ids or run ids, each table ordered by its
    /// natural key (a PostgreSQL identity skips the values of rolled-back inserts, so ids of a
    /// killed and re-run ingest differ from a clean run's while the data does not).
    package func dump(includingTimes: Bool = true) async throws -> [String: [String]] {
        var tables: [String: [String]] = [:]
        for (table, columns) in try await columnsOfStoredTables() {
            let kept = columns.filter {
                !["id", "run_id", "postback_id", "sighting_id", "stored_xid"].contains($0)
                    && (includingTimes || ($0 != "received_at" && $0 != "received_at_source"))
            }
            let select = kept.map { "t.\($0)" }.joined(separator: ", ")
            let sql: String
            switch table {
            case "postbacks":
                sql = "SELECT \(select) FROM postbacks t ORDER BY t.dedup_key"
            case "sightings":
                sql = """
                    SELECT p.dedup_key, \(select) FROM sightings t JOIN postbacks p ON p.id = t.postback_id
                    ORDER BY t.source, t.source_index, t.raw_sha256
                    """
            case "conflicts":
                sql = """
                    SELECT s.source, s.source_index, s.raw_sha256, \(select) FROM conflicts t
                    JOIN sightings s ON s.id = t.sighting_id ORDER BY s.source, s.source_index, s.raw_sha256
                    """
            default:
                sql = "SELECT \(select) FROM \(table) t ORDER BY t.source, t.source_index, t.raw_sha256"
            }
            tables[table] = try await rows(sql)
        }
        return tables
    }

    private func columnsOfStoredTables() async throws -> [(String, [String])] {
        var result: [(String, [String])] = []
        for table in ["postbacks", "sightings", "conflicts", "quarantine"] {
            let columns: [String]
            switch location {
            case .sqlite(let path):
                columns = try await DatabaseQueue(path: path).read { db in try db.columns(in: table).map(\.name) }
            case .postgres:
                columns = try await strings(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = '\(table)' AND table_schema = current_schema() ORDER BY ordinal_position"
                ).compactMap { $0 }
            }
            result.append((table, columns))
        }
        return result
    }

    /// Every row of `sql` as one line of text.
    package func rows(_ sql: String) async throws -> [String] {
        switch location {
        case .sqlite(let path):
            return try await DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    row.databaseValues.map { value in
                        switch value.storage {
                        case .blob(let data): return "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
                        default: return value.description
                        }
                    }.joined(separator: "|")
                }
            }
        case .postgres(let url):
            return try await Self.withConnection(url) { connection in
                var rows: [String] = []
                let sequence = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT (q.*)::text FROM (\(sql)) AS q"),
                    logger: logger
                )
                for try await text in sequence.decode(String.self) { rows.append(text) }
                return rows
            }
        }
    }

    /// Runs `statements` (for tests that damage or forge stored data on purpose).
    package func execute(_ statements: String...) async throws {
        switch location {
        case .sqlite(let path):
            try await DatabaseQueue(path: path).write { db in
                for statement in statements { try db.execute(sql: statement) }
            }
        case .postgres(let url):
            try await Self.withConnection(url) { connection in
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// Runs `body` on a connection of its own to this store (PostgreSQL only).
    package func withPostgresConnection<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        guard case .postgres(let url) = location else {
            throw TestStoreError(description: "withPostgresConnection needs a PostgreSQL store")
        }
        return try await Self.withConnection(url, body)
    }

    /// Runs `body` while another session holds open a write transaction, as another process
    /// would. On PostgreSQL it has a transaction id: whatever commits meanwhile has a later id,
    /// as when a slow ingest's transaction began first; `statements` run in it first. On SQLite
    /// it holds the file's write lock (`BEGIN IMMEDIATE`), and `statements` must be empty.
    package func whileTransactionOpen<Result: Sendable>(
        _ statements: [String] = [],
        _ body: () async throws -> Result
    ) async throws -> Result {
        let url: PostgresURL
        switch location {
        case .postgres(let postgres): url = postgres
        case .sqlite(let path):
            guard statements.isEmpty else { throw TestStoreError(description: "statements are PostgreSQL's") }
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            configuration.allowsUnsafeTransactions = true  // open across the calls, as the store does
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
            do {
                let result = try await body()
                try queue.inDatabase { db in try db.execute(sql: "COMMIT") }
                return result
            } catch {
                try? queue.inDatabase { db in try db.execute(sql: "ROLLBACK") }
                throw error
            }
        }
        return try await Self.withConnection(url) { connection in
            try await connection.query("BEGIN", logger: Self.logger)
            try await connection.query("SELECT pg_current_xact_id()", logger: Self.logger)
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Self.logger)
            }
            let result = try await body()
            try await connection.query("COMMIT", logger: Self.logger)
            return result
        }
    }

    private static let logger = Logger(label: "postbackd.tests", factory: { _ in SwiftLogNoOpLogHandler() })
    private var logger: Logger { Self.logger }

    @discardableResult
    private static func withConnection<Result: Sendable>(
        _ url: PostgresURL,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await PostgresConnection.connect(
            configuration: PostgresConnection.Configuration(
                host: url.host,
                port: url.port,
                username: url.user,
                password: url.password,
                database: url.database,
                tls: .disable
            ),
            id: 1,
            logger: logger
        )
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

package struct TestStoreError: Error, CustomStringConvertible {
    package var description: String
}

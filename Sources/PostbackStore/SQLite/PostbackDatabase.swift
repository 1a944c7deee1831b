import GRDB
import PostbackKit

#if canImport(Glibc)
import Glibc
#endif

/// Why the database cannot be used.
public struct DatabaseOpenError: CodedError {
    public struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case cannotOpen, notPostbackd, newerSchema, unreachable, authenticationRefused }
        fileprivate let value: Value
        /// The file cannot be opened or created.
        public static let cannotOpen = Code(value: .cannotOpen)
        /// The file is not a postbackd database (or not SQLite at all).
        public static let notPostbackd = Code(value: .notPostbackd)
        /// A newer postbackd created the schema.
        public static let newerSchema = Code(value: .newerSchema)
        /// The database server cannot be reached, or has no such database.
        public static let unreachable = Code(value: .unreachable)
        /// The database server refused the user or password.
        public static let authenticationRefused = Code(value: .authenticationRefused)
    }

    public let code: Code
    public let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// The SQLite file postbackd stores postbacks in: opened in WAL mode, with a busy timeout so
/// that several processes can share it, and its schema migrated forward on open.
public enum PostbackDatabase {
    /// The default file: `postbackd.sqlite` in the working directory, or `$POSTBACKD_DB`.
    public static let defaultFileName = "postbackd.sqlite"

    /// How long a writer waits for another process's transaction before giving up.
    public static let busyTimeoutSeconds: Double = 60

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// Safe when several processes open the same new file at once: GRDB's migrator checks
    /// which migrations are applied and then applies each in its own transaction, so two
    /// processes can both try the first one; each migration is atomic, so the loser's attempt
    /// leaves nothing behind, and it finds the schema complete when it looks again.
    ///
    /// - Parameter allowingOpenTransactions: for ingest: let a write transaction stay open
    ///   between two accesses (``PostbackStore`` spans a transaction over many batches; GRDB
    ///   otherwise stops the process when an access leaves one open), and commit without an
    ///   fsync (`synchronous = NORMAL`).
    public static func open(
        _ path: String,
        allowingOpenTransactions: Bool = false
    ) throws(DatabaseOpenError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = allowingOpenTransactions
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.label = "postbackd"
        configuration.prepareDatabase { db in
            // 64 MiB of page cache holds more of the dedup index, whose pages every insert
            // touches at random; checkpoints every 64 MiB of WAL instead of every 4 MiB.
            try db.execute(sql: "PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 16384")
            if allowingOpenTransactions {
                // Ingest: no fsync per commit, only at checkpoints. A process crash loses
                // nothing committed; a power cut may lose the last commits, which a re-run of
                // the same input restores (every write is idempotent).
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            } else {
                // Every other use, `serve` among them: a commit is flushed to disk before it
                // returns, so what `serve` answered 200 for survives a power cut.
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
        }
        let migrator = PostbackSchema.migrator
        var attempt = 0
        while true {
            attempt += 1
            let queue: DatabaseQueue
            do {
                queue = try DatabaseQueue(path: path, configuration: configuration)
            } catch {
                // Switching a new file to WAL needs a moment of exclusive access, which
                // SQLite refuses rather than waits for when another process is doing the same.
                if isBusy(error) && attempt < maximumOpenAttempts {
                    pause(attempt)
                    continue
                }
                throw DatabaseOpenError(
                    .cannotOpen,
                    "cannot open the database \(path): \(describe(error)); check the path and its folder's permissions, or choose another with --db"
                )
            }
            do {
                let superseded = try queue.read { db in
                    try db.tableExists("grdb_migrations") && migrator.hasBeenSuperseded(db)
                }
                if superseded {
                    throw DatabaseOpenError(
                        .newerSchema,
                        "\(path) was written by a newer postbackd; use that version, or another --db"
                    )
                }
                try migrator.migrate(queue)
                return queue
            } catch let error as DatabaseOpenError {
                throw error
            } catch {
                let completedElsewhere =
                    (try? queue.read { db in
                        try db.tableExists("grdb_migrations") && migrator.hasCompletedMigrations(db)
                    })
                    ?? false
                if completedElsewhere { return queue }
                if attempt < maximumOpenAttempts && (isBusy(error) || isSchemaRace(error)) {
                    pause(attempt)
                    continue
                }
                throw DatabaseOpenError(
                    .notPostbackd,
                    "\(path) cannot be used as a postbackd database: \(describe(error)); give --db a new file name or an existing postbackd database"
                )
            }
        }
    }

    private static let maximumOpenAttempts = 20

    /// 50 ms, 100 ms, … up to half a second: another process creating the file needs only
    /// milliseconds.
    private static func pause(_ attempt: Int) {
        usleep(UInt32(min(attempt, 10)) * 50_000)
    }

    private static func isBusy(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
    }

    /// The error of a migration that lost the race to another process: what it creates exists
    /// (a table, an index, a column) or what it drops is gone.
    private static func isSchemaRace(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError, error.resultCode == .SQLITE_ERROR, let message = error.message
        else { return false }
        return ["already exists", "duplicate column name", "no such index"].contains { message.contains($0) }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

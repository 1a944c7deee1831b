import CPostbackdSQLite
import GRDB
import PostbackKit

#if canImport(Glibc)
import Glibc
#endif

/// The SQLite file postbackd stores postbacks in: opened in WAL mode, with a busy timeout so
/// that several processes can share it, and its schema migrated forward on open.
package enum PostbackDatabase {
    /// The default file: `postbackd.sqlite` in the working directory, or `$POSTBACKD_DB`.
    package static let defaultFileName = "postbackd.sqlite"

    /// How long a writer waits for another process's transaction before giving up.
    static let busyTimeoutSeconds: Double = 60

    /// Maps up to 16 GiB of the file, for reads of many rows that jump around it (`aggregate`,
    /// reconcile's count): a system call and a copy a page spared.
    static let mapsFile = "PRAGMA mmap_size = 17179869184"

    /// Lets the write-ahead log grow to about `bytes` before a commit copies it into the file,
    /// whatever the file's page size (SQLite counts pages).
    static func setAutomaticCheckpoint(_ db: Database, bytes: Int) throws {
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        try db.execute(sql: "PRAGMA wal_autocheckpoint = \(max(1, bytes / max(512, pageSize)))")
    }

    /// The page size of a new store, in bytes: 16 KiB rather than SQLite's 4. A stored postback
    /// is about 700 bytes, so a 4 KiB page of `postbacks` filled every fifth insert and the
    /// writer spent its time starting new pages and writing their frames. Measured with the
    /// `sqlite3` shell, 194,157 postbacks inserted with the store's two indexes: 1.21 s on 4 KiB
    /// pages, 1.01 s on 8, 0.87 s on 16 (BENCHMARKS.md). A store made before keeps its pages
    /// (`VACUUM` would change them).
    static let pageSize = 16_384

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// Safe when several processes open the same new file at once: GRDB's migrator checks
    /// which migrations are applied and then applies each in its own transaction, so two
    /// processes can both try the first one; each migration is atomic, so the loser's attempt
    /// leaves nothing behind, and it finds the schema complete when it looks again.
    ///
    /// - Parameter allowingOpenTransactions: for ingest, which spans a write transaction over
    ///   many batches: commit without an fsync (`synchronous = NORMAL`). (Every connection lets
    ///   a transaction stay open between two accesses, which GRDB otherwise stops the process
    ///   for.)
    package static func open(
        _ path: String,
        allowingOpenTransactions: Bool = false
    ) throws(DatabaseOpenError) -> DatabaseQueue {
        _ = processSettings
        var configuration = Configuration()
        // A transaction may stay open between two accesses: ingest's over many batches, and
        // SQLiteStore.withSQL's over the statements of one operation (its own BEGIN and COMMIT).
        configuration.allowsUnsafeTransactions = true
        // WAL is switched on once the file is known to be empty or postbackd's: another
        // program's database is left exactly as it was.
        configuration.journalMode = .default
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.label = "postbackd"
        configuration.prepareDatabase { db in
            // 64 MiB of page cache holds more of the dedup index, whose pages every insert
            // touches at random; checkpoints every 64 MiB of WAL instead of every 4 MiB.
            try db.execute(sql: "PRAGMA cache_size = -65536")
            try setAutomaticCheckpoint(db, bytes: 64 << 20)
            profileIfAsked(db)
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
                throw openFault(error, path: path)
            }
            do {
                try checkOwnership(queue, path: path, migrator: migrator)
                try queue.writeWithoutTransaction { db in
                    // A new file's pages are 16 KiB (``pageSize``); a file with content keeps its own.
                    try db.execute(sql: "PRAGMA page_size = \(pageSize)")
                    // Switching a new file to WAL needs a moment of exclusive access, which
                    // SQLite refuses rather than waits for when another process does the same.
                    let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                    if mode?.lowercased() != "wal" { throw DatabaseError(resultCode: .SQLITE_BUSY) }
                }
                try migrator.migrate(queue)
                return queue
            } catch let error as StoreFault {
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
                throw openFault(error, path: path)
            }
        }
    }

    /// With `POSTBACKD_SQLITE_PROFILE` set in the environment, each statement's time and SQL go
    /// to standard error as it ends: where a command's time goes, statement by statement (the
    /// bound values are not printed: they may be a key's hash or a client's address).
    private static func profileIfAsked(_ db: Database) {
        guard getenv("POSTBACKD_SQLITE_PROFILE") != nil else { return }
        db.trace(options: .profile) { event in
            guard case .profile(let statement, let duration) = event else { return }
            let sql = statement.sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let line = Array("\(Int((duration * 1_000_000).rounded())) µs \(sql)\n".utf8)
            _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }

    /// SQLite's process-wide settings, made once, before the process's first connection: its
    /// memory statistics off (a process-wide mutex taken by every allocation and free; 1–2% of
    /// ingest's writer, which allocates for every statement it steps). SQLITE_MISUSE, and no
    /// change, when SQLite was initialized before.
    static let processSettings: Int32 = postbackd_sqlite3_disable_memory_statistics()

    /// Opens the database at `path` to read it only: no file is created or written, beside it
    /// or in it, and the schema is not migrated (`report`, `models list|show`, `check`).
    ///
    /// A file in WAL mode is read through its `-wal` and `-shm` when they exist (a writer has
    /// it open, or was killed): both only read. When there is no `-wal`, every change is in the
    /// file itself and no writer has it open, so it is opened `immutable`: SQLite then
    /// creates no `-shm`, which a folder the user may not write would refuse anyway. (A writer
    /// that opens the file during the read, and checkpoints before it ends, can make such a
    /// read fail: run it again.)
    ///
    /// - Throws: ``StoreFault``: no such file, not a postbackd store, damaged, a newer
    ///   schema, or an older one (which a writer must migrate first).
    static func openReadOnly(_ path: String) throws(StoreFault) -> DatabaseQueue {
        _ = processSettings
        var info = stat()
        guard stat(path, &info) == 0 else {
            let detail = String(cString: strerror(errno))
            if errno == ENOENT {
                throw StoreFault(
                    .noStore,
                    "no store at \(path) (\(detail)); check --db (or $POSTBACKD_DB), or make one with `postbackd ingest --db \(path) FILES`"
                )
            }
            throw StoreFault(
                .cannotOpen,
                "cannot open \(path) (\(detail)); check the path and its folder's permissions"
            )
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw StoreFault(.noStore, "\(path) is a folder, not a store; give --db the store's file")
        }
        var configuration = Configuration()
        configuration.readonly = true
        // SQLiteStore.withSQL's read transactions span several accesses.
        configuration.allowsUnsafeTransactions = true
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.label = "postbackd"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -65536")
            profileIfAsked(db)
        }
        let hasLog = access(path + "-wal", F_OK) == 0
        let target = hasLog ? path : "file:" + uriEscaped(path) + "?immutable=1"
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: target, configuration: configuration)
        } catch {
            throw openFault(error, path: path)
        }
        do {
            try checkOwnership(queue, path: path, migrator: PostbackSchema.migrator, readOnly: true)
            let complete = try queue.read { db in try PostbackSchema.migrator.hasCompletedMigrations(db) }
            if !complete {
                throw StoreFault(
                    .olderSchema,
                    "\(path) was written by an older postbackd and this command does not migrate it: run a command that writes (e.g. `postbackd aggregate --db \(path)`) once, as a user who may write it, then this one"
                )
            }
            return queue
        } catch let error as StoreFault {
            throw error
        } catch {
            throw openFault(error, path: path)
        }
    }

    /// Throws unless the file is empty, or postbackd's: a newer postbackd's schema, or tables of
    /// another program (which migrating would mix postbackd's into), are refused.
    private static func checkOwnership(
        _ queue: DatabaseQueue,
        path: String,
        migrator: DatabaseMigrator,
        readOnly: Bool = false
    ) throws {
        try queue.read { db in
            if try db.tableExists("grdb_migrations") {
                if try migrator.hasBeenSuperseded(db) {
                    throw StoreFault(
                        .newerSchema,
                        "\(path) was written by a newer postbackd; use that version, or another --db"
                    )
                }
                return
            }
            let tables = try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 4"
            )
            if !tables.isEmpty {
                throw StoreFault(
                    .notPostbackd,
                    "\(path) is another program's SQLite database (it holds \(tables.joined(separator: ", "))), not a postbackd store; give --db a new file name or a postbackd store"
                )
            }
            if readOnly {
                throw StoreFault(
                    .noStore,
                    "\(path) is an empty file, not a postbackd store yet; check --db, or make one with `postbackd ingest --db \(path) FILES`"
                )
            }
        }
    }

    /// The fault of a failed open: a text file is not a store; a path that cannot be opened,
    /// damage, a full disk, a read-only file and a lock in words
    /// (``StoreFault/sqlite(_:detail:store:)``).
    private static func openFault(_ error: any Error, path: String) -> StoreFault {
        guard let error = error as? DatabaseError else {
            return StoreFault(.failed, "cannot open \(path) (\(error))")
        }
        switch error.resultCode.primaryResultCode {
        case .SQLITE_NOTADB:
            return StoreFault(
                .notPostbackd,
                "\(path) is not a postbackd store, nor an SQLite database at all (\(describe(error))); give --db a new file name or a postbackd store"
            )
        case .SQLITE_ERROR:
            return StoreFault(
                .notPostbackd,
                "\(path) cannot be used as a postbackd store (\(describe(error))); give --db a new file name or a postbackd store"
            )
        default:
            return StoreFault.classify(error, at: .sqlite(path: path))
        }
    }

    /// A path as a `file:` URI's path: `%`, `?` and `#` escaped.
    private static func uriEscaped(_ path: String) -> String {
        path.replacingCharacters { character in
            switch character {
            case "%": "%25"
            case "?": "%3f"
            case "#": "%23"
            default: nil
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
    /// (a table, an index, a column) or what it drops is gone; or, for a migration that changes
    /// nothing when run twice (v28's edit of a table's SQL), GRDB's record of it exists.
    private static func isSchemaRace(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError, let message = error.message else { return false }
        switch error.resultCode {
        case .SQLITE_ERROR:
            return ["already exists", "duplicate column name", "no such index"].contains { message.contains($0) }
        case .SQLITE_CONSTRAINT:
            return message.contains("grdb_migrations")
        default:
            return false
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

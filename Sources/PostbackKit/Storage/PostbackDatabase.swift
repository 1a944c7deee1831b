import GRDB

/// Why the database cannot be used.
public struct DatabaseOpenError: CodedError {
    public struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case cannotOpen, notPostbackd, newerSchema }
        fileprivate let value: Value
        /// The file cannot be opened or created.
        public static let cannotOpen = Code(value: .cannotOpen)
        /// The file is not a postbackd database (or not SQLite at all).
        public static let notPostbackd = Code(value: .notPostbackd)
        /// A newer postbackd created the schema.
        public static let newerSchema = Code(value: .newerSchema)
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
    public static func open(_ path: String) throws(DatabaseOpenError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(busyTimeoutSeconds)
        configuration.label = "postbackd"
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw DatabaseOpenError(
                .cannotOpen,
                "cannot open the database \(path): \(describe(error)); check the path and its folder's permissions, or choose another with --db"
            )
        }
        do {
            try queue.write { db in
                if try PostbackSchema.migrator.hasBeenSuperseded(db) {
                    throw DatabaseOpenError(
                        .newerSchema,
                        "\(path) was written by a newer postbackd; use that version, or another --db"
                    )
                }
            }
            try PostbackSchema.migrator.migrate(queue)
        } catch let error as DatabaseOpenError {
            throw error
        } catch {
            throw DatabaseOpenError(
                .notPostbackd,
                "\(path) cannot be used as a postbackd database: \(describe(error)); give --db a new file name or an existing postbackd database"
            )
        }
        return queue
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

import GRDB
import PostbackKit
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// A store that cannot be used, or stopped working: the one error every command and the server
/// report for a fault of the store's environment (damaged, disk full, read-only, locked,
/// unreachable, authentication refused, a schema of another version, not a postbackd store).
///
/// Its ``reason`` is one sentence that names the store (its path, or its URL without the
/// password), says what is wrong in words and what to do; the driver's own text follows in
/// parentheses as detail, never alone. Commands exit with status 2 on it; `serve` logs it
/// and answers 503 with ``publicReason`` (which does not name the store).
package struct StoreFault: CodedError {
    package typealias Code = ErrorCode<StoreFault>

    package let code: Code
    package let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// What an HTTP client is told (a 503's JSON reason): the fault in words, without the
    /// store's name.
    package var publicReason: String {
        switch code {
        case .damaged: "the store is damaged; retry later"
        case .diskFull: "the store's disk is full; retry later"
        case .readOnly, .notPermitted: "the store does not accept writes; retry later"
        case .locked: "the store is busy; retry later"
        case .unreachable, .authenticationRefused: "the store cannot be reached; retry later"
        default: "the store cannot be used now; retry later"
        }
    }

    /// `error` as a fault of the store at `location`: a ``StoreFault`` as it is, a driver's
    /// error (SQLite's result code, PostgreSQL's SQLSTATE) in words.
    ///
    /// - Parameter whileWriting: the command was writing: the sentence adds that what was
    ///   committed is kept and the same command finishes the work.
    package static func classify(
        _ error: any Error,
        at location: StoreLocation,
        whileWriting: Bool = false
    ) -> StoreFault {
        if let fault = error as? StoreFault { return fault }  // said before anything was written
        let fault = describe(error, at: location)
        guard whileWriting else { return fault }
        switch fault.code {
        case .damaged, .diskFull, .locked, .ioError, .unreachable, .failed:
            return StoreFault(
                fault.code,
                fault.reason + ". What was committed is kept; run the same command again to finish"
            )
        default:
            return fault
        }
    }

    private static func describe(_ error: any Error, at location: StoreLocation) -> StoreFault {
        let store = location.description
        if let error = error as? DatabaseError {
            var code = error.resultCode
            // A write that found no room fails as an I/O error when it extends the `-shm` or
            // the log: the disk is full all the same.
            if case .sqlite(let path) = location, code.primaryResultCode == .SQLITE_IOERR, diskIsFull(path) {
                code = .SQLITE_FULL
            }
            return sqlite(code, detail: PostbackDatabase.describe(error), store: store)
        }
        if let error = error as? PostgresStoreError {
            return postgres(
                sqlState: error.sqlState,
                lost: error.connectionLost,
                detail: error.detail,
                store: store,
                action: error.action
            )
        }
        if error is PSQLError {
            let facts = PostgresStoreError.facts(of: error)
            return postgres(
                sqlState: facts.sqlState,
                lost: facts.connectionLost,
                detail: describePostgresError(error),
                store: store,
                action: nil
            )
        }
        return StoreFault(.failed, "\(store) failed: \(error)")
    }

    /// An SQLite result code in words.
    static func sqlite(_ code: ResultCode, detail: String, store: String) -> StoreFault {
        switch code.primaryResultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreFault(
                .damaged,
                "\(store) is damaged (\(detail)); restore it from a backup, or run `postbackd check --db \(store)` to see what is affected"
            )
        case .SQLITE_FULL:
            return StoreFault(
                .diskFull,
                "\(store) cannot grow: the disk is full (\(detail)); free space on its disk, or move the store, and run the command again"
            )
        case .SQLITE_READONLY, .SQLITE_PERM:
            return StoreFault(
                .readOnly,
                "\(store) is read-only to this command (\(detail)); it writes to the store: run it as a user who may write the file and its folder, on a writable mount (report, models list|show and check need only read)"
            )
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreFault(
                .locked,
                "\(store) stayed locked by another process for \(Int(PostbackDatabase.busyTimeoutSeconds)) s (\(detail)); run the command again when the other one (an ingest, aggregate or a long report) has finished"
            )
        case .SQLITE_IOERR:
            return StoreFault(
                .ioError,
                "\(store) could not be read or written: the disk reported an I/O error (\(detail)); check the disk, then run `postbackd check --db \(store)`"
            )
        case .SQLITE_CANTOPEN:
            return StoreFault(
                .cannotOpen,
                "cannot open the database \(store) (\(detail)); check the path and its folder's permissions, or choose another with --db"
            )
        default:
            return StoreFault(.failed, "\(store) failed (\(detail))")
        }
    }

    /// A PostgreSQL SQLSTATE (or a lost connection) in words.
    static func postgres(sqlState: String?, lost: Bool, detail: String, store: String, action: String?) -> StoreFault {
        let doing = action.map { " could not \($0)" } ?? ""
        switch sqlState {
        case "53100"?:
            return StoreFault(
                .diskFull,
                "\(store)\(doing): the server's disk is full (\(detail)); free space on the server, and run the command again"
            )
        case "25006"?:
            return StoreFault(
                .readOnly,
                "\(store)\(doing): the server accepts no writes (\(detail)); point --db at the primary, not a standby, or use a read-only command"
            )
        case "42501"?:
            return StoreFault(
                .notPermitted,
                "\(store)\(doing): its user lacks a privilege this command needs (\(detail)); a role with only SELECT can run report, models list|show and check: run this command with --db naming the store's owner, or grant the role what it needs"
            )
        case "XX001"?, "XX002"?:
            return StoreFault(
                .damaged,
                "\(store) is damaged (\(detail)); restore it from a backup, or run `postbackd check --db URL` to see what is affected"
            )
        case "28P01"?, "28000"?:
            return StoreFault(
                .authenticationRefused,
                "\(store) refused the user (\(detail)); check the user and password in --db and the server's pg_hba.conf"
            )
        case "55P03"?, "40P01"?:
            return StoreFault(
                .locked,
                "\(store)\(doing): another session held a lock too long (\(detail)); run the command again"
            )
        default:
            break
        }
        if lost || sqlState?.hasPrefix("08") == true || sqlState?.hasPrefix("57P") == true || sqlState == "53300" {
            return StoreFault(
                .unreachable,
                "\(store)\(doing): the server cannot be reached (\(detail)); check that it runs and accepts connections, and run the command again"
            )
        }
        return StoreFault(.failed, "\(store)\(doing.isEmpty ? " failed" : doing) (\(detail))")
    }
}

/// Whether the file system holding `path` has less than a megabyte left for this user.
func diskIsFull(_ path: String) -> Bool {
    let folder = path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) : "."
    var info = statvfs()
    guard statvfs(folder.isEmpty ? "/" : folder, &info) == 0 else { return false }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize) < 1 << 20
}

/// The fault before anything is read: kept under its former name, which the jobs' documentation uses.
package typealias DatabaseOpenError = StoreFault

extension ErrorCode where Domain == StoreFault {
    /// The file cannot be opened or created (no such folder, no permission).
    static let cannotOpen = Self("cannot_open")
    /// The file or folder holds no store (read-only commands do not create one).
    package static let noStore = Self("no_store")
    /// The file is not a postbackd store (or not SQLite at all), or the database holds
    /// tables postbackd did not make.
    static let notPostbackd = Self("not_postbackd")
    /// A newer postbackd wrote the schema.
    package static let newerSchema = Self("newer_schema")
    /// An older postbackd wrote the schema, and this command does not migrate.
    package static let olderSchema = Self("older_schema")
    /// The database's pages are damaged (malformed, truncated, corrupt).
    package static let damaged = Self("damaged")
    /// The disk (or the database's quota) is full.
    static let diskFull = Self("disk_full")
    /// The store may not be written here: a read-only file, folder, mount or server.
    static let readOnly = Self("read_only")
    /// The database user lacks a privilege the command needs.
    package static let notPermitted = Self("not_permitted")
    /// Another process held the store locked for longer than the wait.
    package static let locked = Self("locked")
    /// The disk failed a read or a write.
    static let ioError = Self("io_error")
    /// The database server cannot be reached, went away, or has no such database.
    package static let unreachable = Self("unreachable")
    /// The database server refused the user or password.
    static let authenticationRefused = Self("authentication_refused")
    /// Anything else the store reported.
    package static let failed = Self("failed")
}

import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostbackKit
import PostgresNIO
import _ConnectionPoolModule

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL engine: one database that many workers on many machines share.
///
/// Reached through PostgresNIO's `PostgresClient` and its connection pool, which also opens a
/// new connection when the server restarts. Every write transaction is retried whole when the
/// server breaks it off (a deadlock, a serialization failure, a restart, a lost connection),
/// because every write is idempotent and the transaction's input is kept until it commits.
///
/// `Sendable`: PostgresNIO's client lends each transaction a pooled connection, and what an
/// ingest run has not committed lives in its ``PostgresIngestSession``, not here.
package final class PostgresStore: StoreEngine {
    package let location: StoreLocation
    let url: PostgresURL
    /// The URL's servers and the pool to the one in use.
    let servers: PostgresServers
    let logger: Logger
    package let devicePrune = PruneSchedule()

    /// Entries kept before a write is sent without waiting for ``IngestSession/commit()``:
    /// bounds memory whatever `--commit-every` says.
    package static let maximumPendingEntries = 16_384

    /// How long a transaction the server broke off is retried before the job gives up.
    static let retrySeconds: Int64 = 60

    /// The shortest wait for a pooled connection, even for a transaction not retried.
    static let minimumConnectionWait: Int64 = 5

    /// How long the start and end of a run are retried: shorter for `serve`, which should stop
    /// soon after SIGTERM even when the server is gone.
    let runRetrySeconds: Int64

    /// How long reading the models is retried: `serve` reads them again every few seconds,
    /// between commits, and must not stall its commits for long while the server is away.
    let modelsRetrySeconds: Int64
    /// Whether a client waits for what this store does (a store that receives: `serve`): then
    /// what answers a request (``SQLRetry/answering``) has the answer deadline.
    let answersClients: Bool

    private init(
        url: PostgresURL,
        servers: PostgresServers,
        access: StoreAccess,
        logger: Logger
    ) {
        self.runRetrySeconds = access == .receive ? 10 : Self.retrySeconds
        self.modelsRetrySeconds = access == .receive ? Self.receiveRetrySeconds : Self.retrySeconds
        self.answersClients = access == .receive
        self.url = url
        self.location = .postgres(url)
        self.servers = servers
        self.logger = logger
    }

    /// Finds the URL's server to use (``PostgresServers/find(_:wanted:configuration:logger:)``),
    /// creates or migrates the schema there, and runs `body` with the store while its
    /// connection pools run in a child task (``PostgresServers/run()``), which ends with `body`.
    ///
    /// A store opened inside a ServiceLifecycle service would hand the pool the service's
    /// graceful shutdown, on which `run()` closes the pool before the service has recorded its
    /// last outcomes: services are given a store opened outside their group (`forward`,
    /// `apple-ads fetch`, `serve`).
    ///
    /// - Throws: ``DatabaseOpenError`` naming the host and what to check when the server
    ///   cannot be reached, refuses the user, has no such database, or holds a newer schema.
    package static func with<Result>(
        _ url: PostgresURL,
        access: StoreAccess = .standard,
        logger: Logger,
        _ body: (PostgresStore) async throws -> Result
    ) async throws -> Result {
        let tls = try tlsConfiguration(url.sslMode)
        let sessionTLS = (connection: try connectionTLS(url.sslMode, tls), client: clientTLS(url.sslMode, tls))
        let wanted = try sessions(url, writing: access != .readOnly)
        let configuration = { (server: PostgresURL.Server) in
            PostgresServers.connectionConfiguration(url, server, tls: sessionTLS.connection)
        }
        // The server to use, and a connection to it of its own (so that an unreachable server
        // or a refused user gives a clear message), which creates or migrates the schema.
        let (server, connection): (PostgresURL.Server, PostgresConnection)
        do {
            (server, connection) = try await PostgresServers.find(
                url,
                wanted: wanted,
                configuration: configuration,
                logger: logger
            )
        } catch {
            throw openError(error, url)
        }
        let servers = PostgresServers(url: url, wanted: wanted, first: server, tls: sessionTLS, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // The pools run from the start (by the time the migrations are done, the first
            // lease finds the pool running), and the watch of the transactions under way.
            group.addTask { await servers.run() }
            group.addTask { await servers.watch() }
            do {
                try await migrate(connection, url: url, migrating: access != .readOnly, logger: logger)
                let result = try await body(PostgresStore(url: url, servers: servers, access: access, logger: logger))
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// The sessions a store opened for `writing` (or reading) may use: a writer needs one
    /// that accepts writes, which a URL of several servers must pick (`read-write` unless it
    /// says `primary`); a reader takes what the URL says (libpq's default, `any`).
    ///
    /// - Throws: ``DatabaseOpenError`` for a writer whose URL asks for a session that cannot
    ///   write.
    static func sessions(_ url: PostgresURL, writing: Bool) throws -> PostgresURL.SessionAttributes {
        guard writing else { return url.sessionAttributes ?? .any }
        switch url.sessionAttributes {
        case .readWrite?, .primary?: return url.sessionAttributes ?? .readWrite
        case nil, .any?: return url.servers.count > 1 ? .readWrite : .any
        case .readOnly?, .standby?, .preferStandby?:
            throw DatabaseOpenError(
                .readOnly,
                "\(url.description) asks for target_session_attrs=\(url.sessionAttributes?.rawValue ?? ""), a session that cannot write, and this command writes; use target_session_attrs=read-write (readers such as report and check may use a standby)"
            )
        }
    }

    /// Creates or migrates the schema on `connection` (or checks its version, for a reader),
    /// and closes it.
    private static func migrate(
        _ connection: PostgresConnection,
        url: PostgresURL,
        migrating: Bool,
        logger: Logger
    ) async throws {
        let name = url.description
        do {
            if migrating {
                try await PostgresSchema.migrate(connection, store: name, logger: logger)
            } else {
                try await PostgresSchema.checkVersion(connection, store: name, logger: logger)
            }
        } catch let error as DatabaseOpenError {
            try? await connection.close()
            throw error
        } catch {
            try? await connection.close()
            // A role that may not create tables, a standby, a full disk: said as such.
            let fault = StoreFault.classify(error, at: .postgres(url))
            if fault.code != .failed { throw fault }
            throw DatabaseOpenError(
                .notPostbackd,
                "\(name) cannot be used as a postbackd database: \(describePostgresError(error)); give --db an empty database or an existing postbackd one"
            )
        }
        try? await connection.close()
    }

    // MARK: - Transactions

    /// Runs `body` in one transaction on a pooled connection, and runs it again from the start
    /// when the server broke the transaction off in a way a retry can heal, for up to
    /// `retrySeconds`.
    ///
    /// Waiting for a connection counts against the same time (and at least
    /// ``minimumConnectionWait``): while the server is down, the call fails instead of waiting
    /// for it to come back.
    ///
    /// With `oneStatement`, `body` sends one statement, its own transaction: no `BEGIN` and
    /// `COMMIT` round trips. With a `deadline` (a client of `serve` waits for the answer),
    /// nothing waits past it: not the wait for a connection, not a retry, and a statement
    /// still unanswered then (a half-open connection) has its connection closed.
    func transaction<Result>(
        _ what: String,
        isolation: String = "",
        retryingFor retrySeconds: Int64 = PostgresStore.retrySeconds,
        oneStatement: Bool = false,
        answerBy deadline: ContinuousClock.Instant? = nil,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let started = UTCInstant.now()
        var attempt = 0
        while true {
            attempt += 1
            let pool = servers.current
            do {
                // The first attempt waits at least the minimum; a retry, only what time is left.
                let remaining = retrySeconds - (UTCInstant.now().milliseconds - started.milliseconds) / 1000
                var wait = attempt == 1 ? max(remaining, Self.minimumConnectionWait) : max(remaining, 1)
                // Several servers: a wait that is long checks the server is still the one to use.
                if servers.multiHost { wait = min(wait, PostgresServers.leaseCheckSeconds) }
                if let deadline {
                    let left = deadline - .now
                    guard left > .zero else { throw PostgresStoreError.noConnection(within: max(retrySeconds, 1)) }
                    wait = min(wait, max(1, Int64((left + .milliseconds(999)).components.seconds)))
                }
                return try await pool.client.withConnection(waitingAtMost: wait) { connection in
                    try await servers.watching(connection, on: pool, until: deadline) {
                        // One statement is a transaction of its own: two round trips fewer.
                        if oneStatement { return try await body(connection) }
                        try await connection.send(PostgresQuery(unsafeSQL: "BEGIN" + isolation), logger: logger)
                        do {
                            let result = try await body(connection)
                            try await connection.send("COMMIT", logger: logger)
                            return result
                        } catch {
                            // A closed connection rolled back already: the server ends the
                            // transaction of a session that goes away.
                            if !connection.isClosed {
                                _ = try? await connection.send("ROLLBACK", logger: logger)
                            }
                            throw error
                        }
                    }
                }
            } catch let error as BundleIDConflict {
                // The caller's error, not the database's.
                throw error
            } catch {
                // Several servers: the one in use may have failed over, or become a standby.
                let leaseTimedOut = (error as? PostgresStoreError)?.code == .connectionWait
                let moved = servers.multiHost && (isRetryable(error) || isReadOnly(error) || leaseTimedOut)
                // Past its deadline a transaction is not retried: no search for it either.
                let late = deadline.map { ContinuousClock.now >= $0 } ?? false
                if moved && !late {
                    do {
                        try await servers.refind(after: pool.generation, until: deadline)
                    } catch {
                        logger.warning(
                            "no server to use",
                            metadata: ["store.action": "\(what)", "store.error": "\(describePostgresError(error))"]
                        )
                    }
                }
                let elapsed = (UTCInstant.now().milliseconds - started.milliseconds) / 1000
                guard isRetryable(error) || moved, elapsed < retrySeconds,
                    deadline.map({ ContinuousClock.now < $0 }) ?? true
                else {
                    throw PostgresStoreError(store: url.description, action: what, error: error)
                }
                logger.warning(
                    "transaction broken off; retrying",
                    metadata: [
                        "store.action": "\(what)", "store.attempt": "\(attempt)",
                        "store.error": "\(describePostgresError(error))",
                    ]
                )
                try await Task.sleep(nanoseconds: UInt64(min(attempt, 10)) * 200_000_000)
            }
        }
    }

    /// How long a client of `serve` waits at most for what the store does for it (its
    /// postback's commit, its call's record, `/readyz`'s check): the retries' 5 s and 2 s more.
    static let answerSeconds: Int64 = 7

    /// The deadline of a transaction a client waits for, which arrived at `arrival`.
    static func answerDeadline(arrivedAt arrival: UTCInstant = .now()) -> ContinuousClock.Instant {
        let waited = max(0, UTCInstant.now().milliseconds - arrival.milliseconds)
        return ContinuousClock.now + .milliseconds(answerSeconds * 1000 - waited)
    }

    // MARK: - Errors

    private static func tlsConfiguration(_ mode: PostgresURL.SSLMode) throws -> TLSConfiguration {
        // As libpq's sslmode=prefer and require: encrypted, the server's certificate not verified.
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }

    private static func connectionTLS(
        _ mode: PostgresURL.SSLMode,
        _ tls: TLSConfiguration
    ) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: tls))
        case .require: .require(try NIOSSLContext(configuration: tls))
        }
    }

    private static func clientTLS(
        _ mode: PostgresURL.SSLMode,
        _ tls: TLSConfiguration
    ) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(tls)
        case .require: .require(tls)
        }
    }

    /// The error of a failed first connection, in words: who refused what, and what to check.
    private static func openError(_ error: any Error, _ url: PostgresURL) -> DatabaseOpenError {
        if let error = error as? PostgresServerSearchError {
            return DatabaseOpenError(
                .unreachable,
                "\(url.description): \(error); check that the servers run and that one of them is the primary (a standby is promoted with pg_ctl promote)"
            )
        }
        let server =
            "PostgreSQL at \(url.servers.count > 1 ? url.servers.map(\.description).joined(separator: ",") : "\(url.host):\(url.port)")"
        let detail = describePostgresError(error)
        if let error = error as? PSQLError {
            switch error.serverInfo?[.sqlState] {
            case "28P01", "28000":
                return DatabaseOpenError(
                    .authenticationRefused,
                    "\(server) refused user \(url.user) (\(detail)); check the user and password in --db (\(url.description)) and the server's pg_hba.conf"
                )
            case "3D000":
                return DatabaseOpenError(
                    .unreachable,
                    "\(server) has no database \(url.database); create it (createdb \(url.database)) or name another in --db"
                )
            default:
                break
            }
            if error.code == .sslUnsupported {
                return DatabaseOpenError(
                    .unreachable,
                    "\(server) does not offer TLS, which sslmode=require needs; enable ssl on the server or use sslmode=prefer"
                )
            }
        }
        return DatabaseOpenError(
            .unreachable,
            "cannot reach \(server) (\(detail)); check that the server runs, the host and port in --db, and that it accepts TCP connections from here (listen_addresses, pg_hba.conf)"
        )
    }
}

/// A PostgreSQL store failed while working, after it opened: the engine's one error, in the
/// coded shape of ``StoreFault`` (which says it to a person, naming the store).
struct PostgresStoreError: CodedError {
    typealias Code = ErrorCode<Self>

    let code: Code
    let reason: String
    /// What failed, in the driver's words without the statement's bound values or the
    /// password (``describePostgresError(_:)``).
    let detail: String
    /// What the store was doing (`store postbacks`), for a transaction that failed.
    var action: String?
    /// The server's SQLSTATE, when it answered with an error.
    var sqlState: String?
    /// The connection broke or the server went away (a retry could have healed it).
    var connectionLost = false

    /// The connection closed before the server answered.
    static let lost = PostgresStoreError(
        code: .connectionLost,
        reason: "the connection to the server was lost",
        detail: "the connection to the server was lost",
        connectionLost: true
    )

    /// No connection within `seconds`.
    static func noConnection(within seconds: Int64) -> PostgresStoreError {
        let text = "no connection to the server within \(seconds) s (is it running and reachable?)"
        return PostgresStoreError(code: .connectionWait, reason: text, detail: text, connectionLost: true)
    }

    private init(code: Code, reason: String, detail: String, connectionLost: Bool) {
        self.code = code
        self.reason = reason
        self.detail = detail
        self.connectionLost = connectionLost
    }

    /// The transaction of `action` on `store` failed with `error`.
    init(store: String, action: String, error: any Error) {
        self.init(store: store, action: action, detail: describePostgresError(error))
        (sqlState, connectionLost) = Self.facts(of: error)
    }

    /// The transaction of `action` on `store` failed as `detail` says.
    init(store: String, action: String, detail: String) {
        code = .failed
        reason = "\(store) could not \(action): \(detail)"
        self.detail = detail
        self.action = action
    }

    /// The SQLSTATE the server answered `error` with, if any, and whether the connection broke
    /// or the server went away (a pool's wait that timed out counts).
    static func facts(of error: any Error) -> (sqlState: String?, connectionLost: Bool) {
        if let error = error as? PostgresStoreError { return (error.sqlState, error.connectionLost) }
        return ((error as? PSQLError)?.serverInfo?[.sqlState], isRetryable(error))
    }
}

extension ErrorCode where Domain == PostgresStoreError {
    /// The connection closed before the server answered a statement (a retry can heal it).
    static let connectionLost = Self("connectionLost")
    /// No pooled connection became free, or could be opened, within the wait.
    static let connectionWait = Self("connectionWait")
    /// A transaction failed, after its retries: the server's error, or a defect.
    static let failed = Self("failed")
}

/// PostgresNIO's errors in words, without the query's bound values (which may hold postbacks)
/// and without the connection's password.
func describePostgresError(_ error: any Error) -> String {
    if let error = error as? PostgresStoreError { return error.detail }
    guard let error = error as? PSQLError else { return "\(error)" }
    if let info = error.serverInfo {
        let message = info[.message] ?? "the server refused"
        let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
        let detail = info[.detail].map { ": \($0)" } ?? ""
        return message + detail + state
    }
    if let underlying = error.underlying, let reason = connectionFailure(underlying) {
        return reason
    }
    switch error.code {
    case .connectionError:
        return error.underlying.map { "connection failed: \($0)" } ?? "connection failed"
    case .serverClosedConnection:
        return "the server closed the connection"
    case .uncleanShutdown:
        return "the connection was cut"
    case .sslUnsupported:
        return "the server does not support TLS"
    case .poolClosed:
        return "the connection pool is closed"
    default:
        return "\(error.code)"
    }
}

/// Why a connection could not be made, in words (`connection refused`, `no answer within
/// 10 s`, `the host name does not resolve`), or nil for an error that is not about connecting.
func connectionFailure(_ error: any Error) -> String? {
    if let error = error as? NIOConnectionError {
        if let failure = error.connectionErrors.first { return connectionFailure(failure.error) ?? "\(failure.error)" }
        if error.dnsAError != nil || error.dnsAAAAError != nil { return "the host name \(error.host) does not resolve" }
        return nil
    }
    if let error = error as? IOError {
        return String(cString: strerror(error.errnoCode)).lowercased()
    }
    if let error = error as? ChannelError, case .connectTimeout(let timeout) = error {
        return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
    }
    return nil
}

/// Whether a retry of the whole transaction can succeed: a deadlock or serialization failure,
/// a server shutting down, restarting or starting, or a lost connection; or a foreign key
/// violation, which postbackd's own statements meet only when `prune` removed a postback
/// between a transaction's read of it and its record of a copy of it (the retry finds its key
/// in `pruned_keys`; a violation for any other reason fails again, until the retry's bound).
func isRetryable(_ error: any Error) -> Bool {
    if let error = error as? PostgresStoreError { return error.code == .connectionLost }
    if error is PostgresServerSearchError { return true }
    // The pool gave up opening connections for a while (its circuit breaker, after 60 s of
    // failures): it tries again, and a multi-host store searches for the server meanwhile.
    if let error = error as? ConnectionPoolError { return error == .connectionCreationCircuitBreakerTripped }
    guard let error = error as? PSQLError else { return false }
    if let state = error.serverInfo?[.sqlState] {
        return state == "40P01" || state == "40001" || state.hasPrefix("57P") || state.hasPrefix("08")
            || state == "53300" || state == "23503"
    }
    switch error.code {
    case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection: return true
    default: return false
    }
}

/// Whether the server refused a write because its sessions are read-only (a standby, or a
/// primary that became one).
func isReadOnly(_ error: any Error) -> Bool {
    if let error = error as? PostgresStoreError { return error.sqlState == "25006" }
    return (error as? PSQLError)?.serverInfo?[.sqlState] == "25006"
}

import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// The servers of a `--db` URL and the connection pool to the one in use: the server a
/// multi-host URL's `target_session_attrs` picks (for a writer, the one that accepts writes),
/// found again when it fails over.
///
/// One pool (PostgresNIO's `PostgresClient`) at a time is ``current``. A transaction that loses
/// its connection, waits too long for one, or is told the session is read-only calls
/// ``refind(after:)``: the URL's servers are tried in order (each within the connect timeout)
/// and, when another server matches now, a pool to it becomes current and the old one is
/// closed after a grace period (its transactions under way fail and are retried on the new
/// one). Concurrent callers share one search, and a search is not repeated within
/// ``searchInterval``.
///
/// Also watches the transactions under way (``watch(_:on:until:)``): one whose deadline passes
/// has its connection closed, and so has one whose server stops answering a probe while the
/// transaction runs. That bounds a statement on a half-open connection (a partition, a host
/// that died without closing its sockets), which no TCP timeout of PostgresNIO's pool would.
final class PostgresServers: Sendable {
    /// A pool to one server.
    struct Pool: Sendable {
        let client: PostgresClient
        let server: PostgresURL.Server
        /// Counts the pools this store made: a failure on an older pool does not search again.
        let generation: Int
    }

    let url: PostgresURL
    /// The sessions this store needs: `read-write` for a writer whatever the URL says (unless
    /// it asks `primary`), the URL's `target_session_attrs` (default `any`) for a reader.
    let wanted: PostgresURL.SessionAttributes
    let connectTimeout: Duration
    private let logger: Logger
    private let tls: (connection: PostgresConnection.Configuration.TLS, client: PostgresClient.Configuration.TLS)
    private let state: Mutex<State>
    private let pools: AsyncStream<(PostgresClient, AsyncStream<Void>)>.Continuation
    private let poolsToRun: AsyncStream<(PostgresClient, AsyncStream<Void>)>

    /// The shortest time between two searches for the server.
    static let searchInterval: Duration = .milliseconds(500)
    /// How long a replaced pool keeps running, for its transactions under way to finish.
    static let retireGrace: Duration = .seconds(10)
    /// How long a transaction runs before its server is probed, and between probes.
    static let probeInterval: Duration = .seconds(10)
    /// A multi-host store's longest wait for a pooled connection before it checks that the
    /// server it waits for still is the one to use.
    static let leaseCheckSeconds: Int64 = 3

    private struct State {
        var current: Pool
        var retire: AsyncStream<Void>.Continuation
        var search: Task<Pool, any Error>?
        var lastSearch: (at: ContinuousClock.Instant, failure: (any Error)?)?
        var watched: [Int: Watched] = [:]
        var nextWatch = 0
        var probing: Set<PostgresURL.Server> = []
        /// When each server was last probed, and how many probes in a row it failed.
        var probed: [PostgresURL.Server: (at: ContinuousClock.Instant, failures: Int)] = [:]
    }

    private struct Watched {
        let connection: PostgresConnection
        let server: PostgresURL.Server
        let started: ContinuousClock.Instant
        let deadline: ContinuousClock.Instant?
    }

    /// Whether the URL names more than one server: only then can the server in use change.
    var multiHost: Bool { url.servers.count > 1 }

    init(
        url: PostgresURL,
        wanted: PostgresURL.SessionAttributes,
        first: PostgresURL.Server,
        tls: (connection: PostgresConnection.Configuration.TLS, client: PostgresClient.Configuration.TLS),
        logger: Logger
    ) {
        self.url = url
        self.wanted = wanted
        self.connectTimeout = url.connectWait
        self.logger = logger
        self.tls = tls
        (poolsToRun, pools) = AsyncStream.makeStream()
        let (retired, retire) = AsyncStream<Void>.makeStream()
        let client = Self.client(
            url: url,
            server: first,
            tls: tls.client,
            connectTimeout: connectTimeout,
            logger: logger
        )
        state = Mutex(State(current: Pool(client: client, server: first, generation: 1), retire: retire))
        pools.yield((client, retired))
    }

    /// The pool in use.
    var current: Pool { state.withLock { $0.current } }

    // MARK: - Running the pools

    /// Runs every pool this store makes, until the calling task is cancelled: each pool until
    /// it is retired and its grace is over.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await (client, retired) in poolsToRun {
                group.addTask {
                    await withTaskGroup(of: Void.self) { pool in
                        pool.addTask { await client.run() }
                        pool.addTask {
                            for await _ in retired {}
                            try? await Task.sleep(for: Self.retireGrace)
                        }
                        _ = await pool.next()
                        pool.cancelAll()
                    }
                }
            }
        }
    }

    /// Watches the transactions under way, each second, until the calling task is cancelled:
    /// closes the connection of one past its deadline, and probes (at most once a
    /// ``probeInterval``) the server of those that have run a probe interval.
    func watch() async {
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            let now = ContinuousClock.now
            let (overdue, toProbe) = state.withLock { state -> (Int, [PostgresURL.Server]) in
                var overdue = 0
                var servers: Set<PostgresURL.Server> = []
                for (key, entry) in state.watched {
                    if let deadline = entry.deadline, now >= deadline {
                        // Closed under the lock: once its entry is gone the connection may be
                        // lent to another transaction.
                        close(entry.connection)
                        state.watched[key] = nil
                        overdue += 1
                    } else if now - entry.started >= Self.probeInterval, !state.probing.contains(entry.server),
                        state.probed[entry.server].map({ now - $0.at >= Self.probeInterval }) ?? true
                    {
                        servers.insert(entry.server)
                    }
                }
                state.probing.formUnion(servers)
                return (overdue, Array(servers))
            }
            if overdue > 0 {
                logger.warning(
                    "transactions passed their deadline; closed their connections",
                    metadata: ["store.transactions": "\(overdue)"]
                )
            }
            for server in toProbe {
                Task { await self.probe(server) }
            }
        }
    }

    /// Probes `server` with a connection of its own (connecting and `SELECT 1`, within the
    /// connect timeout and a second). Any answer of the server's, an error too (too many
    /// connections, shutting down), is an answer. After two probes in a row without one, the
    /// connections of the transactions on it that have run a probe interval are closed.
    private func probe(_ server: PostgresURL.Server) async {
        let started = ContinuousClock.now
        let limit = connectTimeout + .seconds(1)
        var answered = true
        do {
            let connection = try await PostgresConnection.connect(
                configuration: connectionConfiguration(server),
                id: 0,
                logger: logger
            )
            do {
                try await Self.closing(connection, after: limit - (ContinuousClock.now - started)) {
                    _ = try await connection.query("SELECT 1", logger: self.logger).collect()
                }
            } catch {
                // Awaited: PostgresNIO asserts that a connection is closed before it goes.
                try? await connection.close()
                throw error
            }
            try? await connection.close()
        } catch let error as PSQLError where error.serverInfo != nil {
            answered = true
        } catch {
            answered = false
        }
        let (stuck, failures) = state.withLock { state -> (Int, Int) in
            state.probing.remove(server)
            let failures = answered ? 0 : (state.probed[server]?.failures ?? 0) + 1
            state.probed[server] = (started, failures)
            guard failures >= 2 else { return (0, failures) }
            var stuck = 0
            for (key, entry) in state.watched
            where entry.server == server && started - entry.started >= Self.probeInterval {
                close(entry.connection)
                state.watched[key] = nil
                stuck += 1
            }
            return (stuck, failures)
        }
        if stuck > 0 {
            logger.warning(
                "the server does not answer; closed the connections of the transactions waiting for it",
                metadata: [
                    "store.server": "\(server)", "store.transactions": "\(stuck)", "store.probes_failed": "\(failures)",
                ]
            )
        }
    }

    /// Runs `body`, a statement on `connection`, and closes the connection (which fails the
    /// statement) when it has not finished within `limit`: PostgresNIO's queries do not end on
    /// a task's cancellation.
    static func closing<Result: Sendable>(
        _ connection: PostgresConnection,
        after limit: Duration,
        _ body: @Sendable () async throws -> Result
    ) async throws -> Result {
        let timer = Task {
            try await Task.sleep(for: max(limit, .milliseconds(1)))
            close(connection)
        }
        defer { timer.cancel() }
        return try await body()
    }

    /// Runs `body` while ``watch()`` watches `connection` (a connection of `pool`): closed at
    /// `deadline`, or when its server stops answering.
    func watching<Result>(
        _ connection: PostgresConnection,
        on pool: Pool,
        until deadline: ContinuousClock.Instant?,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let key = state.withLock { state in
            state.nextWatch += 1
            state.watched[state.nextWatch] = Watched(
                connection: connection,
                server: pool.server,
                started: .now,
                deadline: deadline
            )
            return state.nextWatch
        }
        defer { _ = state.withLock { $0.watched.removeValue(forKey: key) } }
        return try await body()
    }

    // MARK: - Finding the server

    /// After a failure on `generation`'s pool: searches the URL's servers for the one to use
    /// (one search for all callers, at most one each ``searchInterval``), makes a pool to it
    /// when it is not the current one's server, and returns the pool in use.
    ///
    /// - Throws: the search's error when no server matches (each server's answer in words).
    ///
    /// - Parameter deadline: the caller stops waiting for the search then (the search goes on).
    @discardableResult
    func refind(after generation: Int, until deadline: ContinuousClock.Instant? = nil) async throws -> Pool {
        enum Step {
            case use(Pool)
            case wait(Task<Pool, any Error>)
            case fail(any Error)
        }
        let step = state.withLock { state -> Step in
            if state.current.generation != generation { return .use(state.current) }
            if let search = state.search { return .wait(search) }
            if let last = state.lastSearch, ContinuousClock.now - last.at < Self.searchInterval {
                return last.failure.map { .fail($0) } ?? .use(state.current)
            }
            let task = Task { try await self.search() }
            state.search = task
            return .wait(task)
        }
        switch step {
        case .use(let pool): return pool
        case .fail(let error): throw error
        case .wait(let task):
            guard let deadline else { return try await task.value }
            return try await withThrowingTaskGroup(of: Pool.self) { group in
                group.addTask { try await task.value }
                group.addTask {
                    try await Task.sleep(until: deadline)
                    throw PostgresStoreError.noConnection(within: PostgresStore.answerSeconds)
                }
                defer { group.cancelAll() }
                guard let pool = try await group.next() else { throw CancellationError() }
                return pool
            }
        }
    }

    private func search() async throws -> Pool {
        do {
            let (server, connection) = try await Self.find(
                url,
                wanted: wanted,
                configuration: connectionConfiguration,
                logger: logger
            )
            try? await connection.close()
            return state.withLock { state in
                state.search = nil
                state.lastSearch = (.now, nil)
                if server == state.current.server { return state.current }
                let old = state.current
                let client = Self.client(
                    url: url,
                    server: server,
                    tls: tls.client,
                    connectTimeout: connectTimeout,
                    logger: logger
                )
                let (retired, retire) = AsyncStream<Void>.makeStream()
                state.retire.finish()
                state.retire = retire
                state.current = Pool(client: client, server: server, generation: old.generation + 1)
                pools.yield((client, retired))
                logger.warning(
                    "the database's server changed",
                    metadata: [
                        "store.from": "\(old.server)", "store.to": "\(server)", "store.wanted": "\(wanted.rawValue)",
                    ]
                )
                return state.current
            }
        } catch {
            state.withLock { state in
                state.search = nil
                state.lastSearch = (.now, error)
            }
            throw error
        }
    }

    /// Tries `url`'s servers in order and returns the first whose session is `wanted`, with
    /// the connection that asked (for `prefer-standby`: the first standby, else the first
    /// server that answered).
    ///
    /// - Throws: ``PostgresServerSearchError`` saying what each server answered, or the only
    ///   server's connection error when the URL names one.
    static func find(
        _ url: PostgresURL,
        wanted: PostgresURL.SessionAttributes,
        configuration: (PostgresURL.Server) -> PostgresConnection.Configuration,
        logger: Logger
    ) async throws -> (PostgresURL.Server, PostgresConnection) {
        var answers: [String] = []
        var fallback: (PostgresURL.Server, PostgresConnection)?
        var lastError: (any Error)?
        for server in url.servers {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(
                    configuration: configuration(server),
                    id: 0,
                    logger: logger
                )
            } catch {
                lastError = error
                answers.append("\(server) \(describePostgresError(error))")
                continue
            }
            if wanted == .any {
                if let fallback { try? await fallback.1.close() }
                return (server, connection)
            }
            let session: (recovery: Bool, readOnly: Bool)
            do {
                session = try await closing(connection, after: url.connectWait) {
                    let rows = try await connection.query(
                        "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'",
                        logger: logger
                    )
                    for try await (recovery, readOnly) in rows.decode((Bool, Bool).self) {
                        return (recovery, readOnly)
                    }
                    return (false, false)
                }
            } catch {
                try? await connection.close()
                lastError = error
                answers.append("\(server) \(describePostgresError(error))")
                continue
            }
            let matches: Bool
            switch wanted {
            case .any: matches = true
            case .readWrite: matches = !session.readOnly
            case .readOnly: matches = session.readOnly
            case .primary: matches = !session.recovery
            case .standby, .preferStandby: matches = session.recovery
            }
            if matches {
                if let fallback { try? await fallback.1.close() }
                return (server, connection)
            }
            if wanted == .preferStandby, fallback == nil {
                fallback = (server, connection)
            } else {
                try? await connection.close()
            }
            answers.append(
                "\(server) is "
                    + (session.recovery ? "a standby (in recovery)" : session.readOnly ? "read-only" : "a primary")
            )
        }
        if let fallback { return fallback }
        if url.servers.count == 1, let lastError, !(lastError is PostgresServerSearchError) { throw lastError }
        throw PostgresServerSearchError(url: url, wanted: wanted, answers: answers)
    }

    // MARK: - Configurations

    func connectionConfiguration(_ server: PostgresURL.Server) -> PostgresConnection.Configuration {
        Self.connectionConfiguration(url, server, tls: tls.connection)
    }

    /// A connection of its own to `server` of `url`.
    static func connectionConfiguration(
        _ url: PostgresURL,
        _ server: PostgresURL.Server,
        tls: PostgresConnection.Configuration.TLS
    ) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: server.host,
            port: server.port,
            username: url.user,
            password: url.password,
            database: url.database,
            tls: tls
        )
        configuration.options.connectTimeout = .init(url.connectWait)
        configuration.options.additionalStartupParameters = url.keepalives ? startupParameters : []
        return configuration
    }

    /// Sent with every session (unless the URL says `keepalives=0`): the server closes an idle
    /// connection whose client stopped answering (a partition, a dead host) after 15 s + 3 × 5 s
    /// of silence, so that a transaction left open there does not hold its locks for hours.
    static let startupParameters = [
        ("tcp_keepalives_idle", "15"), ("tcp_keepalives_interval", "5"), ("tcp_keepalives_count", "3"),
    ]

    private static func client(
        url: PostgresURL,
        server: PostgresURL.Server,
        tls: PostgresClient.Configuration.TLS,
        connectTimeout: Duration,
        logger: Logger
    ) -> PostgresClient {
        var configuration = PostgresClient.Configuration(
            host: server.host,
            port: server.port,
            username: url.user,
            password: url.password,
            database: url.database,
            tls: tls
        )
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = 8
        configuration.options.additionalStartupParameters = url.keepalives ? startupParameters : []
        // No keep-alive query on idle connections: on a half-open connection it would hang,
        // unwatched, holding the pool's place. An idle connection that went stale fails on its
        // next use, and that transaction is retried on a new one.
        configuration.options.keepAliveBehavior = nil
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }
}

/// No server of a multi-host URL offers the session wanted: what each one answered.
struct PostgresServerSearchError: Error, CustomStringConvertible {
    let url: PostgresURL
    let wanted: PostgresURL.SessionAttributes
    let answers: [String]

    var description: String {
        "no server offers a \(wanted.rawValue) session (" + answers.joined(separator: "; ") + ")"
    }
}

/// Closes `connection` at once (its socket, without a goodbye to the server): what waits on
/// it fails.
func close(_ connection: PostgresConnection) {
    let closed: EventLoopFuture<Void> = connection.close()
    _ = closed
}

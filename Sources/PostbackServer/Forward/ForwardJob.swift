import AsyncHTTPClient
import Logging
import NIOCore
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd forward`: pushes stored postbacks (raw, decoded as `export` writes them, or in a
/// partner's format: ``ForwardBody``) to the destinations of a config, one POST per postback, with durable per-delivery state so
/// that nothing is lost and nothing is sent again after success, across kills and restarts.
package struct ForwardJob: Sendable {
    package enum Mode: Sendable {
        /// Until SIGTERM or SIGINT (then the requests in flight finish), picking up newly
        /// stored postbacks within a second.
        case follow
        /// Until nothing is pending: everything delivered, rejected or failed.
        case drain
    }

    package var location: StoreLocation
    package var config: ForwardConfig
    package var policy: RevenueEstimatePolicy
    package var logger: Logger
    /// HMAC secrets by destination name, read from the environment.
    let secrets: [String: [UInt8]]
    /// A secret missing from the environment: delivering is refused, `status` is not.
    let missingSecret: PostbackServerError?

    /// Reads each destination's HMAC secret from `environment`.
    ///
    /// A variable unset or empty makes ``run(_:)`` throw ``PostbackServerError`` naming the
    /// destination and the variable (never a value).
    package init(
        location: StoreLocation,
        config: ForwardConfig,
        environment: [String: String],
        policy: RevenueEstimatePolicy = .midpoint,
        logger: Logger = Logger(label: "postbackd.forward")
    ) {
        self.location = location
        self.config = config
        self.policy = policy
        self.logger = logger
        var secrets: [String: [UInt8]] = [:]
        var missing: PostbackServerError?
        for destination in config.destinations {
            guard let variable = destination.hmacSecretEnvironment else { continue }
            guard let secret = environment[variable], !secret.isEmpty else {
                missing =
                    missing
                    ?? PostbackServerError(
                        .missingSecret,
                        "destination \(destination.name): the environment variable \(variable) (hmac_secret_env) is not set; set it to the HMAC secret"
                    )
                continue
            }
            secrets[destination.name] = Array(secret.utf8)
        }
        self.secrets = secrets
        missingSecret = missing
    }

    /// Delivers until drained or until SIGTERM or SIGINT, and returns what this run did and
    /// the status after it.
    package func run(_ mode: Mode) async throws -> ForwardSummary {
        if let missingSecret { throw missingSecret }
        // The store outside the service group: its pool must outlive the service's graceful
        // shutdown, which records the outcomes of the requests in flight.
        return try await PostbackStores.with(location, logger: logger) { store in
            let service = ForwarderService(
                job: self,
                store: store,
                mode: mode == .follow ? .follow : .drain,
                metrics: nil
            )
            var configuration = ServiceGroupConfiguration(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            configuration.maximumGracefulShutdownDuration = .seconds(
                Int64(config.destinations.map(\.timeoutSeconds).max() ?? 10) + 30
            )
            try await ServiceGroup(configuration: configuration).run()
            return ForwardSummary(
                attempts: service.summary,
                status: try await store.deliveryStatus(destinations: config.destinations.map(\.name))
            )
        }
    }

    /// Discovers what is new, then reads each destination's deliveries by state.
    package func status() async throws -> [DeliveryStatus] {
        try await PostbackStores.with(location, logger: logger) { store in
            _ = try await store.discoverAllDeliveries(
                Self.routes(config.destinations),
                nowMs: UTCInstant.now().milliseconds
            )
            return try await store.deliveryStatus(destinations: config.destinations.map(\.name))
        }
    }

    /// What the store selects for each destination.
    static func routes(_ destinations: [ForwardConfig.Destination]) -> [DeliveryRoute] {
        destinations.map { destination in
            let filter = destination.filter
            return DeliveryRoute(
                destination: destination.name,
                appIDs: filter.appIDs.map { $0.sorted() },
                adNetworkIDs: filter.adNetworkIDs.map { $0.sorted() },
                kinds: filter.kinds.map { $0.sorted() },
                keySpaces: filter.keySpaces.sorted()
            )
        }
    }

    /// A lease holder unique to this process and run.
    static func holder() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return "\(host):\(getpid()):\(hexString((0..<8).map { _ in UInt8.random(in: 0...255) }))"
    }
}

/// `forward` as a service: its own store connection (not the serve writer's, opened outside
/// the service group), the ledger task, the forwarder, and graceful shutdown (stop claiming,
/// finish the requests in flight, record their outcomes).
final class ForwarderService: Service, Sendable {
    let job: ForwardJob
    let store: any DeliveryQueue
    let mode: Forwarder.Mode
    let metrics: (any ForwardMetrics)?
    private let result = Mutex<[String: ForwardSummary.Counts]>([:])

    init(job: ForwardJob, store: any DeliveryQueue, mode: Forwarder.Mode, metrics: (any ForwardMetrics)?) {
        self.job = job
        self.store = store
        self.mode = mode
        self.metrics = metrics
    }

    var summary: [String: ForwardSummary.Counts] { result.withLock { $0 } }

    func run() async throws {
        let job = self.job
        let logger = job.logger
        let clients = job.config.destinations.map { destination in
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(
                    connect: .milliseconds(Int64(min(destination.timeoutSeconds, 10) * 1000)),
                    read: .milliseconds(Int64(destination.timeoutSeconds * 1000))
                ),
                connectionPool: .init(
                    idleTimeout: .seconds(60),
                    concurrentHTTP1ConnectionsPerHostSoftLimit: destination.concurrency
                )
            )
            configuration.maximumUsesPerConnection = nil
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }
        let ledger = DeliveryLedger(holder: ForwardJob.holder(), logger: logger)
        let forwarder = Forwarder(
            destinations: zip(job.config.destinations, clients).map { destination, client in
                Forwarder.Destination(config: destination, secret: job.secrets[destination.name], client: client)
            },
            ledger: ledger,
            mode: mode,
            policy: job.policy,
            metrics: metrics,
            logger: logger
        )
        do {
            try await deliver(forwarder, ledger)
        } catch {
            for client in clients { try? await client.shutdown() }
            throw error
        }
        for client in clients { try? await client.shutdown() }
        result.withLock { $0 = forwarder.summary }
    }

    private func deliver(_ forwarder: Forwarder, _ ledger: DeliveryLedger) async throws {
        let store = self.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { ledger.close() }
                try await withGracefulShutdownHandler {
                    try await forwarder.run()
                } onGracefulShutdown: {
                    forwarder.stop()
                }
            }
            // The ledger is the store's one user here. SQLite's calls block their thread, so
            // they run on a thread of their own.
            await NamedThreads.run(on: NamedThreads(name: "pbd-forward")) {
                await ledger.run(store: store)
            }
            try await group.waitForAll()
        }
    }
}

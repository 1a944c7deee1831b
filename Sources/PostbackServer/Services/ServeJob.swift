import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// `postbackd serve`: receives postbacks over HTTP at Apple's report-attribution endpoints and
/// stores each exactly as `ingest` would (same parsing, verification, dedup and quarantine),
/// answering a device only once its postback's outcome is durable.
///
/// Built from three parts: Hummingbird's HTTP/1.1 server (with TLS through swift-nio-ssl when
/// given a certificate), ``PostbackResponder`` for the routes, and ``GroupCommitter``, the one
/// writer that commits what requests hand it in shared transactions. swift-service-lifecycle
/// runs both and shuts them down in order on SIGTERM or SIGINT: the server stops accepting and
/// finishes its requests, then the writer commits what is left.
package struct ServeJob: Sendable {
    package var location: StoreLocation
    /// `--read-db`: where the reading routes (report API, summary, dashboard, pull API) read,
    /// such as a standby of `location`'s PostgreSQL; nil reads `location`. Keys are read, and
    /// their use recorded, on `location` whatever this is.
    package var readLocation: StoreLocation?
    package var keyRing: KeyRing
    package var host: String
    package var port: Int
    /// `--tls-cert` and `--tls-key`: PEM files.
    package var tls: (certificate: String, key: String)?
    package var maximumBody: Int
    package var accessLog: Bool
    /// How long a client may take over a request's head (and may stay idle between requests),
    /// and over its body.
    package var readTimeout: Duration
    package var maximumConnections: Int
    package var quarantineRowsPerHour: Int
    /// A header a trusted proxy sets to the client's address (`X-Forwarded-For`).
    package var clientAddressHeader: String?
    /// `--client-address`: what is stored and logged of the client's address.
    package var clientAddressPolicy: ClientAddressPolicy
    /// Postbacks written per transaction, at most.
    var maximumGroup: Int
    /// `--api-key`: keys of every app for the conversion value and Apple Ads token routes
    /// (never logged), beside the store's (``KeyDirectory``).
    package var apiKeys: [String]
    /// `--forward`: delivers as `forward --follow` does, beside serving, on a store
    /// connection of its own; its status is in `/metrics`.
    package var forward: ForwardJob?
    /// `--apple-ads`: exchanges the tokens received at `POST /v1/apple-ads/token` (and any
    /// other pending ones) as `apple-ads fetch --follow` does, on a store connection of its own.
    package var appleAds: AppleAdsFetchJob?
    /// `--dashboard-token`: a key of every app for the report API and the dashboard, as a
    /// bearer token or through the login form's cookie (never logged), beside the store's.
    package var dashboardToken: String?
    package var logger: Logger
    /// Whether the hot routes are answered below the router (ServeHTTP1Channel.swift); only the
    /// tests that compare both paths turn it off.
    package var hotPath = true
    /// How long the wrong-key limit's window lasts (``FailureLimiter``): a minute. Only the
    /// test of the limit lengthens it (`serve`'s hidden `--key-failure-window`), so that a
    /// slow machine cannot let the window pass between its ten wrong keys.
    package var keyFailureWindow: Duration = .seconds(60)

    package static let defaultMaximumBody = 65_536
    package static let defaultMaximumConnections = 1_024
    package static let defaultQuarantineRowsPerHour = 10_000

    package init(
        location: StoreLocation,
        readLocation: StoreLocation? = nil,
        keyRing: KeyRing = .apple,
        host: String = "127.0.0.1",
        port: Int = 8080,
        tls: (certificate: String, key: String)? = nil,
        maximumBody: Int = ServeJob.defaultMaximumBody,
        accessLog: Bool = false,
        readTimeout: Duration = .seconds(10),
        maximumConnections: Int = ServeJob.defaultMaximumConnections,
        quarantineRowsPerHour: Int = ServeJob.defaultQuarantineRowsPerHour,
        clientAddressHeader: String? = nil,
        clientAddressPolicy: ClientAddressPolicy = .keep,
        maximumGroup: Int = 1_024,
        apiKeys: [String] = [],
        forward: ForwardJob? = nil,
        appleAds: AppleAdsFetchJob? = nil,
        dashboardToken: String? = nil,
        logger: Logger = Logger(label: "postbackd.serve")
    ) {
        self.dashboardToken = dashboardToken
        self.appleAds = appleAds
        self.apiKeys = apiKeys
        self.forward = forward
        self.location = location
        self.readLocation = readLocation
        self.keyRing = keyRing
        self.host = host
        self.port = port
        self.tls = tls
        self.maximumBody = maximumBody
        self.accessLog = accessLog
        self.readTimeout = readTimeout
        self.maximumConnections = maximumConnections
        self.quarantineRowsPerHour = quarantineRowsPerHour
        self.clientAddressHeader = clientAddressHeader
        self.clientAddressPolicy = clientAddressPolicy
        self.maximumGroup = maximumGroup
        self.logger = logger
    }

    /// Serves until SIGTERM or SIGINT, then returns what it stored. `ready` gets the line to
    /// print once the server listens (`listening on http://127.0.0.1:8080`).
    ///
    /// - Throws: ``PostbackServerError`` (a certificate that cannot be read, an address that cannot be
    ///   listened on) and ``DatabaseOpenError`` before anything is received.
    package func run(ready: @escaping @Sendable (String) -> Void) async throws -> IngestSummary {
        if let missing = forward?.missingSecret { throw missing }
        let tlsConfiguration = try tls.map { try Self.serverTLS(certificate: $0.certificate, key: $0.key) }
        let scheme = tls == nil ? "http" : "https"
        // Every store is opened here, outside the service group: a PostgreSQL pool must outlive
        // the graceful shutdown of the services that use it.
        return try await PostbackStores.with(location, access: .receive, logger: logger) { store in
            // The keys' store and the reading routes' (unless --read-db gives those one of
            // their own), and forward's and the exchange's, beside the writer's.
            try await PostbackStores.with(location, logger: logger) { readerStore in
                try await Self.withStore(at: readLocation, access: .readOnly, logger: logger) { readStore in
                    try await Self.withStore(at: forward?.location, logger: logger) { forwardStore in
                        try await Self.withStore(at: appleAds?.location, logger: logger) { appleAdsStore in
                            let keysReader = ReportReader(readerStore)
                            return try await serve(
                                store,
                                reader: readStore.map { ReportReader($0) } ?? keysReader,
                                keysReader: keysReader,
                                forwardStore: forwardStore,
                                appleAdsStore: appleAdsStore,
                                scheme: scheme,
                                tls: tlsConfiguration,
                                ready: ready
                            )
                        }
                    }
                }
            }
        }
    }

    /// Runs `body` with a store of its own at `location`, or with nil when there is none.
    private static func withStore<Result>(
        at location: StoreLocation?,
        access: StoreAccess = .standard,
        logger: Logger,
        _ body: ((any StoreEngine)?) async throws -> Result
    ) async throws -> Result {
        guard let location else { return try await body(nil) }
        return try await PostbackStores.with(location, access: access, logger: logger) { store in
            try await body(store)
        }
    }

    private func serve(
        _ store: any PostbackStorage,
        reader: ReportReader,
        keysReader: ReportReader,
        forwardStore: (any DeliveryQueue)?,
        appleAdsStore: (any AppleAdsTokenQueue)?,
        scheme: String,
        tls tlsConfiguration: TLSConfiguration?,
        ready: @escaping @Sendable (String) -> Void
    ) async throws -> IngestSummary {
        let runID = try await store.beginRun(
            inputs: ["\(scheme)://\(host):\(port)"],
            receivedAtOption: nil,
            startedAt: .now()
        )
        let metrics = ServerMetrics()
        metrics.apps(registered: Set(try await store.apps().map(\.appID)))
        if case .certificate(let leaf)? = tlsConfiguration?.certificateChain.first {
            metrics.servingCertificate(expiresAt: Int64(leaf.notValidAfter))
        }
        let models = ModelDirectory()
        models.replace(with: try await store.models(), at: .now())
        let keys = KeyDirectory(dashboardToken: dashboardToken, apiKeys: apiKeys)
        keys.replace(with: try await store.accessKeys())
        let committer = GroupCommitter(
            maximumGroup: maximumGroup,
            quarantineRowsPerHour: quarantineRowsPerHour,
            metrics: metrics,
            models: models,
            logger: logger
        )
        let writer = CommitterService(
            committer: committer,
            store: store,
            runID: runID,
            executor: DedicatedThreadExecutor(name: "pbd-commit")
        )
        let responder = PostbackResponder(
            verifiers: VerifierPool(keyRing: keyRing),
            committer: committer,
            metrics: metrics,
            keys: keys,
            limiter: FailureLimiter(windowMs: keyFailureWindow.milliseconds),
            maximumBody: maximumBody,
            clientAddressHeader: clientAddressHeader.flatMap { HTTPField.Name($0) },
            clientAddressPolicy: clientAddressPolicy,
            accessLog: accessLog,
            reader: reader,
            secureCookie: tls != nil,
            logger: logger
        )
        let readTimeout = TimeAmount.seconds(self.readTimeout.components.seconds)
        // The hot routes are answered below the router (ServeHTTP1Channel.swift says why).
        let http1 = HTTPServerBuilder { router in
            ServeHTTP1Channel(responder: router, routes: responder, readTimeout: readTimeout, hotPath: hotPath)
        }
        let host = self.host
        let listening = Mutex<String?>(nil)
        let cap = ConnectionCap(maximum: maximumConnections, count: ConnectionCap.Count(metrics: metrics))
        let app = Application(
            responder: responder,
            server: try tlsConfiguration.map { try .tls(http1, tlsConfiguration: $0) } ?? http1,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port),
                serverName: nil,
                availableConnectionsDelegate: cap
            ),
            onServerRunning: { channel in
                // Accept a burst of connections in a few turns, within the cap.
                do {
                    try await cap.pace(channel)
                } catch {
                    logger.warning("connections are accepted 4 a turn: \(error)")
                }
                let port = channel.localAddress?.port ?? 0
                let line = "listening on \(scheme)://\(host):\(port)"
                listening.withLock { $0 = line }
                ready(line)
            },
            logger: logger
        )
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: writer),
            .init(service: KeyReloadService(keys: keys, reader: keysReader, committer: committer, logger: logger)),
            .init(service: MetricsRefreshService(metrics: metrics, reader: keysReader, logger: logger)),
        ]
        if let forward, let forwardStore {
            services.append(
                .init(service: ForwarderService(job: forward, store: forwardStore, mode: .follow, metrics: metrics))
            )
        }
        if let appleAds, let appleAdsStore {
            services.append(.init(service: AppleAdsFetchService(job: appleAds, store: appleAdsStore, mode: .follow)))
        }
        services.append(.init(service: app))
        var configuration = ServiceGroupConfiguration(
            // Shut down in reverse order: the server first (it stops accepting and finishes
            // its requests, which wait for commits), then the forwarder (it finishes its
            // requests in flight), then the writer.
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        let forwardTimeout = Duration.seconds(Int64(forward?.config.destinations.map(\.timeoutSeconds).max() ?? 0))
        configuration.maximumGracefulShutdownDuration =
            self.readTimeout + .seconds(20) + forwardTimeout + (appleAds?.timeout ?? .zero)
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch {
            let summary = writer.summary
            try? await store.finishRun(runID, summary: summary, status: "failed", finishedAt: .now())
            if listening.withLock({ $0 }) == nil {
                throw PostbackServerError(
                    .cannotListen,
                    "cannot listen on \(host):\(port): \(error); choose another --host or --port"
                )
            }
            throw error
        }
        let summary = writer.summary
        try await store.finishRun(runID, summary: summary, status: "completed", finishedAt: .now())
        logger.info(
            "serve stopped",
            metadata: ["serve.received": "\(summary.read)", "serve.stored": "\(summary.accepted)"]
        )
        return summary
    }

    static func serverTLS(certificate: String, key: String) throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw PostbackServerError(
                .certificateUnreadable,
                "cannot read the certificate chain in \(certificate) (--tls-cert): \(error); give a PEM file"
            )
        }
        guard !chain.isEmpty else {
            throw PostbackServerError(
                .noCertificate,
                "\(certificate) (--tls-cert) holds no certificate; give a PEM file"
            )
        }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            throw PostbackServerError(
                .keyUnreadable,
                "cannot read the private key in \(key) (--tls-key): \(error); give an unencrypted PEM key"
            )
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(privateKey)
        )
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

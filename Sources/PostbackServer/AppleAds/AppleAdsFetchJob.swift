import AsyncHTTPClient
import Logging
import NIOCore
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// `postbackd apple-ads fetch` (and `serve --apple-ads`): exchanges pending AdServices tokens
/// with Apple's attribution API, following ``AppleAdsExchangeRules``, with at most
/// ``concurrency`` requests in flight.
///
/// Each token is leased before it is sent (until twice the timeout plus 5 s), and its outcome
/// is recorded, durably, only by the lease's holder: several processes on one database share
/// the tokens, and after a kill a token in flight is sent again once its lease ends (a
/// resolved token never is: it is deleted, its SHA-256 kept).
package struct AppleAdsFetchJob: Sendable {
    package enum Mode: Sendable, Equatable {
        /// One pass: every due token, including the three quick retries of a 404; tokens left
        /// to retry later stay pending.
        case once
        /// Until SIGTERM or SIGINT (then the requests in flight finish), picking up new tokens
        /// within a second.
        case follow
    }

    /// Apple's endpoint.
    package static let appleEndpoint = "https://api-adservices.apple.com/api/v1/"
    static let defaultTimeout: Duration = .seconds(10)
    package static let defaultConcurrency = 8
    /// The longest answer read.
    static let maximumAnswer = 65_536

    package var location: StoreLocation
    package var endpoint: String
    package var rules: AppleAdsExchangeRules
    /// A request's limit: well above the second Apple may hold one before answering 404.
    package var timeout: Duration
    package var concurrency: Int
    package var logger: Logger

    package init(
        location: StoreLocation,
        endpoint: String = AppleAdsFetchJob.appleEndpoint,
        rules: AppleAdsExchangeRules = AppleAdsExchangeRules(),
        timeout: Duration = AppleAdsFetchJob.defaultTimeout,
        concurrency: Int = AppleAdsFetchJob.defaultConcurrency,
        logger: Logger = Logger(label: "postbackd.apple-ads")
    ) {
        self.location = location
        self.endpoint = endpoint
        self.rules = rules
        self.timeout = timeout
        self.concurrency = max(1, concurrency)
        self.logger = logger
    }

    var timeoutMs: Int64 { timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000 }

    /// Exchanges tokens until the pass ends (`once`) or SIGTERM or SIGINT (`follow`), and
    /// returns what this run did.
    package func run(_ mode: Mode) async throws -> AppleAdsFetchSummary {
        // The store outside the service group: its pool must outlive the service's graceful
        // shutdown, which records the last outcomes.
        try await PostbackStores.with(location, logger: logger) { store in
            let service = AppleAdsFetchService(job: self, store: store, mode: mode)
            var configuration = ServiceGroupConfiguration(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            configuration.maximumGracefulShutdownDuration = timeout + .seconds(30)
            try await ServiceGroup(configuration: configuration).run()
            return service.summary
        }
    }
}

/// What a fetch run did.
package struct AppleAdsFetchSummary: Sendable, Hashable {
    /// Requests sent.
    package var requests = 0
    package var attributed = 0
    package var notAttributed = 0
    package var invalid = 0
    /// Closed unsent, past their 24 hours.
    package var expired = 0
    /// Requests answered 404, or not answered for good (5xx, timeouts): retried later.
    package var retrying = 0

    mutating func count(_ outcome: AppleAdsOutcome) {
        if outcome.state != .expired { requests += 1 }
        switch outcome.state {
        case .attributed: attributed += 1
        case .notAttributed: notAttributed += 1
        case .invalid: invalid += 1
        case .expired: expired += 1
        case .pending: retrying += 1
        }
    }
}

/// The exchange as a service: `fetch` runs it alone, `serve --apple-ads` beside the server,
/// each on a store connection of its own, opened outside the service group.
final class AppleAdsFetchService: Service, Sendable {
    let job: AppleAdsFetchJob
    let store: any AppleAdsTokenQueue
    let mode: AppleAdsFetchJob.Mode
    private let result = Mutex(AppleAdsFetchSummary())

    init(job: AppleAdsFetchJob, store: any AppleAdsTokenQueue, mode: AppleAdsFetchJob.Mode) {
        self.job = job
        self.store = store
        self.mode = mode
    }

    var summary: AppleAdsFetchSummary { result.withLock { $0 } }

    func run() async throws {
        let timeoutMs = job.timeoutMs
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .milliseconds(min(timeoutMs, 10_000)), read: .milliseconds(timeoutMs)),
            connectionPool: .init(
                idleTimeout: .seconds(60),
                concurrentHTTP1ConnectionsPerHostSoftLimit: job.concurrency
            )
        )
        configuration.maximumUsesPerConnection = nil
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            try await NamedThreads.run(on: NamedThreads(name: "pbd-apple-ads")) {
                try await exchange(store: store, client: client)
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
    }

    /// The loop: claim what is due (up to the free slots), send each as a child task, record
    /// each outcome as it comes; when nothing is in flight, wait for the next due token.
    ///
    /// The store stays in this task (on the writer executor: SQLite's calls block their
    /// thread); the requests run on the global executor. A store error is logged and retried
    /// after a pause: it never ends `serve --apple-ads`. An outcome that cannot be recorded is
    /// lost only as a lease: the token is sent again when the lease ends.
    private func exchange(store: any AppleAdsTokenQueue, client: HTTPClient) async throws {
        let job = self.job
        let holder = ForwardJob.holder()
        let leaseMs = 2 * job.timeoutMs + 5_000
        let passStart = UTCInstant.now().milliseconds
        // `once`: tokens this pass saw answered 404 with quick retries left, and when they are due.
        var quickRetries: [Int64: Int64] = [:]
        try await withThrowingTaskGroup(of: AppleAdsOutcome.self) { group in
            var inFlight = 0
            while true {
                let stopping = Task.isShuttingDownGracefully || Task.isCancelled
                if !stopping && inFlight < job.concurrency {
                    let now = UTCInstant.now().milliseconds
                    let claimed: [AppleAdsClaim]
                    var claimFailed = false
                    do {
                        let claim = try await store.claimAppleAdsTokens(
                            limit: job.concurrency - inFlight,
                            nowMs: now,
                            // One pass ends: only what was due when it began, and quick retries.
                            dueByMs: mode == .once ? passStart : now,
                            leaseUntilMs: now + leaseMs,
                            holder: holder
                        )
                        claimed = claim.claimed
                        if claim.expired > 0 {
                            result.withLock { $0.expired += claim.expired }
                            job.logger.info(
                                "tokens expired unsent",
                                metadata: ["apple_ads.expired": "\(claim.expired)"]
                            )
                        }
                    } catch {
                        job.logger.error(
                            "cannot claim Apple Ads tokens; trying again in 5 s",
                            metadata: ["apple_ads.error": "\(StoreFault.classify(error, at: job.location).reason)"]
                        )
                        claimed = []
                        claimFailed = true
                        if inFlight == 0 { await Self.pause(5_000) }
                        if inFlight == 0 { continue }
                    }
                    for claim in claimed {
                        inFlight += 1
                        quickRetries[claim.id] = nil
                        group.addTask(executorPreference: globalConcurrentExecutor) {
                            await Self.send(claim, job: job, client: client)
                        }
                    }
                    // A quick retry due and not claimed (another process took it, or it
                    // expired) is not this pass's any more.
                    if !claimFailed && claimed.count < job.concurrency - (inFlight - claimed.count) {
                        quickRetries = quickRetries.filter { $0.value > now }
                    }
                    if !claimed.isEmpty && inFlight < job.concurrency { continue }
                }
                if inFlight > 0 {
                    guard let outcome = try await group.next() else { break }
                    inFlight -= 1
                    do {
                        if try await store.recordAppleAdsOutcomes([outcome], holder: holder).contains(outcome.id) {
                            result.withLock { $0.count(outcome) }
                            if mode == .once, outcome.awaitsQuickRetry { quickRetries[outcome.id] = outcome.dueMs }
                        } else {
                            job.logger.warning(
                                "an exchange outlived its lease; its outcome is not recorded and the token is sent again",
                                metadata: [
                                    "apple_ads.token_id": "\(outcome.id)", "apple_ads.status": "\(outcome.lastStatus)",
                                ]
                            )
                        }
                    } catch {
                        job.logger.error(
                            "cannot record an Apple Ads exchange; the token is sent again when its lease ends",
                            metadata: [
                                "apple_ads.token_id": "\(outcome.id)",
                                "apple_ads.error": "\(StoreFault.classify(error, at: job.location).reason)",
                            ]
                        )
                    }
                    continue
                }
                if stopping { break }
                switch mode {
                case .once:
                    guard let next = quickRetries.values.min() else { return }
                    // At least 50 ms: a token due but not claimable (leased elsewhere) never
                    // makes this spin.
                    await Self.pause(max(next - UTCInstant.now().milliseconds, 50))
                case .follow:
                    // New tokens arrive at any time: look once a second, with a read; claim (a
                    // write transaction) only once a token is due or its lease has ended.
                    while !Task.isShuttingDownGracefully && !Task.isCancelled {
                        let now = UTCInstant.now().milliseconds
                        let due = (try? await store.nextAppleAdsTokenDue()) ?? nil
                        if let due, due <= now { break }
                        await Self.pause(min((due ?? .max) - now, 1_000))
                    }
                }
            }
        }
    }

    /// Sleeps, or until graceful shutdown.
    private static func pause(_ milliseconds: Int64) async {
        try? await cancelWhenGracefulShutdown {
            try await Task.sleep(for: .milliseconds(milliseconds))
        }
    }

    /// One request, and what its answer makes of the token.
    private static func send(_ claim: AppleAdsClaim, job: AppleAdsFetchJob, client: HTTPClient) async -> AppleAdsOutcome
    {
        // Never an expired token: not one that expired since its claim, nor one that could
        // expire before the request ends.
        let start = UTCInstant.now().milliseconds
        if start + job.timeoutMs >= claim.expiresAt.milliseconds { return job.rules.expired(claim, nowMs: start) }
        var request = HTTPClientRequest(url: job.endpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "text/plain")
        request.headers.add(name: "User-Agent", value: "postbackd/\(PostbackdVersion.current)")
        request.body = .bytes(ByteBuffer(string: claim.token))
        let answer: AppleAdsAnswer
        do {
            let response = try await client.execute(
                request,
                deadline: .now() + .milliseconds(job.timeoutMs),
                logger: nil
            )
            let body = try await response.body.collect(upTo: AppleAdsFetchJob.maximumAnswer)
            switch response.status.code {
            case 200:
                do {
                    answer = .record(try AppleAdsRecord.parse(Array(body.readableBytesView)))
                } catch {
                    answer = .unavailable("200 unreadable")
                    job.logger.warning(
                        "an attribution record that cannot be read; retrying later",
                        metadata: ["apple_ads.token_id": "\(claim.id)", "apple_ads.error": "\(error)"]
                    )
                }
            case 400: answer = .invalid
            case 404: answer = .notReady
            default: answer = .unavailable(String(response.status.code))
            }
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
            || error == .writeTimeout
        {
            answer = .unavailable("timeout")
        } catch is NIOTooManyBytesError {
            answer = .unavailable("answer too large")
        } catch {
            answer = .unavailable("connection error")
            job.logger.warning(
                "request failed; retrying later",
                metadata: [
                    "apple_ads.token_id": "\(claim.id)", "apple_ads.error": "\(String(describing: error).prefix(256))",
                ]
            )
        }
        let outcome = job.rules.outcome(claim, answer, nowMs: UTCInstant.now().milliseconds)
        job.logger.debug(
            "token exchanged",
            metadata: [
                "apple_ads.token_id": "\(claim.id)", "apple_ads.status": "\(outcome.lastStatus)",
                "apple_ads.state": "\(outcome.state.rawValue)",
            ]
        )
        return outcome
    }
}

import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import PostbackKit
import PostbackStore
import Synchronization

/// Delivers to every destination of a config: one loop per destination, each with its own
/// HTTP client (its own connections) and at most `concurrency` requests in flight, so a slow
/// or broken destination never delays another. The store is reached through the
/// ``DeliveryLedger``.
package final class Forwarder: Sendable {
    enum Mode: Sendable {
        /// Until stopped, picking up newly stored postbacks.
        case follow
        /// Until nothing is pending.
        case drain
    }

    struct Destination: Sendable {
        let config: ForwardConfig.Destination
        let secret: [UInt8]?
        let client: HTTPClient
        var name: String { config.name }
    }

    /// How often an idle destination looks for due deliveries, and `--follow` for new postbacks.
    static let pollInterval: Duration = .milliseconds(200)
    static let discoveryInterval: Duration = .milliseconds(500)
    /// A destination holds up to this many times its concurrency in flight and waiting in its
    /// local queue, and at most that plus ``DeliveryLedger/groupSize`` claimed and not committed
    /// (with the answers whose outcomes wait for their commit); the queue is refilled, with one
    /// claim, when fewer than its concurrency wait.
    package static let queueDepth = 4
    /// How long a claimed delivery stays leased beyond `queueDepth` times its timeout (a wait in
    /// the queue, then the request): the time to record its outcome. A process killed
    /// mid-request holds its deliveries this long after that.
    static let leaseMargin: Double = 10

    let destinations: [Destination]
    let ledger: DeliveryLedger
    let mode: Mode
    let policy: RevenueEstimatePolicy
    let metrics: (any ForwardMetrics)?
    let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let writer: Mutex<ExportWriter>
    /// The campaign mappings in force, for `enriched`, `skan-standard` and `template`; read with
    /// the models.
    private let campaigns = Mutex(CampaignMappings([]))
    private let counts: Mutex<[String: ForwardSummary.Counts]>

    init(
        destinations: [Destination],
        ledger: DeliveryLedger,
        mode: Mode,
        policy: RevenueEstimatePolicy,
        metrics: (any ForwardMetrics)?,
        logger: Logger
    ) {
        self.destinations = destinations
        self.ledger = ledger
        self.mode = mode
        self.policy = policy
        self.metrics = metrics
        self.logger = logger
        writer = Mutex(ExportWriter(options: ExportJob.Options(policy: policy), models: ConversionModels([])))
        counts = Mutex([:])
    }

    /// What this run's attempts ended with, by destination.
    var summary: [String: ForwardSummary.Counts] { counts.withLock { $0 } }

    /// Stops claiming; ``run()`` returns once the requests in flight are answered or time out.
    func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Discovers, then delivers until drained (``Mode/drain``) or stopped.
    ///
    /// - Throws: when the first discovery fails (the store cannot be used).
    func run() async throws {
        let routes = ForwardJob.routes(destinations.map(\.config))
        _ = try await ledger.discover(routes)
        try await reloadModels()
        await withTaskGroup(of: Void.self) { group in
            if mode == .follow {
                group.addTask { await self.follow(routes) }
            }
            for destination in destinations {
                group.addTask { await self.deliver(to: destination) }
            }
        }
        await ledger.flush()
    }

    private func reloadModels() async throws {
        let (models, mappings) = try await ledger.models()
        let policy = self.policy
        writer.withLock { $0 = ExportWriter(options: ExportJob.Options(policy: policy), models: models) }
        campaigns.withLock { $0 = mappings }
    }

    /// `--follow`: discovers newly stored postbacks twice a second, reads models and campaign
    /// mappings every 10 s,
    /// and refreshes the status metrics every 5 s, until stopped.
    private func follow(_ routes: [DeliveryRoute]) async {
        var lastModels = ContinuousClock.now
        var lastStatus = ContinuousClock.now - .seconds(10)
        while !isStopping {
            try? await Task.sleep(for: Self.discoveryInterval)
            if isStopping { break }
            do {
                _ = try await ledger.discover(routes)
                if ContinuousClock.now - lastModels >= ModelDirectory.reloadInterval {
                    lastModels = .now
                    try await reloadModels()
                }
                if let metrics, ContinuousClock.now - lastStatus >= .seconds(5) {
                    lastStatus = .now
                    metrics.forwardStatus(
                        try await ledger.status(destinations.map(\.name)),
                        nowMs: UTCInstant.now().milliseconds
                    )
                }
            } catch {
                logger.warning("cannot discover new deliveries; trying again", metadata: ["forward.error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    // MARK: One destination

    /// What a destination's loop waits for: an answer, a claim, or the poll timer.
    private enum Event: Sendable {
        case answered(DeliveryOutcome)
        /// A claim of up to `room` deliveries; nil if it failed (after a second's pause).
        case claimed([ClaimedDelivery]?, room: Int)
        case tick
    }

    /// Keeps up to `concurrency` requests in flight, each in a child task, from a local queue
    /// of claimed deliveries refilled before it runs dry (so that a claim, a transaction, is
    /// made once per several deliveries); hands each outcome to the ledger as it comes. The
    /// claim is a child task too: answers are taken and requests started while it runs (awaited
    /// in the loop, a claim left the slots it freed empty for a round trip to the database).
    private func deliver(to destination: Destination) async {
        let concurrency = destination.config.concurrency
        // A claimed delivery may wait in the queue for as long as `queueDepth - 1` requests,
        // then take one.
        let leaseMs = Int64((Double(Self.queueDepth) * destination.config.timeoutSeconds + Self.leaseMargin) * 1000)
        await withTaskGroup(of: Event.self) { group in
            var queue: [ClaimedDelivery] = []
            var inFlight = 0
            var claiming = false
            var timerArmed = false
            var idle = false
            while true {
                let stopping = isStopping
                // Start what is queued (on a stop too: those are claimed already).
                let starting = min(concurrency - inFlight, queue.count)
                for delivery in queue.prefix(starting) {
                    group.addTask { .answered(await self.send(delivery, to: destination)) }
                }
                queue.removeFirst(starting)
                inFlight += starting
                let queued = queue.count
                // In flight and queued, at most `queueDepth` times the concurrency (what the
                // lease covers); with the answers whose outcomes wait for their commit, at most
                // that plus a group of outcomes (which bounds the repeats after a crash, and the
                // outcomes held while the database cannot take them).
                let uncommitted = ledger.uncommitted(destination.name)
                let room =
                    Self.queueDepth * concurrency - inFlight - queued
                    - max(0, uncommitted - DeliveryLedger.groupSize)
                if !stopping, !idle, !claiming, room > 0, queued < concurrency {
                    claiming = true
                    group.addTask { .claimed(await self.claim(room, for: destination, leaseMs: leaseMs), room: room) }
                }
                if inFlight == 0 && queue.isEmpty && !claiming {
                    if stopping { break }
                    if uncommitted > 0 && room <= 0 {
                        // Nothing to wait for but the commit.
                        await ledger.flush()
                        continue
                    }
                    guard idle else { continue }
                    if mode == .drain {
                        // Everything claimable is done: wait for the next retry, or end.
                        await ledger.flush()
                        let due: Int64?
                        do {
                            due = try await ledger.nextDue(destination.name)
                        } catch {
                            logger.warning("cannot read pending deliveries", metadata: ["forward.error": "\(error)"])
                            try? await Task.sleep(for: .seconds(1))
                            continue
                        }
                        guard let due else { break }
                        let wait = min(max(due - UTCInstant.now().milliseconds, 10), 1_000)
                        try? await Task.sleep(for: .milliseconds(wait))
                    } else {
                        try? await Task.sleep(for: Self.pollInterval)
                    }
                    idle = false
                    continue
                }
                // Wait for an answer or a claim, or (when nothing was claimable) the next poll.
                if !timerArmed && !stopping && idle {
                    timerArmed = true
                    group.addTask {
                        try? await Task.sleep(for: Self.pollInterval)
                        return .tick
                    }
                }
                switch await group.next() {
                case .answered(let outcome)?:
                    inFlight -= 1
                    ledger.record(outcome)
                    count(outcome)
                case .claimed(let claimed, let room)?:
                    claiming = false
                    queue += claimed ?? []
                    idle = (claimed?.count ?? 0) < room
                case .tick?:
                    timerArmed = false
                    idle = false
                case nil:
                    inFlight = 0
                    claiming = false
                }
            }
            group.cancelAll()
        }
    }

    /// Claims up to `limit` due deliveries to `destination`; nil, after a second, if the
    /// database cannot be reached.
    private func claim(_ limit: Int, for destination: Destination, leaseMs: Int64) async -> [ClaimedDelivery]? {
        let now = UTCInstant.now().milliseconds
        do {
            return try await ledger.claim(
                destination: destination.name,
                limit: limit,
                nowMs: now,
                leaseUntilMs: now + leaseMs
            )
        } catch {
            logger.warning(
                "cannot claim deliveries; trying again",
                metadata: ["forward.destination": "\(destination.name)", "forward.error": "\(error)"]
            )
            try? await Task.sleep(for: .seconds(1))
            return nil
        }
    }

    private func count(_ outcome: DeliveryOutcome) {
        counts.withLock { counts in
            var entry = counts[outcome.destination] ?? ForwardSummary.Counts()
            switch outcome.state {
            case .delivered: entry.delivered += 1
            case .rejected: entry.rejected += 1
            case .failed: entry.failed += 1
            case .pending: entry.retried += 1
            }
            counts[outcome.destination] = entry
        }
        metrics?.forwardAttempt(destination: outcome.destination, state: outcome.state)
    }

    // MARK: One attempt

    /// Sends one delivery and says what it ended with.
    private func send(_ delivery: ClaimedDelivery, to destination: Destination) async -> DeliveryOutcome {
        let started = UTCInstant.now().milliseconds
        var outcome = DeliveryOutcome(
            destination: destination.name,
            postbackID: delivery.postbackID,
            state: .pending,
            attempts: delivery.attempts + 1,
            firstAttemptMs: delivery.firstAttemptMs ?? started,
            lastAttemptMs: started,
            nextAttemptMs: started,
            status: nil,
            answer: nil
        )
        guard let row = delivery.row, case .text(let keyHex)? = row.postbackValue("dedup_key"),
            let dedupKey = bytesFromHex(keyHex, maximumCount: 4096)
        else {
            outcome.state = .rejected
            outcome.answer = "postbackd: the postback is no longer stored"
            return outcome
        }
        let config = destination.config
        let body: [UInt8]
        switch ForwardBody.make(
            config,
            row: row,
            writer: writer.withLock { $0 },
            campaigns: campaigns.withLock { $0 }
        ) {
        case .body(let bytes):
            body = bytes
        case .refused(let reason):
            outcome.state = .rejected
            outcome.answer = reason
            return outcome
        }
        let deliveryID = ForwardConfig.Destination.deliveryID(dedupKey: dedupKey, destination: config.name)
        var request = HTTPClientRequest(url: config.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "postbackd/\(PostbackdVersion.current)")
        request.headers.add(name: "Postbackd-Delivery-Id", value: deliveryID)
        request.headers.add(name: "Postbackd-Attempt", value: String(outcome.attempts))
        if let secret = destination.secret {
            request.headers.add(
                name: "Postbackd-Signature",
                value: "sha256=" + HMACSHA256.hex(key: secret, message: body)
            )
        }
        for (name, value) in config.headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))

        let answer: DeliveryAnswer
        do {
            let response = try await destination.client.execute(
                request,
                deadline: .now() + .nanoseconds(Int64(config.timeoutSeconds * 1e9)),
                logger: nil
            )
            let text = try await Self.answerStart(response.body)
            answer = .status(
                Int(response.status.code),
                text,
                retryAfter: response.headers.first(name: "Retry-After").flatMap { Double($0) }
            )
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
            || error == .writeTimeout
        {
            answer = .failure("postbackd: no answer within \(formatJSONNumber(config.timeoutSeconds)) s")
        } catch {
            answer = .failure("postbackd: \(String(describing: error).prefix(512))")
        }
        let finished = UTCInstant.now().milliseconds
        outcome.apply(answer, retry: config.retry, nowMs: finished, unit: Double.random(in: 0..<1))
        switch outcome.state {
        case .rejected, .failed:
            logger.warning(
                "delivery \(outcome.state.rawValue)",
                metadata: [
                    "forward.destination": "\(config.name)", "forward.delivery_id": "\(deliveryID)",
                    "forward.status": "\(outcome.status.map(String.init) ?? "none")",
                    "forward.attempts": "\(outcome.attempts)",
                ]
            )
        case .pending:
            logger.debug(
                "delivery to retry",
                metadata: [
                    "forward.destination": "\(config.name)", "forward.delivery_id": "\(deliveryID)",
                    "forward.status": "\(outcome.status.map(String.init) ?? "none")",
                    "forward.attempts": "\(outcome.attempts)",
                    "forward.answer": "\(outcome.answer?.prefix(200) ?? "")",
                ]
            )
        case .delivered:
            break
        }
        return outcome
    }

    /// The first KiB of an answer. Reads at most 64 KiB more (so the connection can be used
    /// again); past that the connection is dropped.
    private static func answerStart(_ body: HTTPClientResponse.Body) async throws -> String {
        var kept: [UInt8] = []
        var total = 0
        for try await chunk in body {
            if kept.count < 1024 { kept += chunk.readableBytesView.prefix(1024 - kept.count) }
            total += chunk.readableBytes
            if total > 65_536 { break }
        }
        return String(decoding: kept, as: UTF8.self)
    }
}

/// What an attempt got.
package enum DeliveryAnswer: Sendable {
    /// An HTTP answer: its status, the start of its body, its `Retry-After` in seconds.
    case status(Int, String, retryAfter: Double?)
    /// No answer: a timeout, a refused or broken connection.
    case failure(String)
}

extension DeliveryOutcome {
    /// Records `answer`: 2xx delivered; 408, 429, 5xx and no answer retried on `retry`'s
    /// schedule (no sooner than a `Retry-After`, capped by `max_seconds`) until `give_up_hours`
    /// after the first attempt, then failed; anything else rejected.
    package mutating func apply(
        _ got: DeliveryAnswer,
        retry: ForwardConfig.Destination.Retry,
        nowMs: Int64,
        unit: Double
    ) {
        lastAttemptMs = min(lastAttemptMs, nowMs)
        var retryAfter: Double?
        switch got {
        case .status(let code, let text, let after):
            status = code
            answer = text.isEmpty ? nil : text
            switch code {
            case 200..<300:
                state = .delivered
                return
            case 408, 429, 500..<600:
                retryAfter = after
            default:
                state = .rejected
                return
            }
        case .failure(let reason):
            status = nil
            answer = reason
        }
        if Double(nowMs - firstAttemptMs) >= retry.giveUpHours * 3_600_000 {
            state = .failed
            return
        }
        var delay = retry.delaySeconds(afterFailures: attempts, unit: unit)
        if let retryAfter, retryAfter > delay { delay = min(retryAfter, retry.maxSeconds) }
        state = .pending
        nextAttemptMs = nowMs + Int64(delay * 1000)
    }
}

/// Where `serve --forward` reports: attempts as they end, and the status now and then.
protocol ForwardMetrics: Sendable {
    func forwardAttempt(destination: String, state: DeliveryState)
    func forwardStatus(_ status: [DeliveryStatus], nowMs: Int64)
}

/// What a forward run did, and the state after it.
package struct ForwardSummary: Sendable {
    package struct Counts: Sendable, Hashable {
        package var delivered = 0
        package var rejected = 0
        package var failed = 0
        /// Attempts that failed and will be retried.
        package var retried = 0

        package init() {}
    }

    /// This run's attempts by destination.
    package var attempts: [String: Counts]
    /// Every destination's deliveries after the run.
    package var status: [DeliveryStatus]
}

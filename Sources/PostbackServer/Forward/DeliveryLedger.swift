import Logging
import PostbackKit
import PostbackStore
import Synchronization

/// The one task that uses the store for `forward`: claims, outcomes, discovery and status are
/// requests it serves in order. Outcomes are written in groups, one transaction each: a group is
/// written when it holds ``groupSize`` outcomes or ``groupWindow`` after its first one arrived,
/// so a fast destination costs one commit per group, not one per delivery (on PostgreSQL a
/// commit per one or two deliveries held `forward` to a few hundred a second).
final class DeliveryLedger: Sendable {
    enum Request: Sendable {
        case claim(
            destination: String,
            limit: Int,
            nowMs: Int64,
            leaseUntilMs: Int64,
            CheckedContinuation<[ClaimedDelivery], any Error>
        )
        /// Outcomes wait in ``outcomes``; these only wake the ledger. `outcomesWaiting`: the first
        /// of a group arrived (the ledger sets a timer); `outcomesDue`: write them now.
        case outcomesWaiting
        case outcomesDue
        case flush(CheckedContinuation<Void, Never>)
        case discover([DeliveryRoute], CheckedContinuation<Int, any Error>)
        case nextDue(String, CheckedContinuation<Int64?, any Error>)
        case status([String], CheckedContinuation<[DeliveryStatus], any Error>)
        case models(CheckedContinuation<(ConversionModels, CampaignMappings), any Error>)
    }

    /// The most outcomes in one transaction, and the longest the first of them waits for it.
    static let groupSize = 128
    static let groupWindow: Duration = .milliseconds(10)

    /// Who holds the leases this process takes: unique per process and run.
    let holder: String
    private let requests: AsyncStream<Request>
    private let continuation: AsyncStream<Request>.Continuation
    /// Outcomes recorded and not yet committed.
    private struct Outcomes {
        /// Those waiting for the next write.
        var waiting: [DeliveryOutcome] = []
        /// Per destination, those waiting or being written.
        var uncommitted: [String: Int] = [:]
    }
    private let outcomes = Mutex(Outcomes())
    private let closing = Atomic<Bool>(false)
    private let logger: Logger

    init(holder: String, logger: Logger) {
        self.holder = holder
        self.logger = logger
        (requests, continuation) = AsyncStream.makeStream(of: Request.self)
    }

    // MARK: Requests (from any task)

    func claim(destination: String, limit: Int, nowMs: Int64, leaseUntilMs: Int64) async throws -> [ClaimedDelivery] {
        try await withCheckedThrowingContinuation { reply in
            send(
                .claim(destination: destination, limit: limit, nowMs: nowMs, leaseUntilMs: leaseUntilMs, reply),
                orFail: reply
            )
        }
    }

    func record(_ outcome: DeliveryOutcome) {
        let waiting = outcomes.withLock { outcomes in
            outcomes.waiting.append(outcome)
            outcomes.uncommitted[outcome.destination, default: 0] += 1
            return outcomes.waiting.count
        }
        if waiting == 1 {
            continuation.yield(.outcomesWaiting)
        } else if waiting == Self.groupSize {
            continuation.yield(.outcomesDue)
        }
    }

    /// How many of `destination`'s outcomes are recorded and not yet committed: deliveries that
    /// would be sent again after a crash, like those in flight.
    func uncommitted(_ destination: String) -> Int {
        outcomes.withLock { $0.uncommitted[destination] ?? 0 }
    }

    /// Returns once every outcome recorded before the call is written (or the ledger closed).
    func flush() async {
        await withCheckedContinuation { reply in
            if case .terminated = continuation.yield(.flush(reply)) { reply.resume() }
        }
    }

    /// Discovers new deliveries for every route; returns how many were added.
    func discover(_ routes: [DeliveryRoute]) async throws -> Int {
        try await withCheckedThrowingContinuation { reply in send(.discover(routes, reply), orFail: reply) }
    }

    func nextDue(_ destination: String) async throws -> Int64? {
        try await withCheckedThrowingContinuation { reply in send(.nextDue(destination, reply), orFail: reply) }
    }

    func status(_ destinations: [String]) async throws -> [DeliveryStatus] {
        try await withCheckedThrowingContinuation { reply in send(.status(destinations, reply), orFail: reply) }
    }

    /// The conversion models and the campaign mappings in force.
    func models() async throws -> (ConversionModels, CampaignMappings) {
        try await withCheckedThrowingContinuation { reply in send(.models(reply), orFail: reply) }
    }

    /// Ends ``run(store:)`` once the requests already made are served.
    func close() {
        closing.store(true, ordering: .relaxed)
        continuation.finish()
    }

    private func send<Value>(_ request: Request, orFail reply: CheckedContinuation<Value, any Error>) {
        if case .terminated = continuation.yield(request) {
            reply.resume(throwing: PostbackServerError(.stopping, "the forwarder is stopping"))
        }
    }

    // MARK: The ledger task

    /// Serves requests with `store` until ``close()``, writing the outcomes left at the end.
    func run(store: any DeliveryQueue) async {
        for await request in requests {
            switch request {
            case .claim(let destination, let limit, let nowMs, let leaseUntilMs, let reply):
                do {
                    reply.resume(
                        returning: try await store.claimDeliveries(
                            destination: destination,
                            limit: limit,
                            nowMs: nowMs,
                            leaseUntilMs: leaseUntilMs,
                            holder: holder
                        )
                    )
                } catch {
                    reply.resume(throwing: error)
                }
            case .outcomesWaiting:
                let continuation = self.continuation
                Task {
                    try? await Task.sleep(for: Self.groupWindow)
                    continuation.yield(.outcomesDue)
                }
            case .outcomesDue:
                await writeOutcomes(store)
            case .flush(let reply):
                await writeOutcomes(store)
                reply.resume()
            case .discover(let routes, let reply):
                do {
                    reply.resume(
                        returning: try await store.discoverAllDeliveries(routes, nowMs: UTCInstant.now().milliseconds)
                    )
                } catch {
                    reply.resume(throwing: error)
                }
            case .nextDue(let destination, let reply):
                do { reply.resume(returning: try await store.nextDeliveryDue(destination: destination)) } catch {
                    reply.resume(throwing: error)
                }
            case .status(let destinations, let reply):
                do { reply.resume(returning: try await store.deliveryStatus(destinations: destinations)) } catch {
                    reply.resume(throwing: error)
                }
            case .models(let reply):
                do {
                    let models = try await store.models().timelines
                    let mappings = CampaignMappings(try await store.campaignMappings().map(\.mapping))
                    reply.resume(returning: (models, mappings))
                } catch {
                    reply.resume(throwing: error)
                }
            }
        }
        await writeOutcomes(store, untilWritten: false)
    }

    /// Writes every outcome waiting, in one transaction. A failure (the database unreachable
    /// for the store's whole retry time) keeps them and tries again, unless this is the end.
    private func writeOutcomes(_ store: any DeliveryQueue, untilWritten: Bool = true) async {
        while true {
            let batch = outcomes.withLock { outcomes in
                defer { outcomes.waiting.removeAll(keepingCapacity: true) }
                return outcomes.waiting
            }
            guard !batch.isEmpty else { return }
            do {
                try await store.recordDeliveries(batch, holder: holder)
                outcomes.withLock { outcomes in
                    for outcome in batch { outcomes.uncommitted[outcome.destination, default: 0] -= 1 }
                }
                return
            } catch {
                logger.error(
                    "cannot record delivery outcomes; the deliveries will be attempted again",
                    metadata: ["forward.outcomes": "\(batch.count)", "forward.error": "\(error)"]
                )
                guard untilWritten, !closing.load(ordering: .relaxed), !Task.isCancelled else { return }
                outcomes.withLock { $0.waiting.insert(contentsOf: batch, at: 0) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

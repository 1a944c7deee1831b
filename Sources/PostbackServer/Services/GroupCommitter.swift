import Logging
import PostbackKit
import PostbackStore
import Synchronization

/// Group commit: postbacks that arrive while a commit is under way wait for the next one, and
/// each request is answered when the transaction holding its postback has committed.
///
/// One task (``run(store:runID:)``) owns the store. Requests hand it their verified postback
/// (``submit(_:)``) and wait; the writer takes everything that waits (up to
/// ``maximumGroup``), writes it in one transaction committed with a flush to disk, and answers
/// each. Under load a group holds what arrived during the previous commit, so the flush is
/// shared and no request waits for a timer.
final class GroupCommitter: Sendable {
    /// A verified postback with its request, waiting for a commit.
    struct Submission: Sendable {
        var bytes: [UInt8]
        var result: VerificationResult
        var digest: [UInt8]
        var request: ReceivedRequest
    }

    /// What a request learns.
    enum Receipt: Sendable, Equatable {
        case done(ReceiptOutcome)
        /// The store could not commit; nothing of this request was stored.
        case unavailable(String)
    }

    /// What a call of the app-facing conversion value endpoint learns.
    enum DeviceReceipt: Sendable, Equatable {
        /// The device's history after the call (nil: past 35 days, nothing kept).
        case recorded(DeviceHistory?)
        /// The store could not commit; nothing of this call was recorded.
        case unavailable(String)
    }

    /// A postback waiting, and whom to tell (on the writer's thread; the reply must not block).
    private struct Waiting: Sendable {
        var submission: Submission
        var reply: @Sendable (Receipt) -> Void
    }

    private struct WaitingCall: Sendable {
        var call: DeviceCall
        var reply: @Sendable (DeviceReceipt) -> Void
    }

    /// What a request of `POST /v1/apple-ads/token` learns.
    enum TokenReceipt: Sendable, Equatable {
        case stored(AppleAdsAddOutcome)
        /// The store could not commit; nothing of this request was stored.
        case unavailable(String)
    }

    private struct WaitingToken: Sendable {
        var token: AppleAdsToken
        var receivedAtMs: Int64
        var continuation: CheckedContinuation<TokenReceipt, Never>
    }

    private struct State: Sendable {
        var pending: [Waiting] = []
        var calls: [WaitingCall] = []
        var tokens: [WaitingToken] = []
        var probes: [CheckedContinuation<String?, Never>] = []
        var reloadModels = false
        /// When each stored access key was last used, not yet recorded.
        var keyUses: [String: UTCInstant] = [:]
        var writerIdle: CheckedContinuation<Void, Never>?
        var closing = false

        var idle: Bool {
            pending.isEmpty && calls.isEmpty && tokens.isEmpty && probes.isEmpty && !reloadModels && keyUses.isEmpty
                && !closing
        }
    }

    /// One turn's work for the writer.
    private struct Work {
        var group: [Waiting]
        var calls: [WaitingCall]
        var tokens: [WaitingToken]
        var probes: [CheckedContinuation<String?, Never>]
        var reloadModels: Bool
        var keyUses: [String: UTCInstant]
        var closing: Bool

        var isEmpty: Bool {
            group.isEmpty && calls.isEmpty && tokens.isEmpty && probes.isEmpty && !reloadModels && keyUses.isEmpty
        }
    }

    private let state = Mutex(State())
    let maximumGroup: Int
    let metrics: ServerMetrics
    /// The models the conversion value endpoints answer from, reloaded by the writer.
    let models: ModelDirectory
    let logger: Logger
    private let budget: Mutex<QuarantineBudget>

    init(
        maximumGroup: Int = 1024,
        quarantineRowsPerHour: Int,
        metrics: ServerMetrics,
        models: ModelDirectory = ModelDirectory(),
        logger: Logger
    ) {
        self.maximumGroup = max(1, maximumGroup)
        self.metrics = metrics
        self.models = models
        self.logger = logger
        self.budget = Mutex(QuarantineBudget(rowsPerHour: quarantineRowsPerHour))
    }

    // MARK: Requests

    /// Waits until `submission` is durable (or the store failed) and returns what became of it.
    func submit(_ submission: Submission) async -> Receipt {
        await withCheckedContinuation { continuation in
            submit(submission) { continuation.resume(returning: $0) }
        }
    }

    /// Hands `submission` to the writer; `reply` gets what became of it once that is durable
    /// (or the store failed), on the writer's thread, or at once when closing. For callers on an
    /// event loop (``HotRouteHandler``), which must not wait.
    func submit(_ submission: Submission, reply: @escaping @Sendable (Receipt) -> Void) {
        let accepted = handToWriter { $0.pending.append(Waiting(submission: submission, reply: reply)) }
        if !accepted { reply(.unavailable("the server is shutting down; retry later")) }
    }

    /// Asks the writer, between two commits, whether the store accepts writes; nil when it does,
    /// else why not.
    func checkWritable() async -> String? {
        await withCheckedContinuation { continuation in
            let accepted = handToWriter { $0.probes.append(continuation) }
            if !accepted { continuation.resume(returning: "the server is shutting down") }
        }
    }

    /// Waits until `call` is recorded durably (or the store failed) and returns the device's
    /// history after it.
    func record(_ call: DeviceCall) async -> DeviceReceipt {
        await withCheckedContinuation { continuation in
            record(call) { continuation.resume(returning: $0) }
        }
    }

    /// Hands `call` to the writer; `reply` gets the device's history once the call is durable
    /// (or the store failed), on the writer's thread, or at once when closing.
    func record(_ call: DeviceCall, reply: @escaping @Sendable (DeviceReceipt) -> Void) {
        let accepted = handToWriter { $0.calls.append(WaitingCall(call: call, reply: reply)) }
        if !accepted { reply(.unavailable("the server is shutting down; retry later")) }
    }

    /// Waits until `token` is stored durably (or the store failed) and returns what storing it
    /// did.
    func store(_ token: AppleAdsToken, receivedAtMs: Int64) async -> TokenReceipt {
        await withCheckedContinuation { continuation in
            let accepted = handToWriter {
                $0.tokens.append(WaitingToken(token: token, receivedAtMs: receivedAtMs, continuation: continuation))
            }
            if !accepted { continuation.resume(returning: .unavailable("the server is shutting down; retry later")) }
        }
    }

    /// Asks the writer to read the current models again between two commits.
    func reloadModels() {
        _ = handToWriter { $0.reloadModels = true }
    }

    /// Hands the writer when keys were last used, to record between two commits; waits for
    /// nothing. A write that waits for the store's lock then holds up the writer, which would
    /// wait for the same lock, and never the keys' reads (``KeyReloadService``).
    func recordKeyUses(_ uses: [String: UTCInstant]) {
        guard !uses.isEmpty else { return }
        _ = handToWriter { state in state.keyUses.merge(uses) { max($0, $1) } }
    }

    /// Adds work for the writer with `add` and wakes it if idle; false, adding nothing, once
    /// closing.
    private func handToWriter(_ add: (inout State) -> Void) -> Bool {
        let (accepted, writer) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.closing else { return (false, nil) }
            add(&state)
            defer { state.writerIdle = nil }
            return (true, state.writerIdle)
        }
        writer?.resume()
        return accepted
    }

    /// Stops taking submissions; the writer commits what waits and returns.
    func close() {
        let writer = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closing = true
            defer { state.writerIdle = nil }
            return state.writerIdle
        }
        writer?.resume()
    }

    // MARK: The writer

    /// Commits groups until ``close()``, then what is left; returns what it stored.
    func run(store: any PostbackStorage, runID: Int64) async -> IngestSummary {
        var summary = IngestSummary()
        while true {
            let work = await nextWork()
            if !work.probes.isEmpty {
                let problem: String?
                do {
                    try await store.checkWritable()
                    problem = nil
                } catch {
                    problem = StoreFault.classify(error, at: store.location).reason
                }
                for probe in work.probes { probe.resume(returning: problem) }
            }
            if !work.group.isEmpty {
                await commit(work.group, store: store, runID: runID, summary: &summary)
            }
            if !work.calls.isEmpty {
                await record(work.calls, store: store)
            }
            if !work.tokens.isEmpty {
                await storeTokens(work.tokens, store: store)
            }
            if work.reloadModels {
                do {
                    models.replace(with: try await store.models(), at: .now())
                } catch {
                    logger.warning(
                        "cannot read the models; answering from those read before",
                        metadata: ["serve.error": "\(StoreFault.classify(error, at: store.location).reason)"]
                    )
                }
            }
            if !work.keyUses.isEmpty {
                do {
                    try await store.recordAccessKeyUse(work.keyUses)
                } catch {
                    logger.warning(
                        "cannot record the access keys' use",
                        metadata: ["serve.error": "\(StoreFault.classify(error, at: store.location).reason)"]
                    )
                }
            }
            if work.closing && work.isEmpty { return summary }
        }
    }

    /// Waits for work, and takes it (at most ``maximumGroup`` submissions and as many calls).
    private func nextWork() async -> Work {
        while true {
            let work = state.withLock { state -> Work? in
                guard state.idle else {
                    let count = min(state.pending.count, maximumGroup)
                    let group = Array(state.pending.prefix(count))
                    state.pending.removeFirst(count)
                    let callCount = min(state.calls.count, maximumGroup)
                    let calls = Array(state.calls.prefix(callCount))
                    state.calls.removeFirst(callCount)
                    let tokenCount = min(state.tokens.count, maximumGroup)
                    let tokens = Array(state.tokens.prefix(tokenCount))
                    state.tokens.removeFirst(tokenCount)
                    let probes = state.probes
                    state.probes = []
                    let reload = state.reloadModels
                    state.reloadModels = false
                    let keyUses = state.keyUses
                    state.keyUses = [:]
                    return Work(
                        group: group,
                        calls: calls,
                        tokens: tokens,
                        probes: probes,
                        reloadModels: reload,
                        keyUses: keyUses,
                        closing: state.closing
                    )
                }
                return nil
            }
            if let work { return work }
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.idle {
                        state.writerIdle = continuation
                        return false
                    }
                    return true
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Logs a failed write of a group (the sentence names the store and the fault) and
    /// returns what its clients are told: the fault alone (``StoreFault/publicReason``).
    private func unavailable(
        _ error: any Error,
        store: any PostbackStorage,
        _ message: Logger.Message,
        group: Int
    ) -> String {
        let fault = StoreFault.classify(error, at: store.location)
        logger.error(message, metadata: ["serve.group": "\(group)", "serve.error": "\(fault.reason)"])
        return fault.publicReason
    }

    private func record(_ waiting: [WaitingCall], store: any PostbackStorage) async {
        let histories: [DeviceHistory?]
        do {
            histories = try await store.recordDeviceCalls(waiting.map(\.call))
        } catch {
            let reason = unavailable(
                error,
                store: store,
                "recording conversion value calls failed; answering 503",
                group: waiting.count
            )
            for call in waiting { call.reply(.unavailable(reason)) }
            return
        }
        for (call, history) in zip(waiting, histories) {
            call.reply(.recorded(history))
        }
    }

    private func storeTokens(_ waiting: [WaitingToken], store: any PostbackStorage) async {
        // One transaction; the time of each token's own request decides whether it expired.
        let outcomes: [AppleAdsAddOutcome]
        do {
            outcomes = try await store.addAppleAdsTokens(
                waiting.map(\.token),
                receivedAtMs: waiting.map(\.receivedAtMs)
            )
        } catch {
            let reason = unavailable(
                error,
                store: store,
                "storing Apple Ads tokens failed; answering 503",
                group: waiting.count
            )
            for token in waiting { token.continuation.resume(returning: .unavailable(reason)) }
            return
        }
        for (token, outcome) in zip(waiting, outcomes) {
            token.continuation.resume(returning: .stored(outcome))
        }
    }

    private func commit(
        _ group: [Waiting],
        store: any PostbackStorage,
        runID: Int64,
        summary: inout IngestSummary
    ) async {
        let now = UTCInstant.now()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(group.reduce(0) { $0 + $1.submission.bytes.count })
        var entries: [RawEntry] = []
        var results: [VerificationResult] = []
        var digests: [[UInt8]] = []
        var requests: [ReceivedRequest] = []
        entries.reserveCapacity(group.count)
        results.reserveCapacity(group.count)
        digests.reserveCapacity(group.count)
        requests.reserveCapacity(group.count)
        let mayQuarantine = budget.withLock { $0.allows(at: now) }
        for waiting in group {
            let submission = waiting.submission
            let start = bytes.count
            bytes.append(contentsOf: submission.bytes)
            entries.append(RawEntry(location: ReceivedRequest.location, range: start..<bytes.count, problem: nil))
            results.append(submission.result)
            digests.append(submission.digest)
            var request = submission.request
            request.mayQuarantine = mayQuarantine
            requests.append(request)
        }
        var verified = VerifiedBatch(batch: EntryBatch(sequence: 0, bytes: bytes, entries: entries), results: results)
        verified.rawDigests = digests

        let started = ContinuousClock.now
        let outcomes: [ReceiptOutcome]
        do {
            outcomes = try await store.receive(verified, requests: requests, runID: runID)
        } catch {
            let reason = unavailable(error, store: store, "commit failed; answering 503", group: group.count)
            metrics.commitFailed(group.count)
            for waiting in group { waiting.reply(.unavailable(reason)) }
            return
        }
        metrics.committed(group: group.count, duration: ContinuousClock.now - started)
        var newRows = 0
        for (index, waiting) in group.enumerated() {
            let outcome = outcomes[index]
            if case .quarantined(newRow: true) = outcome { newRows += 1 }
            summary.count(outcome, results[index])
            metrics.record(outcome, results[index], atSeconds: now.milliseconds / 1000)
            waiting.reply(.done(outcome))
        }
        budget.withLock { $0.spend(newRows, at: now) }
    }
}

/// How many new quarantine rows HTTP junk may add per hour: past it, refused bodies are
/// counted in the metrics and not stored, so a flood cannot fill the disk. Checked per group.
struct QuarantineBudget: Sendable {
    var rowsPerHour: Int
    private var hour: Int64 = -1
    private var spent = 0

    init(rowsPerHour: Int) {
        self.rowsPerHour = rowsPerHour
    }

    private mutating func roll(to now: UTCInstant) {
        let current = now.milliseconds / 3_600_000
        if current != hour {
            hour = current
            spent = 0
        }
    }

    mutating func allows(at now: UTCInstant) -> Bool {
        roll(to: now)
        return spent < rowsPerHour
    }

    mutating func spend(_ rows: Int, at now: UTCInstant) {
        roll(to: now)
        spent += rows
    }
}

import Synchronization

/// Reads entries in order, verifies them on every active core, and hands the results back in
/// input order.
///
/// Three kinds of thread, each named (``NamedThreads``), so that each serial path's CPU time
/// can be read on its own (`/proc/PID/task/*/comm`):
/// - `pbd-reader` reads the inputs into batches, hands each to a verifier and puts the
///   verified batches back in input order;
/// - `pbd-verify-N`, one per active core, verify a batch each and `prepare` it for the
///   consumer (everything that does not need to be serial belongs there: formatting,
///   statements' values);
/// - the consumer (`consumerName`: `pbd-writer` for ingest, `pbd-output` for verify) takes the
///   prepared batches in order and does the serial rest.
///
/// The reader keeps at most two batches per verifier in flight and the consumer at most
/// ``handoffBatches`` waiting, so memory stays bounded however large the input.
package struct VerificationPipeline: Sendable {
    package let pool: VerifierPool
    /// Batches verified at once.
    package let width: Int
    /// Also hash each entry's raw bytes (for the store).
    package let hashingRaw: Bool
    /// The consumer's thread's name.
    package let consumerName: String

    /// Prepared batches waiting for the consumer, at most.
    package let handoffBatches: Int

    /// Prepared batches that may wait for the consumer unless it asks otherwise: enough for the
    /// verifiers to go on past its short waits.
    package static let defaultHandoffBatches = 8

    /// `handoffBatches`: how many prepared batches may wait for the consumer. A consumer that
    /// pauses for longer (ingest's commits in a large store) asks for more, and holds that many
    /// batches' memory while it pauses.
    package init(
        keyRing: KeyRing,
        width: Int = ActiveProcessors.count,
        hashingRaw: Bool = false,
        consumerName: String = "pbd-writer",
        handoffBatches: Int = defaultHandoffBatches
    ) {
        self.pool = VerifierPool(keyRing: keyRing)
        self.width = max(1, width)
        self.hashingRaw = hashingRaw
        self.consumerName = consumerName
        self.handoffBatches = max(1, handoffBatches)
    }

    /// Verifies every entry `reader` yields, calling `consume` once per batch, in order.
    package func run(
        _ reader: EntryReader,
        consume: (VerifiedBatch) async throws -> Void
    ) async throws {
        try await run(reader, prepare: { $0 }, consume: consume)
    }

    /// Verifies every entry `reader` yields, prepares each verified batch on the verifier's
    /// thread, and calls `consume` once per prepared batch, in input order, on the consumer's
    /// thread.
    package func run<Prepared: Sendable>(
        _ reader: EntryReader,
        prepare: @escaping @Sendable (VerifiedBatch) -> Prepared,
        consume: (Prepared) async throws -> Void
    ) async throws {
        let readerThread = NamedThreads(name: "pbd-reader")
        let verifiers = NamedThreads(name: "pbd-verify", count: width)
        let consumer = NamedThreads(name: consumerName)
        defer {
            readerThread.shutdown()
            verifiers.shutdown()
        }
        let pool = self.pool
        let hashingRaw = self.hashingRaw
        // Two batches in flight per verifier keep every core busy while the reader waits.
        let inFlightLimit = width * 2
        let handoff = Handoff<Prepared>(capacity: handoffBatches)
        nonisolated(unsafe) let entryReader = reader  // only the reader's task touches it until the end
        try await NamedThreads.run(on: consumer) {
            try await withThrowingTaskGroup(of: Void.self) { outer in
                outer.addTask(executorPreference: readerThread) {
                    do {
                        try await withThrowingTaskGroup(of: (Int, Prepared).self) { group in
                            var waiting: [Int: Prepared] = [:]
                            var nextToHand = 0
                            var inFlight = 0

                            func take(_ done: (Int, Prepared)) async throws {
                                inFlight -= 1
                                waiting[done.0] = done.1
                                while let ready = waiting.removeValue(forKey: nextToHand) {
                                    try await handoff.send(ready)
                                    nextToHand += 1
                                }
                            }

                            while !Task.isCancelled, let batch = entryReader.nextBatch() {
                                group.addTask(executorPreference: verifiers) {
                                    (batch.sequence, prepare(pool.verify(batch, hashingRaw: hashingRaw)))
                                }
                                inFlight += 1
                                while inFlight >= inFlightLimit, let done = try await group.next() {
                                    try await take(done)
                                }
                            }
                            while let done = try await group.next() { try await take(done) }
                        }
                        try Task.checkCancellation()
                        handoff.finish(throwing: nil)
                    } catch {
                        handoff.finish(throwing: error)
                        throw error
                    }
                }
                do {
                    while let prepared = try await handoff.next() { try await consume(prepared) }
                } catch {
                    handoff.close()
                    outer.cancelAll()
                    throw error
                }
                try await outer.waitForAll()
            }
        }
    }
}

/// Hands values from one task to another in order, holding at most `capacity`: the sender
/// waits while it is full, the receiver while it is empty.
final class Handoff<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var head = 0
        var receiver: CheckedContinuation<Element?, any Error>?
        var sender: CheckedContinuation<Void, any Error>?
        var finished = false
        var failure: (any Error)?
        var closed = false

        var count: Int { buffer.count - head }

        mutating func removeFirst() -> Element {
            let element = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            }
            return element
        }
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Hands `element` over, waiting while `capacity` are waiting. Throws `CancellationError`
    /// once the receiver closed.
    func send(_ element: Element) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resume: () -> Void = state.withLock { state in
                if state.closed { return { continuation.resume(throwing: CancellationError()) } }
                if let receiver = state.receiver {
                    state.receiver = nil
                    return {
                        receiver.resume(returning: element)
                        continuation.resume()
                    }
                }
                state.buffer.append(element)
                if state.count < capacity { return { continuation.resume() } }
                state.sender = continuation
                return {}
            }
            resume()
        }
    }

    /// The next element, or nil once the sender finished and everything was taken; throws
    /// what the sender finished with.
    func next() async throws -> Element? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element?, any Error>) in
            let resume: () -> Void = state.withLock { state in
                if state.count > 0 {
                    let element = state.removeFirst()
                    let sender = state.sender
                    state.sender = nil
                    return {
                        sender?.resume()
                        continuation.resume(returning: element)
                    }
                }
                if state.finished {
                    if let failure = state.failure { return { continuation.resume(throwing: failure) } }
                    return { continuation.resume(returning: nil) }
                }
                state.receiver = continuation
                return {}
            }
            resume()
        }
    }

    /// The sender is done: with nothing more to send, or with `error`.
    func finish(throwing error: (any Error)?) {
        let receiver: CheckedContinuation<Element?, any Error>? = state.withLock { state in
            state.finished = true
            state.failure = error
            defer { state.receiver = nil }
            return state.receiver
        }
        if let receiver {
            if let error { receiver.resume(throwing: error) } else { receiver.resume(returning: nil) }
        }
    }

    /// The receiver gave up: a waiting or later send throws `CancellationError`.
    func close() {
        let sender: CheckedContinuation<Void, any Error>? = state.withLock { state in
            state.closed = true
            state.buffer.removeAll()
            state.head = 0
            defer { state.sender = nil }
            return state.sender
        }
        sender?.resume(throwing: CancellationError())
    }
}

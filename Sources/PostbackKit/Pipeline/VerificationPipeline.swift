/// Reads entries in order, verifies them on every active core, and hands the results back in
/// input order.
///
/// Reading happens on the calling task; each batch is verified by a child task of a bounded
/// task group (width = active cores); finished batches are buffered until their turn so that
/// `consume` sees them in exactly the order they were read, however the work was spread.
package struct VerificationPipeline: Sendable {
    package let pool: VerifierPool
    /// Batches verified at once.
    package let width: Int
    /// Also hash each entry's raw bytes (for the store).
    package let hashingRaw: Bool

    package init(keyRing: KeyRing, width: Int = ActiveProcessors.count, hashingRaw: Bool = false) {
        self.pool = VerifierPool(keyRing: keyRing)
        self.width = max(1, width)
        self.hashingRaw = hashingRaw
    }

    /// Verifies every entry `reader` yields, calling `consume` once per batch, in order.
    package func run(
        _ reader: EntryReader,
        consume: (VerifiedBatch) async throws -> Void
    ) async throws {
        let pool = self.pool
        let hashingRaw = self.hashingRaw
        // Two batches in flight per worker keep every core busy while the consumer works.
        let inFlightLimit = width * 2
        try await withThrowingTaskGroup(of: VerifiedBatch.self) { group in
            var waiting: [Int: VerifiedBatch] = [:]
            var nextToConsume = 0
            var inFlight = 0

            func deliverReady() async throws {
                while let ready = waiting.removeValue(forKey: nextToConsume) {
                    try await consume(ready)
                    nextToConsume += 1
                }
            }

            while let batch = reader.nextBatch() {
                group.addTask { pool.verify(batch, hashingRaw: hashingRaw) }
                inFlight += 1
                while inFlight >= inFlightLimit, let done = try await group.next() {
                    inFlight -= 1
                    waiting[done.batch.sequence] = done
                    try await deliverReady()
                }
            }
            while let done = try await group.next() {
                waiting[done.batch.sequence] = done
                try await deliverReady()
            }
        }
    }
}

import Foundation
import GRDB
import PostbackKit

/// Ingest's writes on SQLite: one write transaction on the store's connection, open across
/// batches and committed by ``commit()``. One task owns it.
final class SQLiteIngestSession: IngestSession {
    private let queue: DatabaseQueue
    /// What the open write transaction has written, counted when it commits.
    private var uncommitted = IngestSummary()
    /// Which inserts check `pruned_keys`, read when the open write transaction began.
    private var prunedKeys = PrunedKeyGuard()

    init(queue: DatabaseQueue) {
        self.queue = queue
    }

    /// Writes one verified batch, in input order, into the open write transaction, beginning
    /// one if none is open, and returns the entries it quarantined.
    ///
    /// Nothing is durable, and nothing is counted in the run's summary, until ``commit()``.
    /// A transaction holds many batches: each commit rewrites every index page the transaction
    /// touched, and the dedup key's pages are touched at random, so fewer, larger commits write
    /// far less (a commit per 256-postback batch spent more time in the kernel than in SQLite).
    /// Only the batch being written is held in memory; SQLite spills what its cache cannot hold.
    func write(_ verified: VerifiedBatch, context: BatchContext) throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        let now = UTCInstant.now()
        try queue.writeWithoutTransaction { db in
            if !db.isInsideTransaction {
                try db.beginTransaction(.immediate)
                uncommitted = IngestSummary()
                prunedKeys = try SQLiteStore.prunedKeyGuard(db)
            }
            // Indexed arrays rather than `verified.items`: the `Zip2Sequence` PostbackKit makes,
            // iterated in this module, copied every result through its value witness (a
            // profile of the ingest showed the extra retains and releases).
            let entries = verified.batch.entries
            let results = verified.results
            for index in entries.indices {
                let entry = entries[index]
                let result = results[index]
                uncommitted.read += 1
                let raw = verified.batch.bytes[entry.range]
                let digest = verified.rawDigests[index]
                let source = context.storedSource(entry.location.source)
                func refuse(_ result: VerificationResult, receivedAt: UTCInstant) throws {
                    try SQLiteStore.quarantine(
                        db,
                        entry,
                        result,
                        raw: raw,
                        digest: digest,
                        source: source,
                        receivedAt: receivedAt,
                        runID: context.runID
                    )
                    uncommitted.countQuarantined(result)
                    quarantined.append(QuarantinedEntry(location: entry.location, result: result))
                }
                guard result.verdict == .valid, let postback = result.postback else {
                    try refuse(result, receivedAt: context.rule.receivedTime(forwarderTimestamp: nil, now: now).0)
                    continue
                }
                let (receivedAt, receivedSource) = context.rule.receivedTime(
                    forwarderTimestamp: postback.forwarderTimestamp,
                    now: now
                )
                let outcome = try SQLiteStore.store(
                    db,
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: source,
                    location: entry.location,
                    receivedAt: receivedAt,
                    receivedSource: receivedSource,
                    runID: context.runID,
                    prunedKeys: prunedKeys,
                    counts: &uncommitted
                )
                if case .digestCollision(let storedID) = outcome {
                    try refuse(digestCollision(result, storedID: storedID), receivedAt: receivedAt)
                }
            }
        }
        return quarantined
    }

    func commit() throws -> IngestSummary {
        try queue.writeWithoutTransaction { db in
            guard db.isInsideTransaction else { return }
            try db.commit()
        }
        defer { uncommitted = IngestSummary() }
        return uncommitted
    }

    /// Rolls back the open write transaction, if any: after a failed write, so that the
    /// database holds only whole commits (a re-run writes the rest).
    func rollback() {
        try? queue.writeWithoutTransaction { db in
            if db.isInsideTransaction { try db.rollback() }
        }
        uncommitted = IngestSummary()
    }
}

import PostbackKit

/// Ingest's writes on PostgreSQL: batches kept until a commit (or until many entries wait),
/// then sent in one transaction retried whole. One task owns it.
final class PostgresIngestSession: IngestSession {
    private let store: PostgresStore
    /// What ingest has written and not yet committed.
    private var pending = PendingWrites()
    /// What was committed by flushes since the last ``commit()``.
    private var flushed = IngestSummary()

    init(store: PostgresStore) {
        self.store = store
    }

    /// Keeps the batch for the next commit (sending it at once when many entries wait), and
    /// returns the entries it quarantines.
    ///
    /// Nothing reaches the server until a commit: a transaction is then one multi-row insert
    /// per table, whatever the number of batches, and can be retried whole.
    func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        let now = UTCInstant.now()
        let entries = verified.batch.entries
        let results = verified.results
        for index in entries.indices {
            let entry = entries[index]
            let result = results[index]
            pending.read += 1
            let raw = verified.batch.bytes[entry.range]
            let digest = verified.rawDigests[index]
            let source = context.storedSource(entry.location.source)
            guard result.verdict == .valid, let postback = result.postback else {
                pending.refused.append(
                    PendingWrites.Refused(
                        location: entry.location,
                        size: quarantinedSize(entry, rawCount: raw.count),
                        result: result,
                        raw: raw,
                        digest: digest,
                        source: source,
                        receivedAt: context.rule.receivedTime(forwarderTimestamp: nil, now: now).0,
                        runID: context.runID
                    )
                )
                quarantined.append(QuarantinedEntry(location: entry.location, result: result))
                continue
            }
            let (receivedAt, receivedSource) = context.rule.receivedTime(
                forwarderTimestamp: postback.forwarderTimestamp,
                now: now
            )
            pending.candidates.append(
                PendingWrites.Candidate(
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: source,
                    location: entry.location,
                    receivedAt: receivedAt,
                    receivedSource: receivedSource,
                    runID: context.runID
                )
            )
        }
        if pending.read >= PostgresStore.maximumPendingEntries {
            flushed.add(try await flush())
        }
        return quarantined
    }

    func commit() async throws -> IngestSummary {
        var summary = flushed
        summary.add(try await flush())
        flushed = IngestSummary()
        return summary
    }

    func rollback() async {
        pending = PendingWrites()
        flushed = IngestSummary()
    }

    /// Writes everything pending in one transaction and returns what it counted.
    private func flush() async throws -> IngestSummary {
        guard !pending.isEmpty else { return IngestSummary() }
        let writes = pending
        let logger = store.logger
        var attempt = WriteAttempt()
        let counts = try await store.transaction("store postbacks") { connection in
            var unused: [ReceiptOutcome] = []
            return try await PostgresStore.write(
                writes,
                connection,
                logger: logger,
                outcomes: &unused,
                attempt: &attempt
            )
        }
        pending = PendingWrites()
        return counts
    }
}

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
    /// Nothing reaches the server until a commit, or until ``PostgresStore/maximumPendingEntries``
    /// entries wait: those are then committed at once, counted by the next ``commit()`` or
    /// ``rollback()``. A transaction is one multi-row insert per table, whatever the number of
    /// batches, and can be retried whole.
    func write(_ batch: PreparedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        for item in batch.entries {
            pending.read += 1
            if let valid = item.valid {
                pending.candidates.append(PendingWrites.Candidate(item, valid, runID: context.runID))
            } else {
                pending.refused.append(PendingWrites.Refused(item, runID: context.runID))
                quarantined.append(QuarantinedEntry(location: item.entry.location, result: item.result))
            }
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

    /// Drops what waits to be sent, and returns what the flushes since the last commit
    /// committed: those rows stay, and so must their counts.
    @discardableResult
    func rollback() async -> IngestSummary {
        pending = PendingWrites()
        defer { flushed = IngestSummary() }
        return flushed
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

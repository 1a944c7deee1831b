import PostbackKit

/// Ingest's writes split over several sessions of one PostgreSQL store, each on a connection of
/// its own, all writing at once (`ingest --writers N`): one writer waits for the server's
/// round trips and its work, several keep the server's cores busy.
///
/// A valid postback goes to the session its dedup key picks, so every copy of one key goes
/// to one session, in input order: the first copy of a key in the input is the one stored, as
/// with one writer, and two sessions never insert the same key (their transactions take no
/// lock the other waits for). Every refused entry goes to the first session. The rows stored
/// are those one writer stores; only the ids the server hands out come in another order.
///
/// Not for SQLite, whose one file has one writer at a time (``IngestJob`` keeps one there).
final class ShardedIngestSession: IngestSession {
    private let shards: [any IngestSession]

    init(_ shards: [any IngestSession]) {
        precondition(!shards.isEmpty, "at least one session")
        self.shards = shards
    }

    /// The most any of its sessions asks for: each pauses the whole batch's write.
    var handoffBatches: Int { shards.map(\.handoffBatches).max() ?? VerificationPipeline.defaultHandoffBatches }

    /// The session `entry` belongs to.
    private func shard(of entry: IngestEntry) -> Int {
        guard let key = entry.valid?.prepared.dedupKey, let first = key.first else { return 0 }
        return Int(first) % shards.count
    }

    func write(_ batch: PreparedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
        var parts = [[IngestEntry]](repeating: [], count: shards.count)
        for entry in batch.entries { parts[shard(of: entry)].append(entry) }
        let verified = batch.verified
        let quarantined = try await withThrowingTaskGroup(of: (Int, [QuarantinedEntry]).self) { group in
            for (index, entries) in parts.enumerated() where !entries.isEmpty {
                let session = Lent(shards[index])
                let part = PreparedBatch(verified, entries: entries)
                group.addTask { (index, try await session.value.write(part, context: context)) }
            }
            var byShard: [Int: [QuarantinedEntry]] = [:]
            for try await (index, entries) in group { byShard[index] = entries }
            return byShard
        }
        // The first session's (every refused entry, in input order), then digest collisions.
        return shards.indices.flatMap { quarantined[$0] ?? [] }
    }

    func commit() async throws -> IngestSummary {
        try await withThrowingTaskGroup(of: IngestSummary.self) { group in
            for shard in shards {
                let session = Lent(shard)
                group.addTask { try await session.value.commit() }
            }
            var summary = IngestSummary()
            for try await part in group { summary.add(part) }
            return summary
        }
    }

    @discardableResult
    func rollback() async -> IngestSummary {
        var summary = IngestSummary()
        for shard in shards { summary.add(await shard.rollback()) }
        return summary
    }
}

/// A session handed to one child task at a time: the parent waits for every child before it
/// touches the sessions again.
private struct Lent: @unchecked Sendable {
    let value: any IngestSession
    init(_ value: any IngestSession) { self.value = value }
}

extension PostbackStorage {
    /// `count` ingest sessions at once (``ShardedIngestSession``), lent for the scope of `body`.
    func withIngestSessions<Result>(
        _ count: Int,
        _ body: ([any IngestSession]) async throws -> Result
    ) async throws -> Result {
        func nest(_ sessions: [any IngestSession]) async throws -> Result {
            if sessions.count >= count { return try await body(sessions) }
            return try await withIngestSession { try await nest(sessions + [$0]) }
        }
        return try await nest([])
    }
}

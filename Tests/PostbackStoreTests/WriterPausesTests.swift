import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// The SQLite writer's pauses, which the verifiers go on through: ingest settles dedup keys as a
/// transaction begins, or as its first transaction takes the recent level's filters read beside
/// it, not at its commit (``SQLiteWriter``'s `settleIfDue`), and copies of postbacks whose keys
/// that settle moved are still duplicates, while the keys the transaction claims stay in the
/// recent level (the threshold is lowered so that every transaction settles every range); the
/// hand-off of prepared batches to the writer grows with the store.
@Suite("The SQLite writer's pauses: the settle as a transaction begins, the hand-off")
struct WriterPausesTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("writer-pauses")
    }

    /// The postbacks numbered `indices`, verified, in batches of 64.
    private func batches(_ name: String, _ indices: [Int]) async throws -> [VerifiedBatch] {
        try await NumberedPostbacks.verified(try directory.write(name, try NumberedPostbacks.lines(indices)))
    }

    /// A store holding postbacks 0..<300, their keys in the recent level.
    private func store(_ name: String) async throws -> String {
        let store = try await TestStore.make(.sqlite, in: directory, name: name)
        guard case .sqlite(let path) = store.location else { throw CancellationError() }
        let summaries = try await write([try await batches("\(name)-base.jsonl", Array(0..<300))], into: path)
        #expect(summaries.map(\.accepted) == [300])
        #expect(try levels(path) == (300, 0))
        return path
    }

    /// Writes each of `transactions` in a transaction of one session, which settles everything
    /// recent whenever it settles, and returns each commit's summary.
    private func write(
        _ transactions: [[VerifiedBatch]],
        into path: String,
        preload: Bool = false,
        settling: Bool = false
    ) async throws -> [IngestSummary] {
        let store = try SQLiteStore(path: path, access: .ingest)
        defer { store.close() }
        let context = BatchContext(
            runID: 0,
            rule: ReceivedTimeRule(fixed: UTCInstant(iso8601: "2026-11-29T09:00:00.000Z")),
            storedSource: { _ in "settle.jsonl" }
        )
        let settleAll: @Sendable (Int64) -> Int64 = { _ in -1 }
        return try await store.withIngestSession(
            preload: preload ? RecentKeysPreload(path: path) : nil,
            settleThreshold: settling ? settleAll : DedupLevels.threshold(storeSize:)
        ) { session in
            var summaries: [IngestSummary] = []
            for transaction in transactions {
                for batch in transaction { _ = try await session.write(batch, context: context) }
                summaries.append(try await session.commit())
            }
            return summaries
        }
    }

    /// The keys each level holds.
    private func levels(_ path: String) throws -> (recent: Int, settled: Int) {
        (try DatabaseDump.count("dedup_recent", in: path), try DatabaseDump.count("dedup_settled", in: path))
    }

    @Test("a transaction settles as it begins: copies of the keys it moved are duplicates, its own keys stay recent")
    func settlesAsItBegins() async throws {
        let path = try await store("begins")
        // Two transactions: new postbacks 300..<350; then copies of every stored one and of the
        // first transaction's, and new ones 350..<400. Each settles what came before it.
        let first = try await batches("first.jsonl", Array(300..<350))
        let second = try await batches("second.jsonl", Array(0..<350) + Array(350..<400))
        let summaries = try await write([first, second], into: path, settling: true)
        #expect(summaries.map(\.accepted) == [50, 50])
        #expect(summaries.map(\.duplicates) == [0, 350])
        #expect(try levels(path) == (50, 350))
        #expect(try await CheckJob.run(.sqlite(path: path)).engine.outcome == .sound)

        // A store that never settled holds the same postbacks.
        let plain = try await store("plain")
        _ = try await write([first, second], into: plain)
        #expect(try levels(plain) == (400, 0))
        #expect(try DatabaseDump.rows(of: path) == DatabaseDump.rows(of: plain))
    }

    @Test("the writer's hand-off grows with the store: eight batches in a new store, 128 from 8 M postbacks")
    func handoffGrowsWithTheStore() async throws {
        let store = try SQLiteStore(path: try await store("handoff"), access: .ingest)
        defer { store.close() }
        #expect(try await store.withIngestSession(preload: nil) { $0.handoffBatches } == 8)
        let sizes: [Int64] = [0, 524_288, 1_000_000, 8_388_608, 60_000_000]
        #expect(sizes.map(SQLiteStore.ingestHandoffBatches(storeSize:)) == [8, 8, 15, 128, 128])
    }

    @Test("a first transaction settles once it takes the filters read beside it, or at its commit")
    func settlesWithTheReadFilters() async throws {
        let path = try await store("read")
        let copies = try await batches("copies.jsonl", Array(0..<300) + Array(300..<400))
        let summaries = try await write([copies], into: path, preload: true, settling: true)
        #expect(summaries.map(\.accepted) == [100])
        #expect(summaries.map(\.duplicates) == [300])
        // Everything before the settle is settled; where the read came at the commit, the
        // transaction's own keys were too.
        let (recent, settled) = try levels(path)
        #expect(recent + settled == 400)
        #expect(settled >= 300)
        #expect(try await CheckJob.run(.sqlite(path: path)).engine.outcome == .sound)
    }
}

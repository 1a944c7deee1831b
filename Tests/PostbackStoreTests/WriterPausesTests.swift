import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// The SQLite writer's pauses, which the verifiers go on through: ingest settles dedup keys as a
/// transaction begins, or as its first transaction takes the recent level's filters read beside
/// it (at its commit only when the read ends there), and copies of postbacks whose keys that
/// settle moved are still duplicates, while the keys the transaction claims after it stay in
/// the recent level (the threshold is lowered so that every transaction settles every range);
/// the hand-off of prepared batches to the writer grows with the store.
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
        let summaries = try await write(
            [.batches(try await batches("\(name)-base.jsonl", Array(0..<300))), .commit],
            into: path
        )
        #expect(summaries.map(\.accepted) == [300])
        #expect(try levels(path) == (300, 0))
        return path
    }

    /// What a session does, in order.
    private enum Step {
        case batches([VerifiedBatch])
        case commit
        case then(() async throws -> Void)
    }

    /// Runs `steps` in one session, which settles everything recent whenever it settles when
    /// `settling`, and returns each commit's summary.
    private func write(
        _ steps: [Step],
        into path: String,
        preload: RecentKeysPreload? = nil,
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
            preload: preload,
            settleThreshold: settling ? settleAll : DedupLevels.threshold(storeSize:)
        ) { session in
            var summaries: [IngestSummary] = []
            for step in steps {
                switch step {
                case .batches(let batches):
                    for batch in batches { _ = try await session.write(batch, context: context) }
                case .commit: summaries.append(try await session.commit())
                case .then(let body): try await body()
                }
            }
            return summaries
        }
    }

    /// The keys each level holds.
    private func levels(_ path: String) throws -> (recent: Int, settled: Int) {
        (try DatabaseDump.count("dedup_recent", in: path), try DatabaseDump.count("dedup_settled", in: path))
    }

    /// The rows of `path` are those of a store of postbacks 0..<300 that was given `batches`
    /// and never settled.
    private func expectRowsOfAStoreNeverSettled(_ path: String, given batches: [[VerifiedBatch]]) async throws {
        let plain = try await store("\(UUID().uuidString)-plain")
        _ = try await write(batches.flatMap { [Step.batches($0), .commit] }, into: plain)
        #expect(try levels(plain).settled == 0)
        #expect(try DatabaseDump.rows(of: path) == DatabaseDump.rows(of: plain))
    }

    @Test("a transaction settles as it begins: copies of the keys it moved are duplicates, its own keys stay recent")
    func settlesAsItBegins() async throws {
        let path = try await store("begins")
        // Two transactions: new postbacks 300..<350; then copies of every stored one and of the
        // first transaction's, and new ones 350..<400. Each settles what came before it.
        let first = try await batches("first.jsonl", Array(300..<350))
        let second = try await batches("second.jsonl", Array(0..<350) + Array(350..<400))
        let summaries = try await write(
            [.batches(first), .commit, .batches(second), .commit],
            into: path,
            settling: true
        )
        #expect(summaries.map(\.accepted) == [50, 50])
        #expect(summaries.map(\.duplicates) == [0, 350])
        #expect(try levels(path) == (50, 350))
        #expect(try await CheckJob.run(.sqlite(path: path)).engine.outcome == .sound)
        try await expectRowsOfAStoreNeverSettled(path, given: [first, second])
    }

    @Test(
        "the first transaction settles as it takes the filters read beside it: copies of keys it claimed at once before are duplicates"
    )
    func settlesAsItTakesTheReadFilters() async throws {
        let path = try await store("taken")
        // New postbacks 300..<400, claimed at once while the read waits; then copies of them
        // and of the stored ones, and new ones 400..<450. The settle, as the filters are taken,
        // moves all 400 keys: the copies are found through the settled filter, read again.
        let before = try await batches("before.jsonl", Array(300..<400))
        let after = try await batches("after.jsonl", Array(300..<400) + Array(0..<300) + Array(400..<450))
        let gate = DispatchSemaphore(value: 0)
        let preload = RecentKeysPreload(path: path, before: { gate.wait() })
        let summaries = try await write(
            [
                .batches(before),
                .then {
                    #expect(preload.ifEnded() == nil)
                    gate.signal()
                    if case .failure(let error) = preload.wait() { throw error }
                },
                .batches(after), .commit,
            ],
            into: path,
            preload: preload,
            settling: true
        )
        #expect(summaries.map(\.accepted) == [150])
        #expect(summaries.map(\.duplicates) == [400])
        #expect(try levels(path) == (50, 400))
        #expect(try await CheckJob.run(.sqlite(path: path)).engine.outcome == .sound)
        try await expectRowsOfAStoreNeverSettled(path, given: [before + after])
    }

    @Test("a first transaction whose read ends only at its commit settles there, after its claims")
    func settlesAtTheCommitWhenTheReadEndsThere() async throws {
        let path = try await store("commit")
        let copies = try await batches("copies.jsonl", Array(0..<300) + Array(300..<400))
        let gate = DispatchSemaphore(value: 0)
        let preload = RecentKeysPreload(path: path, before: { gate.wait() })
        let summaries = try await write(
            [
                .batches(copies),
                .then {
                    #expect(preload.ifEnded() == nil)
                    // The commit waits for the read, which goes on once the session commits.
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { gate.signal() }
                },
                .commit,
            ],
            into: path,
            preload: preload,
            settling: true
        )
        #expect(summaries.map(\.accepted) == [100])
        #expect(summaries.map(\.duplicates) == [300])
        #expect(try levels(path) == (0, 400))
        #expect(try await CheckJob.run(.sqlite(path: path)).engine.outcome == .sound)
    }

    @Test(
        "the writer's hand-off grows with the store: eight batches in a new store, one for each 65,536 postbacks to 128"
    )
    func handoffGrowsWithTheStore() async throws {
        let path = try await store("handoff")
        func handoff() async throws -> Int {
            let store = try SQLiteStore(path: path, access: .ingest)
            defer { store.close() }
            return try await store.withIngestSession(preload: nil) { $0.handoffBatches }
        }
        #expect(try await handoff() == 8)
        // The session asks the store its size: the last postback's id.
        let queue = try PostbackDatabase.open(path)
        try await queue.write { db in try db.execute(sql: "UPDATE postbacks SET id = 1048576 WHERE id = 300") }
        #expect(try await handoff() == 16)
        let sizes: [Int64] = [0, 524_288, 1_000_000, 8_388_608, 60_000_000]
        #expect(sizes.map(SQLiteStore.ingestHandoffBatches(storeSize:)) == [8, 8, 15, 128, 128])
    }
}

import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// SQLite's dedup keys in two levels (``DedupLevels``): settling moves keys without changing what
/// is a duplicate, and the triggers keep one postback per key whichever level holds it.
@Suite("SQLite's dedup keys in two levels")
struct DedupLevelsTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("dedup-levels")
    }

    private func corpus(
        _ name: String,
        _ range: Range<Int>,
        copiesOf copies: [Int] = [],
        fine: Int = 20
    ) throws
        -> String
    {
        var lines: [String] = []
        for index in Array(range) + copies {
            let transactionID = String(format: "00000000-0000-4000-8000-%012d", index)
            let postback = SamplePostback.make(
                .v4_0,
                transactionID: transactionID,
                conversionValue: .fine(copies.contains(index) && index % 2 == 0 ? fine : 20)
            )
            lines.append(try TestKeys.signer.signed(postback).jsonText())
        }
        return try directory.write(name, lines.joined(separator: "\n"))
    }

    private func ingest(_ path: String, into store: TestStore) async throws -> IngestSummary {
        try await IngestJob(
            paths: [path],
            location: store.location,
            keyRing: try TestKeys.ring,
            receivedAt: UTCInstant(iso8601: "2026-11-29T08:00:00.000Z"),
            width: 2
        ).run(errors: .memory(), showProgress: false)
    }

    private func queue(_ store: TestStore) throws -> DatabaseQueue {
        guard case .sqlite(let path) = store.location else { throw CancellationError() }
        return try PostbackDatabase.open(path)
    }

    /// Each level's keys, as `level id` lines, and `postbacks`' own, as `id` lines.
    private func levels(_ store: TestStore) async throws -> (recent: Int, settled: Int, agree: Bool) {
        let recent = try await store.count("dedup_recent")
        let settled = try await store.count("dedup_settled")
        let unmatched = try await store.count(
            "postbacks p",
            where: """
                NOT EXISTS (SELECT 1 FROM dedup_recent r WHERE r.dedup_key = p.dedup_key AND r.postback_id = p.id)
                AND NOT EXISTS (SELECT 1 FROM dedup_settled s WHERE s.dedup_key = p.dedup_key AND s.postback_id = p.id)
                """
        )
        let postbacks = try await store.count("postbacks")
        return (recent, settled, unmatched == 0 && recent + settled == postbacks)
    }

    @Test("settled keys are duplicates as recent ones are: the stored rows are those of a store never settled")
    func settlingChangesNothingStored() async throws {
        let first = try corpus("first.jsonl", 0..<300)
        // New postbacks, and copies of some of the first: half with the same bytes (sightings),
        // half with another conversion value (conflicts).
        let second = try corpus("second.jsonl", 300..<500, copiesOf: Array(stride(from: 0, to: 300, by: 3)), fine: 41)
        let settled = try await TestStore.make(.sqlite, in: directory, name: "settled")
        let plain = try await TestStore.make(.sqlite, in: directory, name: "plain")

        #expect(try await ingest(first, into: settled).accepted == 300)
        #expect(try await levels(settled) == (300, 0, true))
        let moved = try await queue(settled).write { db in try DedupLevels.settleAll(db) }
        #expect(moved == 300)
        #expect(try await levels(settled) == (0, 300, true))
        let summary = try await ingest(second, into: settled)
        #expect(summary.accepted == 200)
        #expect(summary.duplicates == 100)
        #expect(try await levels(settled) == (200, 300, true))

        _ = try await ingest(first, into: plain)
        _ = try await ingest(second, into: plain)
        let expected = try await plain.dump()
        #expect(expected["sightings"]?.count == 100)
        #expect(expected["conflicts"]?.count == 50)
        #expect(try await settled.dump() == expected)

        // A re-read of both files is all copies, whichever level holds the key.
        let again = try await ingest(first, into: settled)
        #expect(again.accepted == 0)
        #expect(again.duplicates == 300)
    }

    @Test(
        "a key is stored once in either level, a delete or change of a key follows, and check finds a row the levels miss"
    )
    func levelsFollowPostbacks() async throws {
        let store = try await TestStore.make(.sqlite, in: directory, name: "triggers")
        _ = try await ingest(try corpus("a.jsonl", 0..<10), into: store)
        let queue = try queue(store)
        try await queue.write { db in
            _ = try DedupLevels.settle(db, range: 0)
            _ = try DedupLevels.settleAll(db)
        }
        _ = try await ingest(try corpus("b.jsonl", 10..<20), into: store)
        #expect(try await levels(store) == (10, 10, true))
        #expect(try await CheckJob.run(store.location).engine.outcome == .sound)

        // A filter that lost its keys would let a copy of a settled key be stored: check says so.
        let held = try await store.rows("SELECT key_range, bits FROM dedup_settled_filter ORDER BY key_range")
        try await store.execute("UPDATE dedup_settled_filter SET bits = zeroblob(length(bits))")
        let lost = try await CheckJob.run(store.location)
        #expect(lost.engine.outcome == .problems)
        #expect(lost.engine.messages.count == 10)
        #expect(lost.engine.messages.allSatisfy { $0.hasSuffix("is not in its range's filter") })
        try await queue.write { db in
            for range in 0..<16 { try DedupFilter.rebuild(db, range: range) }
        }
        #expect(try await store.rows("SELECT key_range, bits FROM dedup_settled_filter ORDER BY key_range") == held)
        #expect(try await CheckJob.run(store.location).engine.outcome == .sound)

        // The recent level's primary key refuses a key twice; settling refuses a key in both.
        #expect(throws: DatabaseError.self) {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO dedup_recent SELECT dedup_key, 99 FROM dedup_recent LIMIT 1")
            }
        }
        #expect(throws: DatabaseError.self) {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO dedup_recent SELECT dedup_key, postback_id FROM dedup_settled LIMIT 1")
                try DedupLevels.settleAll(db)
            }
        }
        #expect(try await levels(store) == (10, 10, true))

        // A deleted postback's key leaves its level; a changed key moves to the recent level.
        try await queue.write { db in
            try db.execute(sql: "DELETE FROM postbacks WHERE id = (SELECT min(postback_id) FROM dedup_settled)")
            try db.execute(sql: "DELETE FROM postbacks WHERE id = (SELECT min(postback_id) FROM dedup_recent)")
            try db.execute(
                sql:
                    "UPDATE postbacks SET dedup_key = x'00112233445566778899aabbccddeeff' WHERE id = (SELECT max(postback_id) FROM dedup_settled)"
            )
        }
        #expect(try await levels(store) == (10, 8, true))
        #expect(try await store.count("dedup_recent", where: "dedup_key = x'00112233445566778899aabbccddeeff'") == 1)
        // A changed key that a level holds is refused.
        #expect(throws: DatabaseError.self) {
            try queue.write { db in
                try db.execute(
                    sql:
                        "UPDATE postbacks SET dedup_key = (SELECT min(dedup_key) FROM dedup_settled) WHERE id = (SELECT min(postback_id) FROM dedup_recent)"
                )
            }
        }

        // A row written past the writer (here by SQL) with a stored key: check names it.
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO postbacks (kind, key_space, ad_network_id, transaction_id, postback_sequence_index,
                        app_id, test_mode, development, key_name, received_at, received_at_source, raw, raw_sha256,
                        source, source_index, source_line, run_id, dedup_key)
                    SELECT kind, key_space, ad_network_id, transaction_id, postback_sequence_index, app_id, 0, 0, 'k',
                        received_at, received_at_source, raw, raw_sha256, 'forged', 0, 1, run_id, dedup_key
                    FROM postbacks WHERE id = (SELECT min(postback_id) FROM dedup_settled)
                    """
            )
        }
        let report = try await CheckJob.run(store.location)
        #expect(report.engine.outcome == .problems)
        #expect(report.engine.messages.count == 1)
        #expect(report.engine.messages.first?.hasPrefix("1 postbacks rows have their dedup_key in neither") == true)
        // A level's key whose postback does not hold it is named with its row.
        try await queue.write { db in
            try db.execute(
                sql:
                    "UPDATE dedup_recent SET postback_id = postback_id + 1000 WHERE dedup_key = (SELECT min(dedup_key) FROM dedup_recent)"
            )
        }
        let named = try await CheckJob.run(store.location)
        #expect(named.engine.messages.count == 1)
        #expect(named.engine.messages.first?.contains("which does not hold it") == true)
    }

    @Test("a recent level past its share of the store is estimated and settled, fullest range first, a range at a time")
    func settleIfDue() async throws {
        let store = try await TestStore.make(.sqlite, in: directory, name: "large")
        let queue = try queue(store)
        // 1.2 M keys of no postback: the settle moves keys, it does not read postbacks.
        let keys = 1_200_000
        try await queue.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(keys))
                    INSERT INTO dedup_recent (dedup_key, postback_id) SELECT randomblob(16), i FROM n
                    """
            )
        }
        let estimate = try await queue.read { db in try DedupLevels.estimate(db) }.reduce(0, +)
        #expect(abs(estimate - Int64(keys)) < Int64(keys) / 10, "estimate \(estimate) of \(keys)")
        #expect(DedupLevels.threshold(storeSize: 0) == 1 << 20)
        #expect(DedupLevels.threshold(storeSize: 32 << 20) == 2 << 20)

        let one = try await queue.write { db in try DedupLevels.settleIfDue(db, maxRanges: 1) }
        #expect(one > keys / 20 && one < keys / 10, "one range of sixteen: \(one)")
        let rest = try await queue.write { db in try DedupLevels.settleIfDue(db) }
        let recent = try await store.count("dedup_recent")
        #expect(recent + one + rest == keys)
        #expect(recent < 1 << 20 + keys / 20, "settled down to the threshold: \(recent) left")
        #expect(recent > 1 << 20 - keys / 10, "no more than needed: \(recent) left")
        #expect(try await store.count("dedup_settled") == one + rest)
        // Below the threshold, nothing moves.
        #expect(try await queue.write { db in try DedupLevels.settleIfDue(db) } == 0)
    }

    @Test("the settled level's filter holds every key it was built of, and answers maybe for about 1 other key in 100")
    func filterHoldsItsKeys() {
        var generator = SystemRandomNumberGenerator()
        func key() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        let held = (0..<100_000).map { _ in key() }
        var builder = DedupFilter.Builder(keys: held.count)
        for key in held { key.withUnsafeBytes { builder.insert($0) } }
        let bits = builder.bits
        #expect(held.allSatisfy { key in key.withUnsafeBytes { DedupFilter.mayHold($0, inFilter: bits) } })
        let others = (0..<100_000).map { _ in key() }
        let maybes = others.filter { key in key.withUnsafeBytes { DedupFilter.mayHold($0, inFilter: bits) } }.count
        #expect(maybes < 2_000, "\(maybes) of 100,000 keys not held answered maybe")
        // A key of another length is never ruled out.
        #expect([UInt8](repeating: 7, count: 15).withUnsafeBytes { DedupFilter.mayHold($0, inFilter: bits) })
    }

    @Test("a writer's filter, read again, holds the keys another writer's settle added since")
    func filterFollowsSettles() async throws {
        let store = try await TestStore.make(.sqlite, in: directory, name: "filter")
        _ = try await ingest(try corpus("first.jsonl", 0..<50), into: store)
        let queue = try queue(store)
        try await queue.write { db in _ = try DedupLevels.settleAll(db) }
        #expect(try await store.count("dedup_settled_filter") == 16)
        func refreshed(_ filter: DedupFilter) throws -> DedupFilter {
            var filter = filter
            try queue.inDatabase { db in try filter.refresh(db) }
            return filter
        }
        var reader = try refreshed(DedupFilter())
        let settled = try await queue.read { db in try Data.fetchAll(db, sql: "SELECT dedup_key FROM dedup_settled") }
        #expect(settled.count == 50)
        #expect(settled.allSatisfy { key in key.withUnsafeBytes(reader.mayHold) })

        // Another writer stores and settles 50 more: a filter read before misses most of them,
        // read again it holds them all.
        _ = try await ingest(try corpus("second.jsonl", 50..<100), into: store)
        let added = try await queue.write { db in
            _ = try DedupLevels.settleAll(db)
            return try Data.fetchAll(db, sql: "SELECT dedup_key FROM dedup_settled").filter { !settled.contains($0) }
        }
        #expect(added.count == 50)
        #expect(added.contains { key in !key.withUnsafeBytes(reader.mayHold) })
        reader = try refreshed(reader)
        #expect(added.allSatisfy { key in key.withUnsafeBytes(reader.mayHold) })
        // Copies of both files are duplicates, through the filter.
        let again = try await ingest(try corpus("both.jsonl", 0..<100), into: store)
        #expect(again.accepted == 0)
        #expect(again.duplicates == 100)
    }

    @Test("ingest's filter of the recent level reads the level again after another connection's commit")
    func recentKeysFollowOtherWriters() async throws {
        let store = try await TestStore.make(.sqlite, in: directory, name: "recent")
        _ = try await ingest(try corpus("first.jsonl", 0..<40), into: store)
        let queue = try queue(store)
        func keys() async throws -> [RecentKeys.Key] {
            try await queue.read { db in
                try Data.fetchAll(db, sql: "SELECT dedup_key FROM dedup_recent").compactMap { key in
                    key.withUnsafeBytes(RecentKeys.Key.init)
                }
            }
        }
        // A transaction of the session: it begins, and notes the last postback as it commits.
        func begun(_ recent: RecentKeys) throws -> RecentKeys {
            var recent = recent
            try queue.inTransaction { db in
                try recent.begin(db)
                try recent.committing(db, lastID: try Int64.fetchOne(db, sql: "SELECT max(id) FROM postbacks") ?? 0)
                return .commit
            }
            return recent
        }
        var recent = try begun(RecentKeys())
        let first = try await keys()
        #expect(first.count == 40)
        #expect(first.allSatisfy { recent.find($0).mayHold })

        // Another connection stores 40 more: the next transaction's filter holds them too (the
        // keys of the postbacks after the session's last one).
        _ = try await ingest(try corpus("second.jsonl", 40..<80), into: store)
        let added = try await keys().filter { !first.contains($0) }
        #expect(added.count == 40)
        recent = try begun(recent)
        #expect(added.allSatisfy { recent.find($0).mayHold })

        // Another connection deletes the last 10 postbacks, and stores 10 others under their ids:
        // the keys after the session's last postback miss them, so the filters are read again.
        try await queue.write { db in try db.execute(sql: "DELETE FROM postbacks WHERE id > 70") }
        _ = try await ingest(try corpus("third.jsonl", 80..<90), into: store)
        #expect(try await store.count("postbacks") == 80)
        let reused = try await keys().filter { !first.contains($0) && !added.contains($0) }
        #expect(reused.count == 10)
        recent = try begun(recent)
        #expect(reused.allSatisfy { recent.find($0).mayHold })

        // A settle empties its range and the range's filter.
        let range = try #require(added.first).range
        recent.settled(range: range)
        #expect(!added.filter { $0.range == range }.contains { recent.find($0).mayHold })

        // A waiting key is found by its row id; one the level already holds fails its claim.
        let taken = try #require(first.first)
        var waiting = try begun(RecentKeys())
        let due = waiting.claim(taken, id: 1_000)
        #expect(!due)
        #expect(waiting.find(taken).waitingID == 1_000)
        func flushed() throws {
            try queue.inTransaction { db in
                try waiting.flush(db, statement: try db.makeStatement(sql: SQLiteStore.claimRecentKey))
                return .commit
            }
        }
        var refused = false
        do { try flushed() } catch is DatabaseError { refused = true }
        #expect(refused)
        #expect(try await store.count("dedup_recent") == 80)
    }
}

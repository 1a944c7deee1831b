import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Ingest's first transaction on SQLite takes the recent level's filters from a read on another
/// connection (``RecentKeysPreload``), claiming each key at once until they come: what it
/// stores, and what it finds a duplicate, are a session's that read them as it began.
@Suite("The recent level's filters read beside ingest's first transaction")
struct RecentKeysPreloadTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("recent-preload")
    }

    /// A corpus of the postbacks numbered `indices`, in that order (a number twice: a copy).
    private func corpus(_ name: String, _ indices: [Int]) throws -> String {
        try directory.write(name, try NumberedPostbacks.lines(indices))
    }

    private func verified(_ path: String) async throws -> [VerifiedBatch] {
        try await NumberedPostbacks.verified(path)
    }

    /// A store holding postbacks 0..<300, their keys in the recent level.
    private func store(_ name: String) async throws -> String {
        let store = try await TestStore.make(.sqlite, in: directory, name: name)
        let summary = try await IngestJob(
            paths: [try corpus("base.jsonl", Array(0..<300))],
            location: store.location,
            keyRing: try TestKeys.ring,
            receivedAt: UTCInstant(iso8601: "2026-11-29T08:00:00.000Z"),
            width: 2
        ).run(errors: .memory(), showProgress: false)
        #expect(summary.accepted == 300)
        guard case .sqlite(let path) = store.location else { throw CancellationError() }
        #expect(try DatabaseDump.count("dedup_recent", in: path) == 300)
        return path
    }

    /// Writes `parts` in one session's one transaction, `between` running after the first part,
    /// and commits.
    private func write(
        _ parts: [[VerifiedBatch]],
        into path: String,
        preload: RecentKeysPreload?,
        between: () async throws -> Void = {}
    ) async throws -> IngestSummary {
        let store = try SQLiteStore(path: path, access: .ingest)
        defer { store.close() }
        let context = BatchContext(
            runID: 0,
            rule: ReceivedTimeRule(fixed: UTCInstant(iso8601: "2026-11-29T09:00:00.000Z")),
            storedSource: { _ in "copies.jsonl" }
        )
        return try await store.withIngestSession(preload: preload) { session in
            for (index, part) in parts.enumerated() {
                if index == 1 { try await between() }
                for batch in part { _ = try await session.write(batch, context: context) }
            }
            return try await session.commit()
        }
    }

    @Test(
        "claimed at once until the filters come, then in key order: the rows and duplicates of a session that read them first"
    )
    func claimsAtOnceUntilTheFiltersCome() async throws {
        // New postbacks, and copies of ones the store holds; then more, and copies of the
        // first part's new ones (claimed at once, in this transaction) and of the store's.
        let first = try await verified(try corpus("first.jsonl", Array(300..<400) + Array(0..<50)))
        let second = try await verified(
            try corpus("second.jsonl", Array(400..<500) + Array(300..<350) + Array(250..<300))
        )

        let gate = DispatchSemaphore(value: 0)
        let preloaded = try await store("preloaded")
        let preload = RecentKeysPreload(path: preloaded, before: { gate.wait() })
        let summary = try await write([first, second], into: preloaded, preload: preload) {
            // The first part went in while the read waited: each key claimed at once.
            #expect(preload.ifEnded() == nil)
            gate.signal()
            if case .failure(let error) = preload.wait() { throw error }
        }
        #expect(summary.accepted == 200)
        #expect(summary.duplicates == 150)

        let read = try await store("read")
        let plain = try await write([first, second], into: read, preload: nil)
        #expect(plain.accepted == summary.accepted)
        #expect(plain.duplicates == summary.duplicates)
        #expect(try DatabaseDump.rows(of: preloaded) == DatabaseDump.rows(of: read))
        #expect(try DatabaseDump.count("dedup_recent", in: preloaded) == 500)
    }

    @Test("taken at the commit when the read ends after the last write: the same rows")
    func takenAtTheCommit() async throws {
        let first = try await verified(try corpus("late.jsonl", Array(300..<400) + Array(0..<50) + Array(300..<320)))
        let gate = DispatchSemaphore(value: 0)
        let preloaded = try await store("late-preloaded")
        let preload = RecentKeysPreload(path: preloaded, before: { gate.wait() })
        let summary = try await write([first, []], into: preloaded, preload: preload) {
            #expect(preload.ifEnded() == nil)
            // The commit waits for the read, which goes on once the session commits.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { gate.signal() }
        }
        #expect(summary.accepted == 100)
        #expect(summary.duplicates == 70)
        let read = try await store("late-read")
        _ = try await write([first], into: read, preload: nil)
        #expect(try DatabaseDump.rows(of: preloaded) == DatabaseDump.rows(of: read))
    }

    @Test("a new store: the read finds no postback, and the transaction reads the level when it takes it")
    func newStore() async throws {
        let store = try await TestStore.make(.sqlite, in: directory, name: "new")
        guard case .sqlite(let path) = store.location else { throw CancellationError() }
        let batches = try await verified(try corpus("new.jsonl", Array(0..<200) + Array(0..<40)))
        // Made and migrated, as ingest's store is before its session starts the read.
        try SQLiteStore(path: path).close()
        let preload = RecentKeysPreload(path: path)
        if case .failure(let error) = preload.wait() { throw error }
        let summary = try await write([batches], into: path, preload: preload)
        #expect(summary.accepted == 200)
        #expect(summary.duplicates == 40)
        #expect(try DatabaseDump.count("dedup_recent", in: path) == 200)
    }

    @Test("a session that ends without writing stops the read")
    func cancelled() async throws {
        let path = try await store("cancelled")
        let gate = DispatchSemaphore(value: 0)
        let preload = RecentKeysPreload(path: path, before: { gate.wait() })
        let store = try SQLiteStore(path: path, access: .ingest)
        defer { store.close() }
        // The session's end cancels the read and waits for it: let it go on a moment later.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { gate.signal() }
        try await store.withIngestSession(preload: preload) { _ in }
        let outcome = try #require(preload.ifEnded())
        #expect(throws: CancellationError.self) { try outcome.get() }
    }

    @Test("postbacks another connection stored after the read are duplicates, as are those stored under a reused id")
    func catchesUpWithOtherWriters() async throws {
        for reusesLastID in [false, true] {
            let path = try await store("others-\(reusesLastID)")
            let preload = RecentKeysPreload(path: path)
            if case .failure(let error) = preload.wait() { throw error }
            if reusesLastID {
                // The read's last postback goes, and another takes its id: its key is not the
                // one the read noted, so the filters are read again in the transaction.
                try await DatabaseQueue(path: path).write { db in
                    try db.execute(sql: "DELETE FROM postbacks WHERE id = 300")
                }
            }
            let others = try await IngestJob(
                paths: [try corpus("others-\(reusesLastID).jsonl", Array(600..<700))],
                location: .sqlite(path: path),
                keyRing: try TestKeys.ring,
                width: 2
            ).run(errors: .memory(), showProgress: false)
            #expect(others.accepted == 100)
            if reusesLastID {
                #expect(try DatabaseDump.count("postbacks", in: path, where: "id = 300") == 1)
            }
            // Copies of what the other connection stored, taken in this session's first
            // transaction: a filter without their keys would let each claim wait, and the
            // transaction fail as it writes them.
            let copies = try await verified(
                try corpus("copies-\(reusesLastID).jsonl", Array(600..<650) + Array(700..<750))
            )
            let summary = try await write([copies], into: path, preload: preload)
            #expect(summary.accepted == 50)
            #expect(summary.duplicates == 50)
        }
    }
}

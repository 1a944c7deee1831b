import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// What an ingest session promises, from the same test code against every engine: what it
/// counts is what the store holds, whether it commits or rolls back.
@Suite("The ingest session's contract, on every engine")
struct IngestSessionContractTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("session-contract")
    }

    @Test(
        "a session that writes past PostgreSQL's flush size, then rolls back, reports what the store holds",
        arguments: TestEngine.available
    )
    func rollbackAfterFlush(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        // Valid postbacks first (in the flushed part), then enough unreadable lines to pass
        // the flush size, and more after it that stay pending.
        var lines: [String] = []
        for index in 0..<20 {
            let transactionID = String(format: "00000000-0000-4000-8000-%012d", index)
            lines.append(
                try TestKeys.signer.signed(SamplePostback.make(.v4_0, transactionID: transactionID)).jsonText()
            )
        }
        for index in 0..<(PostgresStore.maximumPendingEntries + 1_000) { lines.append("not a postback \(index)") }
        let path = try directory.write("corpus.jsonl", lines.joined(separator: "\n"))
        let (files, _) = try InputPaths.expand([path])
        var batches: [VerifiedBatch] = []
        try await VerificationPipeline(keyRing: try TestKeys.ring, width: 2, hashingRaw: true)
            .run(EntryReader(files: files)) { batches.append($0) }

        let (kept, afterRollback) = try await PostbackStores.with(store.location, access: .ingest) { shared in
            try await shared.withIngestSession { session in
                let context = BatchContext(runID: 0, rule: ReceivedTimeRule(fixed: nil), storedSource: { $0 })
                for batch in batches { _ = try await session.write(batch, context: context) }
                let kept = await session.rollback()
                return (kept, try await session.commit())
            }
        }
        #expect(kept.read == kept.accepted + kept.duplicates + kept.quarantined)
        #expect(kept.accepted == (try await store.count("postbacks")))
        #expect(kept.quarantined == (try await store.count("quarantine")))
        #expect(afterRollback.read == 0, "what a rollback reported is not reported again")
        switch engine {
        case .sqlite:
            // One transaction across the session: nothing is kept.
            #expect(kept.read == 0)
        case .postgres:
            // A flush committed the first entries: they stay, counted.
            #expect(kept.read >= PostgresStore.maximumPendingEntries)
            #expect(kept.read < lines.count)
            #expect(kept.accepted == 20)
        }
    }

    @Test(
        "three writers store the rows one writer stores: the first copy of each key in the input, its copies, the quarantine",
        arguments: TestEngine.available
    )
    func severalWriters(_ engine: TestEngine) async throws {
        var lines: [String] = []
        for index in 0..<600 {
            let transactionID = String(format: "00000000-0000-4000-8000-%012d", index)
            lines.append(
                try TestKeys.signer.signed(SamplePostback.make(.v4_0, transactionID: transactionID)).jsonText()
            )
            if index % 7 == 0 { lines.append("not a postback \(index)") }
        }
        // Copies of every fifth, later in the input: each is a sighting of the first.
        lines += stride(from: 0, to: 600, by: 5).map { lines[$0] }
        let path = try directory.write("copies.jsonl", lines.joined(separator: "\n"))
        let one = try await TestStore.make(engine, in: directory, name: "one")
        let three = try await TestStore.make(engine, in: directory, name: "three")
        var summaries: [IngestSummary] = []
        for (store, writers) in [(one, 1), (three, 3)] {
            let job = IngestJob(
                paths: [path],
                location: store.location,
                keyRing: try TestKeys.ring,
                width: 2,
                entriesPerTransaction: 100,
                writers: writers
            )
            #expect(job.writerCount(store.location) == (engine == .postgres ? writers : 1))
            summaries.append(try await job.run(errors: .memory(), showProgress: false))
        }
        #expect(summaries[0].accepted == 600)
        #expect(summaries[1].accepted == 600)
        #expect(summaries[0].duplicates == summaries[1].duplicates)
        #expect(summaries[0].quarantined == summaries[1].quarantined)
        let queries = [
            "SELECT transaction_id, source_index, source_line, raw_sha256 FROM postbacks ORDER BY transaction_id",
            "SELECT source_index, source_line, raw_sha256, conflict FROM sightings ORDER BY source_index",
            "SELECT source_index, source_line, reason FROM quarantine ORDER BY source_index",
        ]
        for query in queries {
            let expected = try await one.rows(query)
            #expect(!expected.isEmpty)
            #expect(try await three.rows(query) == expected, "\(query)")
        }
    }
}

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
}

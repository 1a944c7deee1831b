import Foundation
import PostbackTestSupport
import Testing

@testable import PostbackKit
@testable import PostbackStore

/// The storage guarantees, from the same test code against every engine: SQLite always, and
/// PostgreSQL when `POSTBACKD_TEST_POSTGRES_URL` names a server (`scripts/postgres-dev.sh`).
@Suite("Storage conformance, on every engine")
struct StorageConformanceTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("conformance")
    }

    private func signed(_ postback: SKANPostback, extra: [(name: String, json: String)] = []) throws -> String {
        try TestKeys.signer.signed(postback).jsonText(extraFields: extra)
    }

    @Test(
        "the PostgreSQL cases run",
        .enabled(if: TestEngine.postgresURL == nil || ProcessInfo.processInfo.environment["CI"] != nil, "they do")
    )
    func postgresCasesRun() {
        // On a machine without a server the PostgreSQL cases are skipped, and this says so;
        // CI starts one, and fails here if it did not.
        if TestEngine.postgresURL == nil {
            print("notice: " + TestEngine.skipNotice)
        }
        #expect(
            ProcessInfo.processInfo.environment["CI"] == nil || TestEngine.postgresURL != nil,
            "CI must run the PostgreSQL cases: \(TestEngine.skipNotice)"
        )
    }

    @Test(
        "tasks sharing one store each get a transaction of their own: one rolled back takes no other's writes with it",
        arguments: TestEngine.available
    )
    func transactionsOfTasksStayApart(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        struct Abandoned: Error {}
        try await PostbackStores.with(store.location) { shared in
            let (begun, signal) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Writes, lets the other task run while its transaction is open, then fails
                    // (PostgreSQL's store names the transaction that failed around the error).
                    await #expect(throws: (any Error).self) {
                        try await shared.withSQL("abandon", .write) { sql -> Void in
                            try await sql.execute(
                                ExportCursorsSQL.save(
                                    ExportCursor("sqlite:1"),
                                    consumer: "abandoned",
                                    table: .postbacks
                                )
                            )
                            signal.yield()
                            try await Task.sleep(for: .milliseconds(300))
                            throw Abandoned()
                        }
                    }
                }
                group.addTask {
                    for await _ in begun { break }
                    try await shared.withSQL("keep", .write) { sql in
                        try await sql.execute(
                            ExportCursorsSQL.save(ExportCursor("sqlite:2"), consumer: "kept", table: .postbacks)
                        )
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await shared.exportCursor(consumer: "kept", table: .postbacks) != nil)
            #expect(try await shared.exportCursor(consumer: "abandoned", table: .postbacks) == nil)
        }
    }

    @Test(
        "a valid postback whose dedup digest another key already holds is quarantined, never a duplicate",
        arguments: TestEngine.available
    )
    func dedupDigestCollision(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let first = try signed(SamplePostback.make(.v4_0))
        let second = try signed(SamplePostback.make(.v4_0, transactionID: "00000000-0000-4000-8000-000000000001"))
        #expect(try await ingest([try directory.write("first.json", first)], into: database).accepted == 1)
        // Forge the collision no one can compute: give the stored postback the second one's digest.
        let digest = DedupKeyDigest.digest(
            kind: "skan",
            keySpace: "production",
            adNetworkID: SamplePostback.make(.v4_0).adNetworkID,
            transactionID: "00000000-0000-4000-8000-000000000001",
            sequenceIndex: 0
        )
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        try await store.execute(
            "UPDATE postbacks SET dedup_key = " + (engine == .sqlite ? "X'\(hex)'" : "'\\x\(hex)'::bytea")
        )
        let summary = try await ingest([try directory.write("second.json", second)], into: database)
        #expect(summary.accepted == 0)
        #expect(summary.duplicates == 0)
        #expect(summary.quarantined == 1)
        #expect(
            try await store.strings("SELECT field || ' ' || verdict FROM quarantine")
                == ["dedup_key unsupported"]
        )
        #expect(try await store.count("sightings") == 0)
    }

    @Test(
        "duplicates within one file: the first copy is stored, every other copy is a sighting",
        arguments: TestEngine.available
    )
    func dedupWithinFile(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let postback = try signed(SamplePostback.make(.v3_0))
        let forwarded = try signed(SamplePostback.make(.v3_0), extra: [("timestamp", "1795000000")])
        let path = try directory.write("day.jsonl", [postback, postback, forwarded].joined(separator: "\n"))
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 1)
        #expect(summary.duplicates == 2)
        #expect(summary.conflicts == 0, "a forwarder's timestamp does not make a conflict")
        #expect(try await store.count("postbacks") == 1)
        #expect(try await store.count("sightings") == 2)
        #expect(try await store.strings("SELECT source_index FROM postbacks") == ["0"])
        #expect(
            try await store.strings(
                "SELECT CASE WHEN raw IS NULL THEN 'same bytes' ELSE 'other bytes' END FROM sightings ORDER BY source_index"
            ) == ["same bytes", "other bytes"]
        )
    }

    @Test("duplicates across runs, and re-ingesting the same input adds nothing", arguments: TestEngine.available)
    func dedupAcrossRuns(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let postbacks = try (0..<5).map {
            try signed(SamplePostback.make(.v4_0, transactionID: "00000000-0000-4000-8000-00000000000\($0)"))
        }
        let first = try directory.write("a.jsonl", postbacks[0..<3].joined(separator: "\n"))
        let second = try directory.write("b.json", "[" + postbacks[2..<5].joined(separator: ",") + "]")
        let run1 = try await ingest([first], into: database)
        #expect(run1.accepted == 3)
        let run2 = try await ingest([second], into: database)
        #expect(run2.accepted == 2)
        #expect(run2.duplicates == 1)
        let before = try await store.dump()
        let again = try await ingest([first, second], into: database)
        #expect(again.accepted == 0)
        #expect(again.duplicates == 6)
        #expect(try await store.dump() == before, "re-ingesting changes nothing")
        #expect(try await store.count("ingest_runs", where: "status = 'completed'") == 3)
    }

    @Test("the three 4.0 postbacks of one transaction are kept apart", arguments: TestEngine.available)
    func sequenceIndexes(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let lines = try (0...2).map { index in
            try signed(
                SamplePostback.make(
                    .v4_0,
                    withOptional: index == 0,
                    conversionValue: index == 0 ? .fine(5) : .coarse(.low),
                    sequenceIndex: index
                )
            )
        }
        let summary = try await ingest(
            [try directory.write("windows.jsonl", lines.joined(separator: "\n"))],
            into: database
        )
        #expect(summary.accepted == 3)
        #expect(
            try await store.strings("SELECT postback_sequence_index FROM postbacks ORDER BY source_index")
                == ["0", "1", "2"]
        )
        #expect(
            Set(try await store.strings("SELECT transaction_id FROM postbacks")).count
                == 1
        )
    }

    @Test(
        "a forged copy of a stored transaction is quarantined and the genuine row is untouched",
        arguments: TestEngine.available
    )
    func forgedCopyAfter(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let genuine = SamplePostback.make(.v3_0)
        try await ingest([try directory.write("genuine.json", try signed(genuine))], into: database)
        let before = try await store.dump()["postbacks"]
        var forged = try TestKeys.signer.signed(genuine)
        forged.appID = 999  // a signed field changed after signing
        forged.conversionValue = .fine(63)
        let summary = try await ingest([try directory.write("forged.json", forged.jsonText())], into: database)
        #expect(summary.quarantined == 1)
        #expect(summary.invalid == 1)
        #expect(summary.duplicates == 0)
        #expect(try await store.dump()["postbacks"] == before)
        #expect(try await store.count("sightings") == 0)
    }

    @Test("a forged postback arriving before the genuine one does not block it", arguments: TestEngine.available)
    func forgedFirst(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let genuine = try TestKeys.signer.signed(SamplePostback.make(.v4_0))
        var forged = genuine
        forged.attributionSignature = try TestKeys.signer.signed(
            SamplePostback.make(.v4_0, transactionID: "ffffffff-0000-4000-8000-000000000000")
        ).attributionSignature
        let path = try directory.write("race.jsonl", forged.jsonText() + "\n" + genuine.jsonText())
        let summary = try await ingest([path], into: database)
        #expect(summary.quarantined == 1)
        #expect(summary.accepted == 1)
        #expect(try await store.strings("SELECT source_line FROM postbacks") == ["2"])
    }

    @Test("a test-mode copy made from a genuine postback does not suppress it", arguments: TestEngine.available)
    func testModeForgery(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        // Anyone can add "source-app-id": 0 to a postback signed without a source app: it
        // then verifies as test mode. It must not claim the production key.
        let genuine = try TestKeys.signer.signed(SamplePostback.make(.v3_0, withOptional: false))
        var forged = genuine
        forged.sourceAppID = 0
        let path = try directory.write("copies.jsonl", forged.jsonText() + "\n" + genuine.jsonText())
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 2)
        #expect(summary.testMode == 1)
        #expect(
            try await store.strings("SELECT key_space FROM postbacks ORDER BY source_index") == ["test", "production"]
        )
    }

    @Test(
        "a copy whose unsigned values differ is a conflict, recorded with both values",
        arguments: TestEngine.available
    )
    func conflicts(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        var postback = SamplePostback.make(.v4_0, conversionValue: .fine(20))
        postback.countryCode = "US"
        let original = try signed(postback)
        postback.conversionValue = .fine(21)
        let changedValue = try signed(postback)
        postback.conversionValue = .fine(20)
        postback.countryCode = "DE"
        let changedCountry = try signed(postback)
        let path = try directory.write(
            "conflicts.jsonl",
            [original, changedValue, changedCountry].joined(separator: "\n")
        )
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 1)
        #expect(summary.duplicates == 2)
        #expect(summary.conflicts == 2)
        let rows = try await store.strings(
            """
            SELECT c.stored_fine_value || ' ' || COALESCE(c.stored_coarse_value, '-') || ' ' || c.stored_country_code
                || ' -> ' || c.copy_fine_value || ' ' || COALESCE(c.copy_coarse_value, '-') || ' ' || c.copy_country_code
            FROM conflicts c JOIN sightings s ON s.id = c.sighting_id ORDER BY s.source_index
            """
        )
        #expect(rows == ["20 - US -> 21 - US", "20 - US -> 20 - DE"])
        #expect(try await store.count("sightings", where: "conflict = TRUE") == 2)
        let again = try await ingest([path], into: database)
        #expect(again.conflicts == 2)
        #expect(try await store.count("conflicts") == 2, "re-reading records nothing new")
    }

    @Test(
        "every bad entry is quarantined with its verdict, reason, bytes and place; re-ingesting does not grow it",
        arguments: TestEngine.available
    )
    func quarantine(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let good = try signed(SamplePostback.make(.v3_0))
        let bad = [
            "{not json",
            "[1]",
            good.replacingOccurrences(of: "\"version\":\"3.0\"", with: "\"version\":\"9.0\""),
            good.replacingOccurrences(of: "\"app-id\":525463029", with: "\"app-id\":525463030"),
            good.replacingOccurrences(of: "\"did-win\":true", with: "\"did-win\":\"yes\""),
            "{\"pad\":\"" + String(repeating: "z", count: 70_000) + "\"}",
        ]
        let path = try directory.write("bad.jsonl", ([good] + bad).joined(separator: "\n") + "\n")
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 1)
        #expect(summary.quarantined == 6)
        #expect(summary.invalid == 1)
        #expect(summary.unsupported == 1)
        #expect(summary.malformed == 4)
        let verdicts = try await store.strings("SELECT verdict FROM quarantine ORDER BY source_index")
        #expect(verdicts == ["malformed", "malformed", "unsupported", "invalid", "malformed", "malformed"])
        let raws = try await store.strings("SELECT raw FROM quarantine ORDER BY source_index")
        func hex(_ text: String) -> String { "\\x" + text.utf8.map { String(format: "%02x", $0) }.joined() }
        for (raw, expected) in zip(raws, bad.prefix(5)) { #expect(raw == hex(expected)) }
        #expect(raws.last??.count == 2 + 2 * InputLimits.maximumPostbackBytes)
        #expect(
            try await store.strings("SELECT raw_size FROM quarantine ORDER BY source_index DESC LIMIT 1") == ["70010"]
        )
        #expect(
            try await store.strings("SELECT source_line FROM quarantine ORDER BY source_index")
                == ["2", "3", "4", "5", "6", "7"]
        )
        #expect(
            try await store.strings("SELECT field FROM quarantine WHERE verdict = 'malformed' AND field IS NOT NULL")
                == ["did-win"]
        )
        #expect(
            try await store.strings("SELECT reason FROM quarantine WHERE verdict = 'invalid'").first??
                .contains("does not verify") == true
        )
        let again = try await ingest([path], into: database)
        #expect(again.quarantined == 6)
        #expect(try await store.count("quarantine") == 6)
    }

    @Test(
        "several ingests into one store at once on overlapping inputs: nothing counted twice, summaries add up",
        arguments: TestEngine.available
    )
    func concurrentWorkers(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "shared")
        let reference = try await TestStore.make(engine, in: directory, name: "reference")
        let lines = try PostbackGenerator.lines(count: 1200, seed: 11).split(separator: "\n").map(String.init)
        // Four workers, each reading half the postbacks, overlapping two by two, in different orders.
        let first: [String] = Array(lines[0..<600])
        let second: [String] = Array(lines[300..<900])
        let third: [String] = Array(lines[600..<1200])
        let fourth: [String] = Array(Array(lines[0..<300] + lines[900..<1200]).reversed())
        let halves: [[String]] = [first, second, third, fourth]
        var files: [String] = []
        for (index, half) in halves.enumerated() {
            files.append(try directory.write("worker-\(index).jsonl", half.joined(separator: "\n")))
        }
        let summaries = try await withThrowingTaskGroup(of: IngestSummary.self) { group in
            for file in files {
                group.addTask { try await ingest([file], into: store.location) }
            }
            var all: [IngestSummary] = []
            for try await summary in group { all.append(summary) }
            return all
        }
        let single = try await ingest(
            [try directory.write("all.jsonl", lines.joined(separator: "\n"))],
            into: reference.location
        )
        #expect(single.accepted == 1200)
        #expect(summaries.map(\.accepted).reduce(0, +) == single.accepted, "accepted adds up to one run of the union")
        #expect(summaries.map(\.duplicates).reduce(0, +) == 2400 - single.accepted)
        #expect(try await store.count("postbacks") == 1200)
        #expect(try await store.count("quarantine") == 0)
        let keys = try await store.strings("SELECT dedup_key FROM postbacks ORDER BY dedup_key")
        let referenceKeys = try await reference.strings("SELECT dedup_key FROM postbacks ORDER BY dedup_key")
        #expect(keys == referenceKeys)
        #expect(try await store.count("ingest_runs", where: "status = 'completed'") == 4)
    }
}

import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

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

    @Test("the PostgreSQL cases run", .enabled(if: TestEngine.postgresCases.noticeRuns, "they do"))
    func postgresCasesRun() {
        // On a machine without a server the PostgreSQL cases are skipped, and this says so;
        // CI starts one, and fails here if it did not.
        #expect(TestEngine.postgresCases.noticed(), "CI must run the PostgreSQL cases: \(TestEngine.skipNotice)")
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
        "a validly signed copy whose signed content differs is a conflict flagged signed_differs, and counted",
        arguments: TestEngine.available
    )
    func signedConflicts(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let database = store.location
        let original = SamplePostback.make(.v4_0, conversionValue: .fine(20))
        // Each a genuine signature over another content under the original's dedup key.
        var others: [(what: String, postback: SKANPostback)] = []
        func other(_ what: String, _ change: (inout SKANPostback) -> Void) {
            var postback = original
            change(&postback)
            others.append((what, postback))
        }
        other("source-identifier") { $0.sourceIdentifier = "5240" }
        other("app-id") { $0.appID = 525_463_030 }
        other("redownload") { $0.redownload = true }
        other("source-domain") { $0.sourceDomain = "example.org" }
        other("source-app-id instead of source-domain") {
            $0.sourceDomain = nil
            $0.sourceAppID = 1_234_567_891
        }
        other("fidelity-type") { $0.fidelityType = 0 }
        other("did-win") { $0.didWin = false }
        others.append(("version 3.0", SamplePostback.make(.v3_0, conversionValue: .fine(20))))
        other("source-identifier and the conversion value") {
            $0.sourceIdentifier = "5241"
            $0.conversionValue = .fine(21)
        }
        var unsignedOnly = original
        unsignedOnly.conversionValue = .fine(21)
        // AdAttributionKit: the JWS payload is the signed content.
        let payload = """
            {"postback-identifier":"0F3C9B1E-2D4A-4B5C-8D6E-7F8091A2B3C4","impression-type":"app-impression",\
            "ad-network-identifier":"example123.adattributionkit","did-win":true,"postback-sequence-index":0,\
            "conversion-type":"download","source-identifier":"5239","advertised-item-identifier":525463029,\
            "marketplace-identifier":"com.apple.AppStore"}
            """
        func envelope(_ payload: String) throws -> String {
            let jws = try TestKeys.signer.jws(
                headerJSON: #"{"kid":"postbackd-test/0","alg":"ES256"}"#,
                payloadJSON: payload
            )
            return #"{"jws-string":""# + jws + #"","conversion-value":24}"#
        }
        let aakOthers = [
            ("impression-type", payload.replacingOccurrences(of: "app-impression", with: "web-impression")),
            ("conversion-type", payload.replacingOccurrences(of: #""download""#, with: #""redownload""#)),
            (
                "marketplace-identifier",
                payload.replacingOccurrences(of: "com.apple.AppStore", with: "com.example.store")
            ),
        ]
        let lines =
            [try signed(original)] + (try others.map { try signed($0.postback) })
            + [try signed(unsignedOnly), try signed(original)]
            + [try envelope(payload)] + (try aakOthers.map { try envelope($0.1) }) + [try envelope(payload)]
        let signedCount = others.count + aakOthers.count
        let path = try directory.write("signed-conflicts.jsonl", lines.joined(separator: "\n"))
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 2)
        #expect(summary.quarantined == 0)
        #expect(summary.duplicates == signedCount + 3)
        #expect(summary.conflicts == signedCount + 1, "the signed ones and the unsigned one")
        #expect(summary.signedConflicts == signedCount)
        #expect(summary.json.contains(#""signed_conflicts":\#(signedCount)"#), "\(summary.json)")
        #expect(summary.text.contains("\(signedCount) of them with other signed content"), "\(summary.text)")

        // One conflict row per conflicting copy, flagged by what differs; the plain copies are
        // sightings only.
        let flags = try await store.strings(
            """
            SELECT s.source_index || ' ' || CASE WHEN c.signed_differs THEN 'signed' ELSE 'unsigned' END
            FROM conflicts c JOIN sightings s ON s.id = c.sighting_id ORDER BY s.source_index
            """
        )
        let expected =
            others.indices.map { "\($0 + 1) signed" } + ["\(others.count + 1) unsigned"]
            + aakOthers.indices.map { "\(others.count + 4 + $0) signed" }
        #expect(flags == expected, "\(others.map(\.what) + aakOthers.map(\.0))")
        #expect(try await store.count("sightings") == signedCount + 3)
        #expect(try await store.count("sightings", where: "conflict = TRUE") == signedCount + 1)
        // The stored postbacks are the first copies; nothing of the others replaced them.
        #expect(
            try await store.strings("SELECT source_index FROM postbacks ORDER BY source_index") == [
                "0", "\(others.count + 3)",
            ]
        )

        // Re-reading counts them again and records nothing new; each run keeps its count.
        let again = try await ingest([path], into: database)
        #expect(again.signedConflicts == signedCount)
        #expect(again.conflicts == signedCount + 1)
        #expect(try await store.count("conflicts") == signedCount + 1)
        #expect(
            try await store.strings("SELECT signed_conflicts || ' ' || conflicts FROM ingest_runs ORDER BY id")
                == Array(repeating: "\(signedCount) \(signedCount + 1)", count: 2)
        )

        // A copy in a later run (another transaction) is compared with the stored row the same way.
        var later = original
        later.didWin = false
        later.countryCode = "US"
        let laterPath = try directory.write("later.json", try signed(later))
        let third = try await ingest([laterPath], into: database)
        #expect(third.duplicates == 1 && third.conflicts == 1 && third.signedConflicts == 1)
        #expect(try await store.count("conflicts", where: "signed_differs = TRUE") == signedCount + 1)
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

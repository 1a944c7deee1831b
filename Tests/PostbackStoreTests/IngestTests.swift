import Foundation
import GRDB
import PostbackTestSupport
import Testing

@testable import PostbackKit
@testable import PostbackStore

/// Ingests `paths` into the SQLite database at `database` with the test keys.
@discardableResult
func ingest(
    _ paths: [String],
    into database: String,
    keyRing: KeyRing? = nil,
    receivedAt: UTCInstant? = nil
) async throws -> IngestSummary {
    try await ingest(paths, into: .sqlite(path: database), keyRing: keyRing, receivedAt: receivedAt)
}

/// Ingests `paths` into the store at `location` with the test keys.
@discardableResult
func ingest(
    _ paths: [String],
    into location: StoreLocation,
    keyRing: KeyRing? = nil,
    receivedAt: UTCInstant? = nil
) async throws -> IngestSummary {
    let job = IngestJob(
        paths: paths,
        location: location,
        keyRing: try keyRing ?? TestKeys.ring,
        receivedAt: receivedAt,
        width: 2
    )
    let summary = try await job.run(errors: .memory(), showProgress: false)
    #expect(
        summary.read == summary.accepted + summary.duplicates + summary.quarantined,
        "read = accepted + duplicates + quarantined"
    )
    return summary
}

@Suite("Ingest into SQLite")
struct IngestTests {
    let directory: TemporaryDirectory
    let database: String

    init() throws {
        directory = try TemporaryDirectory("ingest")
        database = directory.path + "/postbackd.sqlite"
    }

    private func signed(_ postback: SKANPostback, extra: [(name: String, json: String)] = []) throws -> String {
        try TestKeys.signer.signed(postback).jsonText(extraFields: extra)
    }

    @Test("a valid postback whose dedup digest another key already holds is quarantined, never a duplicate")
    func dedupDigestCollision() async throws {
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
        try await DatabaseQueue(path: database).write { db in
            try db.execute(sql: "UPDATE postbacks SET dedup_key = ?", arguments: [Data(digest)])
        }
        let summary = try await ingest([try directory.write("second.json", second)], into: database)
        #expect(summary.accepted == 0)
        #expect(summary.duplicates == 0)
        #expect(summary.quarantined == 1)
        #expect(
            try DatabaseDump.values("SELECT field || ' ' || verdict FROM quarantine", in: database, as: String.self)
                == ["dedup_key unsupported"]
        )
        #expect(try DatabaseDump.count("sightings", in: database) == 0)
    }

    @Test("duplicates within one file: the first copy is stored, every other copy is a sighting")
    func dedupWithinFile() async throws {
        let postback = try signed(SamplePostback.make(.v3_0))
        let forwarded = try signed(SamplePostback.make(.v3_0), extra: [("timestamp", "1795000000")])
        let path = try directory.write("day.jsonl", [postback, postback, forwarded].joined(separator: "\n"))
        let summary = try await ingest([path], into: database)
        #expect(summary.accepted == 1)
        #expect(summary.duplicates == 2)
        #expect(summary.conflicts == 0, "a forwarder's timestamp does not make a conflict")
        #expect(try DatabaseDump.count("postbacks", in: database) == 1)
        #expect(try DatabaseDump.count("sightings", in: database) == 2)
        #expect(try DatabaseDump.values("SELECT source_index FROM postbacks", in: database, as: Int.self) == [0])
        #expect(
            try DatabaseDump.values("SELECT raw IS NULL FROM sightings ORDER BY id", in: database, as: Bool.self) == [
                true, false,
            ]
        )
    }

    @Test("duplicates across runs, and re-ingesting the same input adds nothing")
    func dedupAcrossRuns() async throws {
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
        let before = try DatabaseDump.rows(of: database)
        let again = try await ingest([first, second], into: database)
        #expect(again.accepted == 0)
        #expect(again.duplicates == 6)
        #expect(try DatabaseDump.rows(of: database) == before, "re-ingesting changes nothing")
        #expect(try DatabaseDump.count("ingest_runs", in: database, where: "status = 'completed'") == 3)
    }

    @Test("the three 4.0 postbacks of one transaction are kept apart")
    func sequenceIndexes() async throws {
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
            try DatabaseDump.values(
                "SELECT postback_sequence_index FROM postbacks ORDER BY id",
                in: database,
                as: Int.self
            ) == [0, 1, 2]
        )
        #expect(
            Set(try DatabaseDump.values("SELECT transaction_id FROM postbacks", in: database, as: String.self)).count
                == 1
        )
    }

    @Test("a forged copy of a stored transaction is quarantined and the genuine row is untouched")
    func forgedCopyAfter() async throws {
        let genuine = SamplePostback.make(.v3_0)
        try await ingest([try directory.write("genuine.json", try signed(genuine))], into: database)
        let before = try DatabaseDump.rows(of: database)["postbacks"]
        var forged = try TestKeys.signer.signed(genuine)
        forged.appID = 999  // a signed field changed after signing
        forged.conversionValue = .fine(63)
        let summary = try await ingest([try directory.write("forged.json", forged.jsonText())], into: database)
        #expect(summary.quarantined == 1)
        #expect(summary.invalid == 1)
        #expect(summary.duplicates == 0)
        #expect(try DatabaseDump.rows(of: database)["postbacks"] == before)
        #expect(try DatabaseDump.count("sightings", in: database) == 0)
    }

    @Test("a forged postback arriving before the genuine one does not block it")
    func forgedFirst() async throws {
        let genuine = try TestKeys.signer.signed(SamplePostback.make(.v4_0))
        var forged = genuine
        forged.attributionSignature = try TestKeys.signer.signed(
            SamplePostback.make(.v4_0, transactionID: "ffffffff-0000-4000-8000-000000000000")
        ).attributionSignature
        let path = try directory.write("race.jsonl", forged.jsonText() + "\n" + genuine.jsonText())
        let summary = try await ingest([path], into: database)
        #expect(summary.quarantined == 1)
        #expect(summary.accepted == 1)
        #expect(try DatabaseDump.values("SELECT source_line FROM postbacks", in: database, as: Int.self) == [2])
    }

    @Test("a test-mode copy made from a genuine postback does not suppress it")
    func testModeForgery() async throws {
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
            try DatabaseDump.values("SELECT key_space FROM postbacks ORDER BY id", in: database, as: String.self) == [
                "test", "production",
            ]
        )
    }

    @Test("a copy whose unsigned values differ is a conflict, recorded with both values")
    func conflicts() async throws {
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
        let rows = try DatabaseDump.rows(of: database)["conflicts"] ?? []
        #expect(rows.count == 2)
        #expect(rows[0].hasSuffix("|1|20|NULL|\"US\"|21|NULL|\"US\""), "\(rows[0])")
        #expect(rows[1].hasSuffix("|1|20|NULL|\"US\"|20|NULL|\"DE\""), "\(rows[1])")
        let again = try await ingest([path], into: database)
        #expect(again.conflicts == 2)
        #expect(try DatabaseDump.count("conflicts", in: database) == 2, "re-reading records nothing new")
    }

    @Test("every bad entry is quarantined with its verdict, reason, bytes and place; re-ingesting does not grow it")
    func quarantine() async throws {
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
        let verdicts = try DatabaseDump.values(
            "SELECT verdict FROM quarantine ORDER BY id",
            in: database,
            as: String.self
        )
        #expect(verdicts == ["malformed", "malformed", "unsupported", "invalid", "malformed", "malformed"])
        let raws = try DatabaseDump.values("SELECT raw FROM quarantine ORDER BY id", in: database, as: Data.self)
        for (raw, expected) in zip(raws, bad.prefix(5)) { #expect(raw == Data(expected.utf8)) }
        #expect(raws.last??.count == InputLimits.maximumPostbackBytes)
        #expect(
            try DatabaseDump.values(
                "SELECT raw_size FROM quarantine ORDER BY id DESC LIMIT 1",
                in: database,
                as: Int.self
            ) == [70_010]
        )
        #expect(
            try DatabaseDump.values("SELECT source_line FROM quarantine ORDER BY id", in: database, as: Int.self) == [
                2, 3, 4, 5, 6, 7,
            ]
        )
        #expect(
            try DatabaseDump.values(
                "SELECT field FROM quarantine WHERE verdict = 'malformed' AND field IS NOT NULL",
                in: database,
                as: String.self
            ) == ["did-win"]
        )
        #expect(
            try DatabaseDump.values(
                "SELECT reason FROM quarantine WHERE verdict = 'invalid'",
                in: database,
                as: String.self
            ).first??.contains("does not verify") == true
        )
        let again = try await ingest([path], into: database)
        #expect(again.quarantined == 6)
        #expect(try DatabaseDump.count("quarantine", in: database) == 6)
    }

    @Test("received time: --received-at, then a forwarder timestamp in seconds or milliseconds, then ingestion time")
    func receivedTime() async throws {
        let base = SamplePostback.make(.v3_0)
        func withTransaction(_ id: Int, _ extra: [(name: String, json: String)]) throws -> String {
            var postback = base
            postback.transactionID = "00000000-0000-4000-8000-00000000000\(id)"
            return try signed(postback, extra: extra)
        }
        let lines = [
            try withTransaction(1, [("timestamp", "1613095729")]),
            try withTransaction(2, [("timestamp", "1613095729123")]),
            try withTransaction(3, [("timestamp", "\"1795219199\"")]),
            try withTransaction(4, [("timestamp", "1000")]),
            try withTransaction(5, [("timestamp", "4102444800")]),
            try withTransaction(6, []),
        ]
        let path = try directory.write("times.jsonl", lines.joined(separator: "\n"))
        let before = UTCInstant.now()
        try await ingest([path], into: database)
        let after = UTCInstant.now()
        let times = try DatabaseDump.values(
            "SELECT received_at FROM postbacks ORDER BY id",
            in: database,
            as: String.self
        ).compactMap { $0 }
        let sources = try DatabaseDump.values(
            "SELECT received_at_source FROM postbacks ORDER BY id",
            in: database,
            as: String.self
        )
        #expect(
            Array(times.prefix(3)) == [
                "2021-02-12T02:08:49.000Z", "2021-02-12T02:08:49.123Z", "2026-11-20T23:59:59.000Z",
            ]
        )
        #expect(sources == ["timestamp", "timestamp", "timestamp", "ingestion", "ingestion", "ingestion"])
        for time in times.suffix(3) {
            let instant = try #require(UTCInstant(iso8601: time))
            #expect(instant >= UTCInstant(milliseconds: before.milliseconds - 1) && instant <= after)
        }

        let other = directory.path + "/other.sqlite"
        try await ingest([path], into: other, receivedAt: UTCInstant(iso8601: "2026-11-20"))
        #expect(
            Set(try DatabaseDump.values("SELECT received_at FROM postbacks", in: other, as: String.self)) == [
                "2026-11-20T00:00:00.000Z"
            ]
        )
        #expect(
            Set(try DatabaseDump.values("SELECT received_at_source FROM postbacks", in: other, as: String.self)) == [
                "option"
            ]
        )
    }

    @Test("every parsed field is its own column; the raw JSON is kept exactly")
    func columns() async throws {
        let file = Repository.vectors + "/apple-4.0-web-fine-win.json"
        try await ingest([file], into: database, keyRing: .apple)
        let row = try #require(
            try DatabaseQueue(path: database).read { db in try Row.fetchOne(db, sql: "SELECT * FROM postbacks") }
        )
        #expect(row["kind"] == "skan")
        #expect(row["version"] == "4.0")
        #expect(row["ad_network_id"] == "com.example")
        #expect(row["source_identifier"] == "5239")
        #expect(row["app_id"] == 525_463_029)
        #expect(row["source_domain"] == "example.com")
        #expect(row["fidelity_type"] == 1)
        #expect(row["did_win"] == true)
        #expect(row["redownload"] == false)
        #expect(row["postback_sequence_index"] == 0)
        #expect(row["fine_value"] == 63)
        #expect(row["coarse_value"] as String? == nil)
        #expect(row["key_name"] == "apple-p256")
        #expect(row["test_mode"] == false)
        #expect(row["key_space"] == "production")
        #expect(row["raw"] == (try Data(contentsOf: URL(fileURLWithPath: file))))
        #expect(row["source"] == file)
        #expect(row["source_index"] == 0)
    }

    @Test("AdAttributionKit postbacks are stored; development ones in their own key space")
    func adAttributionKit() async throws {
        let summary = try await ingest(
            [Repository.vectors + "/apple-aak-dev1-reengagement.json"],
            into: database,
            keyRing: .apple
        )
        #expect(summary.accepted == 1)
        #expect(summary.development == 1)
        let row = try #require(
            try DatabaseQueue(path: database).read { db in try Row.fetchOne(db, sql: "SELECT * FROM postbacks") }
        )
        #expect(row["kind"] == "aak")
        #expect(row["key_space"] == "development")
        #expect(row["transaction_id"] == "85546EB7-FD39-44BC-8990-C98A4AC36A49")
        #expect(row["app_id"] == 10_738_027_756)
        #expect(row["conversion_type"] == "re-engagement")
        #expect(row["marketplace_id"] == "com.apple.AppStore")
        #expect(row["fine_value"] == 24)
        #expect(row["country_code"] == "US")
    }

    @Test("one file read by two paths is one source")
    func canonicalSources() async throws {
        let path = try directory.write("data/day.jsonl", try signed(SamplePostback.make(.v3_0)))
        let link = directory.path + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory.path + "/data")
        try await ingest([path], into: database)
        let again = try await ingest([link + "/day.jsonl"], into: database)
        #expect(again.duplicates == 1)
        #expect(try DatabaseDump.count("sightings", in: database) == 0)
    }

    @Test("a database that cannot be used is explained before anything is read")
    func unusableDatabase() async throws {
        let notSQLite = try directory.write("notes.sqlite", "these are not postbacks")
        await #expect(throws: DatabaseOpenError.self) { try await ingest([Repository.vectors], into: notSQLite) }
        await #expect(throws: DatabaseOpenError.self) {
            try await ingest([Repository.vectors], into: directory.path + "/missing/db.sqlite")
        }
        await #expect(throws: InputError.self) { try await ingest([directory.path + "/missing.json"], into: database) }
    }

    @Test("the schema is created by migration, in WAL mode, and the run is logged")
    func schemaAndRunLog() async throws {
        let summary = try await ingest([Repository.vectors], into: database, keyRing: .apple)
        try await DatabaseQueue(path: database).read { db in
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
            #expect(
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").count
                    == PostbackSchema.migrator.migrations.count
            )
            let run = try #require(try Row.fetchOne(db, sql: "SELECT * FROM ingest_runs"))
            #expect(run["status"] == "completed")
            #expect(run["read"] == summary.read)
            #expect(run["accepted"] == summary.accepted)
            #expect(run["quarantined"] == summary.quarantined)
            #expect((run["inputs"] as String?)?.contains("SamplePostbacks/apple") == true)
        }
    }
}

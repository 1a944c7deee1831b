import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

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

/// Ingests `paths` into the store at `location` with the test keys, on `channel`.
@discardableResult
func ingest(
    _ paths: [String],
    into location: StoreLocation,
    keyRing: KeyRing? = nil,
    receivedAt: UTCInstant? = nil,
    channel: PostbackChannel = .file
) async throws -> IngestSummary {
    let job = IngestJob(
        paths: paths,
        location: location,
        keyRing: try keyRing ?? TestKeys.ring,
        receivedAt: receivedAt,
        channel: channel,
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
        await #expect(throws: PostbackKitError.self) {
            try await ingest([directory.path + "/missing.json"], into: database)
        }
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

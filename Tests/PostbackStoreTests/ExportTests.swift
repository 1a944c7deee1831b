import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `postbackd export`: every stored column, decoded through the current model, and consumers
/// that read each postback once; on every engine.
@Suite("Export", .serialized)
struct ExportTests {
    let directory: TemporaryDirectory
    static let model = Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json")

    init() throws {
        directory = try TemporaryDirectory("export")
    }

    private func signed(
        _ id: Int,
        _ version: SKANVersion = .v4_0,
        value: ConversionValue?,
        sequence: Int = 0
    ) throws -> String {
        try SamplePostback.signedJSON(
            version,
            transactionID: String(format: "00000000-0000-4000-8000-%012d", id),
            conversionValue: value,
            sequenceIndex: sequence
        )
    }

    /// Exports with `options` into a file and returns its lines.
    private func export(
        _ location: StoreLocation,
        _ options: ExportJob.Options,
        name: String = "out"
    ) async throws
        -> (lines: [String], summary: ExportJob.Summary)
    {
        var options = options
        let path = directory.path + "/\(name).\(options.format.rawValue)"
        options.output = path
        let summary = try await ExportJob.run(options, location: location)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return (text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init), summary)
    }

    private func objects(_ lines: [String]) throws -> [String: [String: Any]] {
        var byTransaction: [String: [String: Any]] = [:]
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let key = "\(object["transaction_id"] ?? "")/\(object["postback_sequence_index"] ?? "")"
            byTransaction[key] = object
        }
        return byTransaction
    }

    @Test(
        "every stored column, and the decoding of fine, coarse, null, unmapped and unmodelled postbacks",
        arguments: TestEngine.available
    )
    func decoded(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let lines = [
            try signed(1, .v3_0, value: .fine(20)),
            try signed(2, .v4_0, value: .coarse(.high), sequence: 1),
            try signed(3, .v4_0, value: nil),
            try signed(4, .v3_0, value: .fine(7)),
        ]
        let file = try directory.write("four.jsonl", lines.joined(separator: "\n"))
        #expect(try await ingest([file], into: store.location).accepted == 4)

        // No model yet: every postback is unmodelled.
        let before = try objects(try await export(store.location, ExportJob.Options(), name: "before").lines)
        #expect(before.count == 4)
        #expect(before.values.allSatisfy { $0["conversion"] as? String == "unmodelled" })

        _ = try await ModelsJob.add(files: [Self.model], location: store.location)
        let (exported, summary) = try await export(store.location, ExportJob.Options())
        #expect(summary.rows == 4)
        let rows = try objects(exported)
        let fine = try #require(rows["00000000-0000-4000-8000-000000000001/0"])
        // From the model: value 20 is one to two purchases of 5 to 10 USD.
        #expect(fine["conversion"] as? String == "mapped")
        let fineEvents = try #require(fine["events"] as? [[String: Any]])
        #expect(fineEvents.count == 1)
        #expect(fineEvents.first?["name"] as? String == "purchase")
        #expect(fineEvents.first?["occurrences_min"] as? Int == 1 && fineEvents.first?["occurrences_max"] as? Int == 2)
        #expect(fineEvents.first?["currency"] as? String == "USD")
        #expect(fineEvents.first?["revenue_min"] as? Double == 5 && fineEvents.first?["revenue_max"] as? Double == 10)
        #expect(fineEvents.first?["revenue_estimate"] as? Double == 7.5)
        // Postback 1's high coarse value: one purchase of 50 USD.
        let coarse = try #require(rows["00000000-0000-4000-8000-000000000002/1"])
        #expect(coarse["conversion"] as? String == "mapped")
        #expect(coarse["coarse_value"] as? String == "high")
        let coarseEvents = try #require(coarse["events"] as? [[String: Any]])
        #expect(coarseEvents.first?["revenue_min"] as? Double == 50)
        #expect(rows["00000000-0000-4000-8000-000000000003/0"]?["conversion"] as? String == "null")
        #expect((rows["00000000-0000-4000-8000-000000000003/0"]?["events"] as? [Any])?.isEmpty == true)
        #expect(rows["00000000-0000-4000-8000-000000000004/0"]?["conversion"] as? String == "unmapped")

        // Every stored column: the raw bytes exactly, hashes in hex, booleans, times.
        #expect(fine["raw"] as? String == lines[0] + "\n" || fine["raw"] as? String == lines[0])
        let digest = SHA256Digest(hashing: Array((fine["raw"] as? String ?? "").utf8)).description
        #expect(fine["raw_sha256"] as? String == digest)
        #expect(fine["did_win"] as? Bool == true && fine["test_mode"] as? Bool == false)
        #expect((fine["received_at"] as? String)?.hasSuffix("Z") == true)
        #expect(Set(fine.keys).isSuperset(of: ExportTable.postbacks.columns.map(\.name) + ["conversion", "events"]))

        // CSV: one row per event, a postback without events on one row.
        let csv = try await export(store.location, ExportJob.Options(format: .csv), name: "csv").lines
        #expect(csv.first?.hasPrefix("id,kind,key_space,") == true)
        #expect(
            csv.first?.hasSuffix(
                ",conversion,event,occurrences_min,occurrences_max,currency,revenue_min,revenue_max,revenue_estimate"
            ) == true
        )
    }

    @Test("a consumer exports each postback once across runs, with ingests in between", arguments: TestEngine.available)
    func consumer(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let first = try directory.write(
            "first.jsonl",
            try (1...3).map { try signed($0, value: .fine(20)) }.joined(separator: "\n")
        )
        let second = try directory.write(
            "second.jsonl",
            try (4...5).map { try signed($0, value: .fine(20)) }.joined(separator: "\n")
        )
        try await ingest([first], into: store.location)
        let warehouse = ExportJob.Options(consumer: "warehouse")
        #expect(try await export(store.location, warehouse, name: "a").summary.rows == 3)
        #expect(try await export(store.location, warehouse, name: "b").summary.rows == 0)
        try await ingest([second], into: store.location)
        let third = try await export(store.location, warehouse, name: "c")
        #expect(
            try Set(objects(third.lines).keys) == [
                "00000000-0000-4000-8000-000000000004/0", "00000000-0000-4000-8000-000000000005/0",
            ]
        )
        // Another consumer has its own cursor; an export without one moves none.
        #expect(try await export(store.location, ExportJob.Options(consumer: "partner"), name: "d").summary.rows == 5)
        #expect(try await export(store.location, ExportJob.Options(), name: "e").summary.rows == 5)
        #expect(try await export(store.location, warehouse, name: "f").summary.rows == 0)
        // Days received: everything was received today.
        let today = UTCInstant.now().day
        let none = ExportJob.Options(days: today.next...today.next)
        #expect(try await export(store.location, none, name: "g").summary.rows == 0)
        #expect(try await export(store.location, ExportJob.Options(days: today...today), name: "h").summary.rows == 5)
    }

    @Test(
        "PostgreSQL: rows of a transaction that committed after a later one are not skipped",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func outOfOrderCommits() async throws {
        let store = try await TestStore.make(.postgres, in: directory)
        let early = try directory.write("early.jsonl", try signed(1, value: .fine(20)))
        let late = try directory.write(
            "late.jsonl",
            try (2...3).map { try signed($0, value: .fine(20)) }.joined(separator: "\n")
        )
        try await ingest([early], into: store.location)
        let options = ExportJob.Options(consumer: "warehouse")
        // An older transaction draws a row id and writes a row, and commits only after a later
        // ingest (higher ids) has committed and an export has run: an id cursor would skip it.
        let held = try await store.whileTransactionOpen([
            "CREATE TEMP TABLE held AS SELECT * FROM postbacks ORDER BY id LIMIT 1",
            """
            UPDATE held SET id = nextval(pg_get_serial_sequence('postbacks', 'id')), transaction_id = 'held-row',
                dedup_key = '\\x0102'::bytea, stored_xid = pg_current_xact_id()
            """,
            "INSERT INTO postbacks SELECT * FROM held",
        ]) {
            try await ingest([late], into: store.location)
            return try await export(store.location, options, name: "held").summary.rows
        }
        #expect(held == 1, "only the row committed before the open transaction began")
        let next = try await export(store.location, options, name: "next")
        #expect(next.summary.rows == 3, "the two later rows and the held one")
        #expect(try objects(next.lines).keys.contains("held-row/0"))
        #expect(try await export(store.location, options, name: "last").summary.rows == 0)

        // A transaction open in another database of the cluster never writes these tables: it
        // holds nothing back.
        let other = try await TestStore.make(.postgres, in: directory, name: "other")
        let more = try directory.write("more.jsonl", try signed(9, value: .fine(20)))
        let meanwhile = try await other.whileTransactionOpen {
            try await ingest([more], into: store.location)
            return try await export(store.location, options, name: "other").summary.rows
        }
        #expect(meanwhile == 1)
    }

    @Test("quarantine: every column, and the raw bytes in base64", arguments: TestEngine.available)
    func quarantine(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let bytes: [UInt8] = Array(#"{"version": "4.0", "oops": "#.utf8) + [0xFF, 0x0A]
        let file = try directory.write("bad.jsonl", bytes: bytes)
        #expect(try await ingest([file], into: store.location).quarantined == 1)
        let lines = try await export(store.location, ExportJob.Options(table: .quarantine), name: "q").lines
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "malformed")
        let raw = try #require(Base64.decode(Array((object["raw_base64"] as? String ?? "").utf8)))
        #expect(raw == Array(bytes.dropLast()) || raw == bytes)
        #expect(object["received_count"] as? Int == 1)
    }
}

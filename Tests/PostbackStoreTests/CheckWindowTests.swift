import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `check --quick` on every engine: it reads the rows received from its first day on (and the
/// aggregated days from it), exactly those, finds what is wrong among them, and leaves older
/// days to the whole check.
@Suite("check --quick, on every engine")
struct CheckWindowTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("check-window")
    }

    static let dayOne = UTCDay(daysSinceEpoch: 20_777)  // 2026-11-20
    static let dayTwo = UTCDay(daysSinceEpoch: 20_778)  // 2026-11-21

    /// The aggregate fixture: day one P1–P13, day two P14, a copy of it and a quarantined
    /// body, each ingested on its day, aggregated.
    func store(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory)
        let (dayOne, dayTwo) = try AggregateFixture.write(into: directory)
        try await ingest([dayOne], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-20T10:00:00Z"))
        try await ingest([dayTwo], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T10:00:00Z"))
        let second = try String(contentsOfFile: dayTwo, encoding: .utf8)
        let intake = try directory.write("intake.jsonl", second + "\n{\"not\": \"a postback\"}\n")
        try await ingest([intake], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T11:00:00Z"))
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    func count(_ store: TestStore, _ table: String, day: String) async throws -> Int {
        try await store.count(table, where: "substr(CAST(received_at AS TEXT), 1, 10) = '\(day)'")
    }

    func quick(_ store: TestStore, since: UTCDay?) async throws -> CheckReport {
        try await CheckJob.run(store.location, options: CheckJob.Options(quick: true, since: since))
    }

    @Test(
        "reads exactly the rows and aggregated days from its first day; by default the day before the newest",
        arguments: TestEngine.available
    )
    func window(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let whole = try await CheckJob.run(store.location)
        #expect(whole.sound && whole.window == nil, "\(whole.findings)")
        #expect(whole.checked[.postbacks] == 14 && whole.aggregatedDays == 2)

        let second = try await quick(store, since: Self.dayTwo)
        #expect(second.sound, "\(second.findings)")
        #expect(second.window?.since == Self.dayTwo)
        for table in CheckedTable.allCases {
            let expected = try await count(store, table.rawValue, day: "2026-11-21")
            #expect(second.checked[table] == expected, "\(table)")
        }
        #expect(second.checked[.postbacks] == 1 && second.checked[.quarantine] == 1)
        #expect(second.aggregatedDays == 1)
        #expect(second.engine.outcome == .skipped)
        #expect(second.text.contains("quick: the rows received from 2026-11-21 on"))
        #expect(second.json.contains("\"quick\":true,\"since\":\"2026-11-21\""))

        // Without a day: from the day before the newest, here both days.
        let both = try await quick(store, since: nil)
        #expect(both.window?.since == Self.dayOne)
        #expect(both.checked == whole.checked && both.aggregatedDays == 2)

        // A day after every row: nothing to read, and sound.
        let later = try await quick(store, since: UTCDay(daysSinceEpoch: 20_788))
        #expect(later.sound && later.checked.values.allSatisfy { $0 == 0 } && later.aggregatedDays == 0)
    }

    @Test("finds what is wrong within its days, not before them", arguments: TestEngine.available)
    func findings(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let dayOneEnd = "'2026-11-21T00:00:00Z'"
        let bytes = engine == .sqlite ? "CAST('edited' AS BLOB)" : "convert_to('edited', 'UTF8')"
        // Day one, edited by hand: a key column, and the totals of its aggregate.
        try await store.execute(
            "UPDATE postbacks SET transaction_id = 'edited-by-hand' WHERE id = (SELECT MIN(id) FROM postbacks WHERE received_at < \(dayOneEnd))",
            "UPDATE aggregate_daily_totals SET postbacks = postbacks + 5 WHERE date = '2026-11-20' AND app_id = (SELECT MIN(app_id) FROM aggregate_daily_totals WHERE date = '2026-11-20')"
        )
        let second = try await quick(store, since: Self.dayTwo)
        #expect(second.sound, "\(second.findings)")
        let first = try await quick(store, since: Self.dayOne)
        #expect(!first.sound)
        #expect(first.findings.contains { $0.table == "postbacks" && $0.problem.contains("edited-by-hand") })
        #expect(
            first.findings.contains { $0.table == "aggregate_daily_totals" && $0.problem.hasPrefix("date 2026-11-20:") }
        )

        // Day two: its quarantined body's bytes, and the postback of its copy gone (as by
        // hand, without the foreign keys).
        try await store.execute("UPDATE quarantine SET raw = \(bytes) WHERE received_at >= \(dayOneEnd)")
        let sightingPostback = try #require(
            try await store.strings("SELECT MIN(postback_id) FROM sightings WHERE received_at >= \(dayOneEnd)").first
                ?? nil
        )
        switch store.location {
        case .sqlite(let path):
            var configuration = Configuration()
            configuration.foreignKeysEnabled = false
            try await DatabaseQueue(path: path, configuration: configuration).write { db in
                try db.execute(sql: "DELETE FROM conflicts WHERE postback_id = \(sightingPostback)")
                try db.execute(sql: "DELETE FROM postbacks WHERE id = \(sightingPostback)")
            }
        case .postgres:
            try await store.execute(
                "ALTER TABLE sightings DROP CONSTRAINT sightings_postback_id_fkey",
                "DELETE FROM conflicts WHERE postback_id = \(sightingPostback)",
                "DELETE FROM postbacks WHERE id = \(sightingPostback)"
            )
        }
        let edited = try await quick(store, since: Self.dayTwo)
        #expect(!edited.sound)
        #expect(edited.findings.contains { $0.table == "quarantine" && $0.problem.hasPrefix("raw_sha256 ") })
        #expect(
            edited.findings.contains {
                $0.table == "sightings" && $0.problem == "postback_id \(sightingPostback) is not a stored postback"
            },
            "\(edited.findings)"
        )
        #expect(!edited.findings.contains { $0.problem.contains("edited-by-hand") })
    }

    @Test("an empty store: nothing to read, sound", arguments: TestEngine.available)
    func empty(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        try await PostbackStores.with(store.location) { _ in }
        let report = try await quick(store, since: nil)
        #expect(report.sound && report.window?.since == nil)
        #expect(report.text.contains("quick: the store holds no row"))
    }
}

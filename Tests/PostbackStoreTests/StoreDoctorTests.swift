import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `doctor --db`'s checks of what a store receives (``StoreDoctor``), on every engine: for each
/// check, subjects on both sides of each threshold, the postbacks signed with the test keys and
/// received at chosen instants (their forwarder `timestamp`) around a fixed `now`.
@Suite("doctor --db's store checks, on every engine")
struct StoreDoctorTests {
    let directory: TemporaryDirectory
    let signer: PostbackSigner
    /// The checks' `now`.
    static let now = UTCInstant(iso8601: "2026-11-27T12:00:00Z") ?? UTCInstant(milliseconds: 0)
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    init() throws {
        directory = try TemporaryDirectory("doctor")
        signer = try TestKeys.signer
    }

    /// Postbacks to ingest: JSON lines, each with its own transaction or postback id.
    struct Lines {
        let signer: PostbackSigner
        var lines: [String] = []

        /// A winning SKAdNetwork 4.0 postback 0 of `app` from `network` received `before`
        /// milliseconds before `now`.
        mutating func skan(
            app: Int64,
            network: String = "example123.skadnetwork",
            value: ConversionValue? = .fine(20),
            didWin: Bool = true,
            before: Int64
        ) throws {
            var postback = SamplePostback.make(
                .v4_0,
                transactionID: Self.id(lines.count),
                conversionValue: didWin ? value : nil
            )
            postback.appID = app
            postback.adNetworkID = network
            postback.didWin = didWin
            let received = StoreDoctorTests.now.milliseconds - before
            lines.append(try signer.signed(postback).jsonText(extraFields: [("timestamp", "\(received)")]))
        }

        /// A winning AdAttributionKit download (production key) of `app` received `before`
        /// milliseconds before `now`.
        mutating func aak(app: Int64, fine: Int? = 20, before: Int64) throws {
            let payload = """
                {"postback-identifier":"\(Self.id(lines.count))",\
                "impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","did-win":true,\
                "postback-sequence-index":0,"conversion-type":"download","source-identifier":"5239",\
                "advertised-item-identifier":\(app),"marketplace-identifier":"com.apple.AppStore"}
                """
            let jws = try signer.jws(
                headerJSON: "{\"kid\":\"postbackd-test/0\",\"alg\":\"ES256\"}",
                payloadJSON: payload
            )
            let value = fine.map { ",\"conversion-value\":\($0)" } ?? ""
            let received = StoreDoctorTests.now.milliseconds - before
            lines.append(
                "{\"jws-string\":\"\(jws)\"\(value),\"ad-interaction-type\":\"click\",\"timestamp\":\(received)}"
            )
        }

        static func id(_ index: Int) -> String {
            "00000000-0000-4000-8000-" + String(format: "%012d", index + 1)
        }
    }

    /// A store of `engine` holding `lines`, every one accepted.
    func store(_ engine: TestEngine, _ name: String, _ lines: Lines) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: name)
        let file = try directory.write("\(name)-\(engine).jsonl", lines.lines.joined(separator: "\n"))
        let summary = try await ingest([file], into: store.location)
        #expect(summary.accepted == lines.lines.count)
        return store
    }

    func findings(_ store: TestStore, _ check: StoreDoctor.Check, now: UTCInstant = now) async throws -> [StoreFinding]
    {
        try await StoreDoctor.run(store.location, now: now, checks: [check])
    }

    // MARK: - AdAttributionKit copies

    @Test(
        "an app with 50 SKAdNetwork postbacks in 14 days and no AdAttributionKit copy; 49, or one copy, is none",
        arguments: TestEngine.available
    )
    func attributionCopies(_ engine: TestEngine) async throws {
        var lines = Lines(signer: signer)
        let window = 14 * Self.day
        // 1001: 50 in the window, the first at its very start.
        for index in 0..<50 { try lines.skan(app: 1001, before: window - Int64(index) * 6 * Self.hour) }
        // 1002: the first a millisecond before the window: 49 in it.
        for index in 0..<50 {
            try lines.skan(app: 1002, before: window + (index == 0 ? 1 : -Int64(index) * 6 * Self.hour))
        }
        // 1003: 60 and one copy an hour ago.
        for index in 0..<60 { try lines.skan(app: 1003, before: Int64(index + 1) * 4 * Self.hour) }
        try lines.aak(app: 1003, before: Self.hour)
        // 1004: 50, and a copy a millisecond before the window: copies that stopped count too.
        for index in 0..<50 { try lines.skan(app: 1004, before: Int64(index + 1) * 5 * Self.hour) }
        try lines.aak(app: 1004, before: window + 1)
        let store = try await store(engine, "copies", lines)

        let found = try await findings(store, .attributionCopies)
        #expect(found.map(\.subject) == ["app 1001", "app 1004"])
        #expect(
            found.first?.problem
                == "50 SKAdNetwork postbacks received in the 14 days from 2026-11-13T12:00Z to 2026-11-27T12:00Z, and no AdAttributionKit copy: devices on iOS 17.4 and later send both to an advertiser whose Info.plist names an AdAttributionKit endpoint"
        )
        let fix = try #require(found.first?.fix)
        #expect(
            fix.contains("AttributionCopyEndpoint") && fix.contains("top level")
                && fix.contains("postbackd doctor --plist")
        )
        // A later `now`: 1001's first postback leaves the window.
        #expect(
            try await findings(store, .attributionCopies, now: UTCInstant(milliseconds: Self.now.milliseconds + 1)).map(
                \.subject
            ) == ["app 1004"]
        )
    }

    // MARK: - Apps that stopped

    @Test(
        "an app quiet for 2 days after 7 days with a postback each and 28 in all; one postback in the 2 days, 27, or a day without, is none",
        arguments: TestEngine.available
    )
    func stoppedApps(_ engine: TestEngine) async throws {
        var lines = Lines(signer: signer)
        let quiet = 2 * Self.day
        /// `perDay[k]` postbacks in day k of the week before the quiet days (0 the oldest), an
        /// hour apart from its start; the last of day 6 a millisecond before the quiet days.
        func week(_ app: Int64, _ perDay: [Int]) throws {
            for (day, count) in perDay.enumerated() {
                let start = quiet + Int64(7 - day) * Self.day
                for index in 0..<count {
                    let last = day == 6 && index == count - 1
                    try lines.skan(app: app, before: last ? quiet + 1 : start - Int64(index) * Self.hour)
                }
            }
        }
        try week(2001, Array(repeating: 4, count: 7))
        try week(2002, Array(repeating: 4, count: 7))
        try lines.skan(app: 2002, before: quiet)  // at the quiet days' very start
        try week(2003, [4, 4, 4, 3, 4, 4, 4])
        try week(2004, [5, 5, 5, 0, 5, 5, 5])
        let store = try await store(engine, "stopped", lines)

        let found = try await findings(store, .stoppedApps)
        #expect(found.map(\.subject) == ["app 2001"])
        #expect(
            found.first?.problem
                == "no postback received in the 2 days from 2026-11-25T12:00Z to 2026-11-27T12:00Z (the last at 2026-11-25T11:59Z), after 28 in the 7 days from 2026-11-18T12:00Z to 2026-11-25T12:00Z, 4 a day"
        )
        #expect(found.first?.fix.contains("NSAdvertisingAttributionReportEndpoint") == true)
        // A millisecond earlier, 2001's last postback is in the quiet days.
        let earlier = UTCInstant(milliseconds: Self.now.milliseconds - 1)
        #expect(try await findings(store, .stoppedApps, now: earlier).isEmpty)
    }

    // MARK: - Null rates

    @Test(
        "a network whose null rate rose 20 points and doubled, with 50 and 100 first postbacks; 19 nulls, 1.7 times, 49 or 99 postbacks is none",
        arguments: TestEngine.available
    )
    func nullRates(_ engine: TestEngine) async throws {
        var lines = Lines(signer: signer)
        let recent = 3 * Self.day
        /// `count` winning first postbacks of app 3001 from `network`, `nulls` of them without a
        /// value, spread over the recent days (the first at their very start), or over the 14
        /// days before (the first at their very start).
        func postbacks(_ network: String, recent isRecent: Bool, _ count: Int, nulls: Int) throws {
            let span = isRecent ? recent : 14 * Self.day
            let start = isRecent ? recent : recent + span
            for index in 0..<count {
                try lines.skan(
                    app: 3001,
                    network: network,
                    value: index < nulls ? nil : .fine(20),
                    before: start - Int64(index) * (span / Int64(count))
                )
            }
        }
        // a: 20% → 40%: 20 points, twice.
        try postbacks("a.skadnetwork", recent: false, 100, nulls: 20)
        try postbacks("a.skadnetwork", recent: true, 50, nulls: 20)
        // b: 20% → 38%; its postbacks that lost, recent and without a value, are not counted.
        try postbacks("b.skadnetwork", recent: false, 100, nulls: 20)
        try postbacks("b.skadnetwork", recent: true, 50, nulls: 19)
        for index in 0..<10 {
            try lines.skan(app: 3001, network: "b.skadnetwork", didWin: false, before: Int64(index + 1) * Self.hour)
        }
        // c: 30% → 50%: 20 points, 1.67 times.
        try postbacks("c.skadnetwork", recent: false, 100, nulls: 30)
        try postbacks("c.skadnetwork", recent: true, 50, nulls: 25)
        // d: 49 recent; e: 99 before.
        try postbacks("d.skadnetwork", recent: false, 100, nulls: 0)
        try postbacks("d.skadnetwork", recent: true, 49, nulls: 49)
        try postbacks("e.skadnetwork", recent: false, 99, nulls: 0)
        try postbacks("e.skadnetwork", recent: true, 50, nulls: 50)
        let store = try await store(engine, "nulls", lines)

        let found = try await findings(store, .nullRates)
        #expect(found.map(\.subject) == ["network a.skadnetwork, app 3001"])
        #expect(
            found.first?.problem
                == "20 of 50 first postbacks (40.0%) received in the 3 days from 2026-11-24T12:00Z to 2026-11-27T12:00Z carry no conversion value, against 20 of 100 (20.0%) in the 14 days from 2026-11-10T12:00Z to 2026-11-24T12:00Z: up 20.0 points, 2.0 times"
        )
        #expect(found.first?.fix.contains("--app-id 3001") == true)
    }

    @Test("the null rates' rise is compared exactly, and its text rounds to a tenth")
    func nullRateArithmetic() {
        let rates = StoreDoctor.NullRates(
            "n",
            app: 1,
            recent: 3,
            recentNulls: 2,
            baseline: 3,
            baselineNulls: 1
        )
        // 66.7% against 33.3%: 33.3 points, 2.0 times.
        #expect(rates.jumped(points: 33, factor: 2))
        #expect(!rates.jumped(points: 34, factor: 2))
        #expect(!rates.jumped(points: 20, factor: 3))
        #expect(rates.rise == "up 33.3 points, 2.0 times")
        let fromNone = StoreDoctor.NullRates(
            "n",
            app: 1,
            recent: 8,
            recentNulls: 2,
            baseline: 10,
            baselineNulls: 0
        )
        #expect(fromNone.jumped(points: 25, factor: 2) && !fromNone.jumped(points: 26, factor: 2))
        #expect(fromNone.rise == "up 25.0 points, from none")
        let huge = Int64(3_000_000_000)
        let large = StoreDoctor.NullRates(
            "n",
            app: 1,
            recent: huge,
            recentNulls: huge,
            baseline: huge,
            baselineNulls: 0
        )
        #expect(large.jumped(points: 100, factor: 2))
        #expect(StoreDoctor.percent(1, 3) == "33.3%" && StoreDoctor.percent(2, 3) == "66.7%")
        #expect(StoreDoctor.tenths(405, 10) == "4.1" && StoreDoctor.tenths(-405, 10) == "-4.1")
    }

    // MARK: - Models no postback matched

    /// App 111's fixture model under `app`'s id (fine 1, 20, 30; coarse of postbacks 0 and 1).
    static func model(_ app: Int64, fine: Int = 20) -> String {
        FixtureModels.app111.replacingOccurrences(of: "\"appId\": \"111\"", with: "\"appId\": \"\(app)\"")
            .replacingOccurrences(
                of: "\"fineGrainedConversionValue\": 20",
                with: "\"fineGrainedConversionValue\": \(fine)"
            )
    }

    @Test(
        "a model in force 7 days that mapped none of its app's postbacks; a match at the window's start, or a model in force a millisecond less, is none",
        arguments: TestEngine.available
    )
    func unmatchedModels(_ engine: TestEngine) async throws {
        var lines = Lines(signer: signer)
        let week = 7 * Self.day
        /// 10 postbacks of `app` with fine 41 (no model here maps it) and 5 without a value in
        /// the window, and one with fine 20 `matchBefore` before `now`.
        func traffic(_ app: Int64, matchBefore: Int64?) throws {
            for index in 0..<10 {
                try lines.skan(app: app, value: .fine(41), before: Int64(index + 1) * 12 * Self.hour)
            }
            for index in 0..<5 { try lines.skan(app: app, value: nil, before: Int64(index + 1) * 10 * Self.hour) }
            if let matchBefore { try lines.skan(app: app, value: .fine(20), before: matchBefore) }
        }
        try traffic(4001, matchBefore: week + 1)
        try traffic(4002, matchBefore: week)
        // 4003 and 4004: a second model in force from 8 days before `now` (a millisecond
        // later for 4003), which maps fine 21 instead of 20; the first maps 20.
        try traffic(4003, matchBefore: week)
        try traffic(4004, matchBefore: week)
        let store = try await store(engine, "models", lines)
        var files: [Int64: String] = [:]
        for app: Int64 in [4001, 4002, 4003, 4004, 4005] {
            files[app] = try directory.write("model-\(app)-\(engine).json", Self.model(app))
            _ = try await ModelsJob.add(files: [try #require(files[app])], location: store.location)
        }
        let second = Self.now.milliseconds - 8 * Self.day
        for (app, start) in [(Int64(4003), second + 1), (4004, second)] {
            let file = try directory.write("model-\(app)-v2-\(engine).json", Self.model(app, fine: 21))
            files[app] = file
            _ = try await ModelsJob.add(
                files: [file],
                effectiveFrom: .at(UTCInstant(milliseconds: start)),
                location: store.location
            )
        }

        let found = try await findings(store, .unmatchedModels)
        let path = { (app: Int64) in canonicalPath(files[app] ?? "") }
        #expect(
            found.map(\.subject) == [
                "model \(path(4001)) (app 4001, install)", "model \(path(4004)) (app 4004, install)",
                "model \(path(4005)) (app 4005, install)",
            ]
        )
        #expect(
            found.first?.problem
                == "in force from the beginning: none of the 15 install postbacks of app 4001 received in the 7 days from 2026-11-20T12:00Z to 2026-11-27T12:00Z carried a value it maps: 10 with a value it does not map (most often fine 41 ×10), 5 without a value"
        )
        #expect(
            found.dropFirst().first?.problem.hasPrefix(
                "in force since 2026-11-19T12:00Z: none of the 16 install postbacks of app 4004"
            ) == true
        )
        #expect(
            found.last?.problem
                == "in force from the beginning: no install postbacks of app 4005 were received in the 7 days from 2026-11-20T12:00Z to 2026-11-27T12:00Z, so it decoded none"
        )
        #expect(found.first?.fix.contains("postbackd models add --effective-from") == true)
    }

    // MARK: - A healthy store

    @Test(
        "a healthy store: steady SKAdNetwork postbacks and their AdAttributionKit copies, a steady null rate, a model that maps them",
        arguments: TestEngine.available
    )
    func healthy(_ engine: TestEngine) async throws {
        var lines = Lines(signer: signer)
        // Every hour for 17 days, one in four without a value; a copy every 6 hours.
        for hour in 0..<(17 * 24) {
            try lines.skan(app: 5001, value: hour % 4 == 0 ? nil : .fine(20), before: Int64(hour) * Self.hour + 1)
            if hour % 6 == 0 { try lines.aak(app: 5001, before: Int64(hour) * Self.hour + 2) }
        }
        let store = try await store(engine, "healthy", lines)
        _ = try await ModelsJob.add(
            files: [try directory.write("healthy-\(engine).json", Self.model(5001))],
            location: store.location
        )
        #expect(try await StoreDoctor.run(store.location, now: Self.now) == [])
        // Two days later, with nothing received since, the app has stopped.
        let later = UTCInstant(milliseconds: Self.now.milliseconds + 2 * Self.day)
        #expect(try await StoreDoctor.run(store.location, now: later).map(\.subject) == ["app 5001"])
    }

    // MARK: - Bounded reads

    @Test("every statement reads postbacks through the index on the day received", arguments: TestEngine.available)
    func indexed(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "plans")
        let now = Self.now
        let from = UTCInstant(milliseconds: now.milliseconds - 17 * Self.day)
        let statements: [SQLQuery] = [
            StoreDoctorSQL.withoutCopies(from: from, to: now, minimum: 50),
            StoreDoctorSQL.stopped(
                days: [from, UTCInstant(milliseconds: from.milliseconds + Self.day)],
                quiet: now,
                to: now,
                minimum: 1
            ),
            StoreDoctorSQL.nullRates(
                from: from,
                recent: UTCInstant(milliseconds: now.milliseconds - Self.day),
                to: now,
                minimum: (50, 100)
            ),
            StoreDoctorSQL.values(apps: [1, 2], from: from, to: now),
        ]
        try await PostbackStores.with(store.location) { storage in
            for statement in statements {
                let plan = try await storage.withSQL("explain", .read) { sql in
                    switch sql.dialect {
                    case .sqlite:
                        return try await sql.rows("EXPLAIN QUERY PLAN \(statement)").map { try $0.string(3) }
                    case .postgres:
                        // An empty table is read whole by any plan; a plan that can use the index
                        // does when a scan of the table is ruled out.
                        try await sql.execute("SET LOCAL enable_seqscan = off")
                        return try await sql.rows("EXPLAIN \(statement)").map { try $0.string(0) }
                    }
                }
                #expect(plan.contains { $0.contains("postbacks_received_day") }, "\(plan)")
                #expect(
                    !plan.contains { $0.contains("SCAN postbacks") || $0.contains("Seq Scan on postbacks") },
                    "\(plan)"
                )
            }
        }
    }
}

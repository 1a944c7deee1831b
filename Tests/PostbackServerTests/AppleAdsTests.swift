import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostbackKit
import PostbackServer
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `apple-ads add`, `fetch`, `status`, `report`, the token route and `report --with-apple-ads`,
/// against a stand-in for Apple's attribution endpoint: a real HTTP server on loopback that
/// speaks the documented protocol (POST, token as the text/plain body; 200 record, 400, 404,
/// 500) and answers by scenario, chosen by the token's prefix.
@Suite("Apple Ads", .serialized, .timeLimit(.minutes(20)))
struct AppleAdsTests {
    let directory: TemporaryDirectory
    static let app: Int64 = 525_463_029

    init() throws {
        directory = try TemporaryDirectory("apple-ads")
    }

    // MARK: Helpers

    /// Runs `postbackd arguments…` on a thread of its own (the stand-in answers in this process).
    static func postbackd(_ arguments: [String], input: [UInt8]? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input)
    }

    /// A submission line, obtained a minute ago unless said.
    static func line(
        _ token: String,
        obtainedAt: String? = nil,
        app: Int64 = AppleAdsTests.app,
        install: String? = nil
    ) -> String {
        let obtained = obtainedAt ?? iso(Date().addingTimeInterval(-60))
        let installID = install.map { #", "install_id": "\#($0)""# } ?? ""
        return #"{"app_id": \#(app), "token": "\#(token)", "obtained_at": "\#(obtained)"\#(installID)}"#
    }

    static func iso(_ date: Date) -> String {
        UTCInstant(milliseconds: Int64(date.timeIntervalSince1970 * 1000)).iso8601
    }

    /// `state|attempts|not_found|token kept` of a token.
    func token(_ store: TestStore, _ token: String) async throws -> String? {
        let digest = AppleAdsToken(appID: 1, token: token, obtainedAt: UTCInstant(milliseconds: 0)).sha256
        return try await store.strings(
            """
            SELECT state || '|' || attempts || '|' || not_found || '|' || CASE WHEN token IS NULL THEN 0 ELSE 1 END
            FROM apple_ads_tokens WHERE token_sha256 = '\(digest)'
            """
        ).first ?? nil
    }

    /// `apple-ads status --format json` of `store`.
    static func status(_ store: TestStore) async throws -> [String: Any] {
        let status = try await postbackd(["apple-ads", "status", "--db", store.argument, "--format", "json"])
        return try #require(
            try JSONSerialization.jsonObject(with: Data(status.standardOutput.utf8)) as? [String: Any]
        )
    }

    static func spacings(_ requests: [Request]) -> [Double] {
        zip(requests.dropFirst(), requests).map { $0.at.timeIntervalSince($1.at) }
    }

    // MARK: Tests

    @Test(
        "fetch --once follows Apple's rules for every scenario; add and fetch again change nothing; status and report match the records",
        arguments: TestEngine.available
    )
    func scenarios(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let standIn = try await StandIn()
        let now = Date()
        let tokens = ["record-1", "twice404-1", "invalid-1", "organic-1", "forever404-1", "unavailable-1", "odd-1"]
        var lines = tokens.map { Self.line($0, obtainedAt: Self.iso(now.addingTimeInterval(-3600))) }
        lines.append(Self.line("record-expired", obtainedAt: Self.iso(now.addingTimeInterval(-25 * 3600))))
        lines.append(Self.line("record-1"))  // the framework's same token again
        lines.append(#"{"app_id": 525463029}"#)
        lines.append("not json")
        lines.append(#"{"app_id": 525463029, "token": "record-2"}"#)
        let file = try directory.write("tokens.jsonl", lines.joined(separator: "\n") + "\n")

        let added = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, file])
        #expect(added.status == 1, "three lines refused")
        #expect(added.standardError.contains("tokens.jsonl:10: token: missing"), "\(added.standardError)")
        #expect(added.standardError.contains("tokens.jsonl:11: not valid JSON"), "\(added.standardError)")
        #expect(added.standardError.contains("tokens.jsonl:12: obtained_at: missing"), "\(added.standardError)")
        #expect(
            added.standardError.contains("7 added, 1 already stored, 1 expired on arrival, 3 refused"),
            "\(added.standardError)"
        )

        let fetch = [
            "apple-ads", "fetch", "--db", store.argument, "--endpoint", standIn.endpoint, "--retry-after", "1",
        ]
        let run = try await Self.postbackd(fetch + ["--once"])
        #expect(run.status == 0, "\(run.standardError)")

        // Every request: Apple's path, the token as the text/plain body.
        let requests = standIn.requests
        #expect(requests.allSatisfy { $0.contentType == "text/plain" && $0.path == "/api/v1/" })
        #expect(Set(requests.map(\.token)) == Set(tokens), "the expired token is never sent")
        for token in ["record-1", "invalid-1", "organic-1", "odd-1"] {
            #expect(standIn.requests(token).count == 1, "\(token)")
        }
        // 404: retried at least 5 seconds later, three times, then left for the growing interval.
        let twice = standIn.requests("twice404-1")
        #expect(twice.map(\.status) == [404, 404, 200])
        #expect(Self.spacings(twice).allSatisfy { $0 >= 5.0 }, "\(Self.spacings(twice))")
        let forever = standIn.requests("forever404-1")
        #expect(forever.map(\.status) == [404, 404, 404, 404])
        #expect(Self.spacings(forever).allSatisfy { $0 >= 5.0 }, "\(Self.spacings(forever))")
        #expect(
            standIn.requests("unavailable-1").map(\.status) == [500],
            "due again after this pass began: left for the next"
        )

        #expect(try await token(store, "record-1") == "attributed|1|0|0")
        #expect(try await token(store, "twice404-1") == "attributed|3|2|0")
        #expect(try await token(store, "invalid-1") == "invalid|1|0|0")
        #expect(try await token(store, "organic-1") == "not_attributed|1|0|0")
        #expect(try await token(store, "forever404-1") == "pending|4|4|1", "still valid: kept, retried later")
        #expect(try await token(store, "unavailable-1") == "pending|1|0|1")
        #expect(try await token(store, "record-expired") == "expired|0|0|0")
        let forever404Due = try await store.strings(
            "SELECT due_ms - last_attempt_ms FROM apple_ads_tokens WHERE state = 'pending' AND last_status = '404'"
        )
        #expect(forever404Due == ["60000"], "after the three quick retries: a minute")
        // The record: each field a column, the body whole.
        let record = try await store.strings(
            """
            SELECT date || '|' || org_id || '|' || campaign_id || '|' || ad_group_id || '|' || keyword_id || '|' || ad_id
                || '|' || country_or_region || '|' || conversion_type || '|' || claim_type || '|' || supply_placement
            FROM apple_ads_attributions WHERE conversion_type = 'Download'
            """
        )
        #expect(
            record == ["2026-11-20|40669820|542370539|542317095|87675432|542317136|US|Download|Click|search-results"]
        )
        let raw = try await store.strings("SELECT raw FROM apple_ads_attributions WHERE conversion_type = 'Download'")
        #expect(raw == [StandIn.record], "unknown fields kept")

        // The forever404 token is due again a minute after its last 404. On a loaded machine
        // that minute can pass before a later pass starts: then, and only then, it may be sent
        // again (the stand-in answers 404 again and it stays pending).
        let lastForever404 = try #require(forever.last).at
        func dueAgain(_ request: Request) -> Bool {
            request.token == "forever404-1" && request.at.timeIntervalSince(lastForever404) >= 59
        }

        // The next pass sends only the token due again after its 500.
        let beforeSecond = standIn.requests.count
        let second = try await Self.postbackd(fetch + ["--once"])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(
            standIn.requests.dropFirst(beforeSecond).filter { !dueAgain($0) }.map(\.token) == ["unavailable-1"]
        )
        #expect(standIn.requests("unavailable-1").map(\.status) == [500, 200])
        #expect(try await token(store, "unavailable-1") == "attributed|2|0|0")

        // The same tokens again, then another pass: nothing is sent (the others are resolved;
        // the forever404 token only if its minute has passed).
        let again = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, file])
        #expect(again.standardError.contains("0 added, 9 already stored"), "\(again.standardError)")
        let before = standIn.requests.count
        let third = try await Self.postbackd(fetch + ["--once"])
        #expect(third.status == 0, "\(third.standardError)")
        #expect(
            standIn.requests.dropFirst(before).allSatisfy(dueAgain),
            "a resolved token is never exchanged again: \(standIn.requests.dropFirst(before).map(\.token))"
        )

        let json = try await Self.status(store)
        #expect(
            json["tokens"] as? [String: Int]
                == ["pending": 1, "attributed": 4, "not_attributed": 1, "invalid": 1, "expired": 1]
        )
        #expect(json["pending_by_last_status"] as? [String: Int] == ["404": 1])
        #expect(json["unknown_conversion_types"] as? [String: Int] == ["Reinstall": 1])
        #expect(json["unknown_claim_types"] as? [String: Int] == ["Glance": 1])
        #expect(json["unknown_supply_placements"] as? [String: Int] == ["search-results": 1])
        #expect(json["test_records"] as? Int == 0)

        // By hand: record-1 counts on its click day (2026-11-20), unavailable-1 on its
        // impression day (2026-11-19), the others on the day they were obtained.
        let obtained = UTCInstant(milliseconds: Int64(now.addingTimeInterval(-3600).timeIntervalSince1970 * 1000)).day
            .description
        var expected: [String: [String: Int]] = [:]
        func add(_ day: String, _ metric: String) { expected[day, default: [:]][metric, default: 0] += 1 }
        add("2026-11-20", "installs")
        add("2026-11-19", "preorders")
        add(obtained, "redownloads")
        add(obtained, "not_attributed")
        add(obtained, "other_conversions")
        let report = try await Self.postbackd([
            "apple-ads", "report", "--db", store.argument, "--by", "date", "--format", "json",
        ])
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(report.standardOutput.utf8)) as? [[String: Any]]
        )
        var seen: [String: [String: Int]] = [:]
        for row in rows {
            let day = try #require(row["date"] as? String)
            for metric in AppleAdsMetric.allCases.map(\.rawValue) where (row[metric] as? Int ?? 0) > 0 {
                seen[day, default: [:]][metric] = row[metric] as? Int
            }
        }
        #expect(seen == expected, "\(report.standardOutput)")
        let byCampaign = try await Self.postbackd([
            "apple-ads", "report", "--db", store.argument, "--by", "campaign_id,claim_type", "--format", "csv",
        ])
        #expect(
            byCampaign.standardOutput == """
                campaign_id,claim_type,installs,redownloads,preorders,other_conversions,not_attributed,test
                ,,0,0,0,0,1,0
                99,Glance,0,0,0,1,0,0
                99,Impression,0,0,1,0,0,0
                542370539,,0,1,0,0,0,0
                542370539,Click,1,0,0,0,0,0

                """
        )
        await standIn.stop()
    }

    @Test(
        "kill -9 of fetch --follow, then fetch --once after the leases end: every token resolved, sent again only if it was in flight",
        arguments: TestEngine.available
    )
    func killed(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        // Four answered, the rest held, and the fetch killed as the first is held: the kill lands
        // part way, before a held request can time out (2 s) and be put off as a failed attempt,
        // which `fetch --once` would rightly leave for later. A poll of the stand-in's requests
        // ran seconds late under CI's load, past that timeout.
        let fetching = Mutex<Int32?>(nil)
        let gate = Gate(letting: 4) {
            if let pid = fetching.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
        let standIn = try await StandIn(slowGate: gate)
        let tokens = (0..<16).map { "slow-\($0)" }
        let file = try directory.write("slow.jsonl", tokens.map { Self.line($0) }.joined(separator: "\n"))
        let added = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, file])
        #expect(added.status == 0, "\(added.standardError)")
        let fetch = [
            "apple-ads", "fetch", "--db", store.argument, "--endpoint", standIn.endpoint, "--timeout", "2",
            "--concurrency", "2",
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Postbackd.executable)
        process.arguments = fetch + ["--follow"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        fetching.withLock { $0 = process.processIdentifier }
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "killed as the gate held a request")
        gate.open()
        let atKill = standIn.requests.count
        #expect((1...4).contains(atKill), "killed mid-way (\(atKill))")

        // Leased tokens wait for their lease (2 × 2 s + 5 s), then are sent again.
        while Date() < deadline {
            let leased = try await store.count(
                "apple_ads_tokens",
                where: "lease_until_ms > \(Int64(Date().timeIntervalSince1970 * 1000) - 100)"
            )
            if leased == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let run = try await Self.postbackd(fetch + ["--once"])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(try await store.count("apple_ads_tokens", where: "state = 'attributed'") == tokens.count)
        #expect(try await store.count("apple_ads_attributions") == tokens.count, "one record per token")
        let repeated = tokens.filter { standIn.requests($0).count > 1 }
        #expect(repeated.count <= 2, "only the two in flight at the kill: \(repeated)")
        #expect(tokens.allSatisfy { standIn.requests($0).count <= 2 })
        await standIn.stop()
    }

    @Test(
        "POST /v1/apple-ads/token over real HTTP: 202 once stored, the same token a no-op, 400 naming the field; serve --apple-ads exchanges it",
        arguments: TestEngine.available
    )
    func tokenRoute(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let standIn = try await StandIn()
        let server = try await ServerProcess.start(
            ["--db", store.argument, "--apple-ads", "--apple-ads-endpoint", standIn.endpoint],
            directory: directory.path
        )
        let client = try HTTPClient.forTests()
        let url = server.base + "/v1/apple-ads/token"
        func post(_ body: String) async throws -> Answer { try await client.send(.POST, url, body: Array(body.utf8)) }

        let first = try await post(#"{"app_id": "525463029", "token": "record-route"}"#)
        #expect(first.status == 202)
        #expect(first.json["status"] as? String == "stored" && first.json["state"] as? String == "pending")
        // Stored when answered (the flush itself is the group commit's, tested with serve).
        #expect(try await store.count("apple_ads_tokens") == 1, "stored before the answer")
        let same = try await post(#"{"app_id": 525463029, "token": "record-route"}"#)
        #expect(same.status == 202 && same.json["status"] as? String == "known")
        let old = try await post(
            #"{"app_id": 525463029, "token": "record-old", "obtained_at": "2020-01-01T00:00:00Z"}"#
        )
        #expect(old.status == 202 && old.json["state"] as? String == "expired")

        for (body, field) in [
            ("{", nil), (#"{"app_id": 525463029}"#, "token"), (#"{"token": "x"}"#, "app_id"),
            (#"{"app_id": "apple", "token": "x"}"#, "app_id"), (#"{"app_id": 1, "token": "has space"}"#, "token"),
            (#"{"app_id": 1, "token": "x", "obtained_at": "2999-01-01T00:00:00Z"}"#, "obtained_at"),
            (#"{"app_id": 1, "token": "x", "obtained_at": "yesterday"}"#, "obtained_at"), ("[1]", nil),
        ] as [(String, String?)] {
            let answer = try await post(body)
            #expect(answer.status == 400, "\(body)")
            #expect(answer.json["field"] as? String == field, "\(body): \(answer.body)")
            #expect((answer.json["reason"] as? String)?.isEmpty == false)
        }
        #expect(try await client.send(.GET, url).status == 405)
        #expect(try await store.count("apple_ads_tokens") == 2, "nothing stored for a refused body")

        let deadline = Date().addingTimeInterval(15)
        while try await store.count("apple_ads_tokens", where: "state = 'attributed'") < 1 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await token(store, "record-route") == "attributed|1|0|0")
        let again = try await post(#"{"app_id": 525463029, "token": "record-route"}"#)
        #expect(again.status == 202 && again.json["status"] as? String == "known")
        // Nothing is left to exchange (the token attributed, the old one expired), so the loop sends
        // nothing more; the server's stop ends the loop before the stand-in's requests are read.
        #expect(try await store.count("apple_ads_tokens", where: "state = 'pending'") == 0)
        #expect(server.stop() == 0)
        #expect(standIn.requests.map(\.token) == ["record-route"], "exchanged once; the expired token never")
        await standIn.stop()
    }

    @Test(
        "Apple's answers as it sends them now: PreOrder in any case, the developer-mode test record, attribution false for targeted campaigns, the documented supply placements",
        arguments: TestEngine.available
    )
    func currentAnswers(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let standIn = try await StandIn()
        let tokens = ["PreOrder-1", "PREORDER-1", "devtest-1", "targeted-1", "placement-1", "odd-1", "record-1"]
        let file = try directory.write("current.jsonl", tokens.map { Self.line($0) }.joined(separator: "\n") + "\n")
        let added = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, file])
        #expect(added.status == 0, "\(added.standardError)")
        let fetched = try await Self.postbackd([
            "apple-ads", "fetch", "--db", store.argument, "--endpoint", standIn.endpoint, "--once",
        ])
        #expect(fetched.status == 0, "\(fetched.standardError)")
        #expect(fetched.standardError.contains("6 attributed, 1 not attributed"), "\(fetched.standardError)")
        #expect(try await token(store, "targeted-1") == "not_attributed|1|0|0")

        // Each token in exactly one count: the pre-orders whatever their case, the test record
        // in `test` only, never in installs.
        let report = try await Self.postbackd([
            "apple-ads", "report", "--db", store.argument, "--by", "campaign_id", "--format", "csv",
        ])
        #expect(report.status == 0, "\(report.standardError)")
        #expect(
            report.standardOutput == """
                campaign_id,installs,redownloads,preorders,other_conversions,not_attributed,test
                ,0,0,0,0,1,0
                77,1,0,2,0,0,0
                99,0,0,0,1,0,0
                542370539,1,0,0,0,0,0
                1234567890,0,0,0,0,0,1

                """
        )
        let json = try await Self.status(store)
        #expect(json["unknown_conversion_types"] as? [String: Int] == ["Reinstall": 1], "PreOrder is documented")
        #expect(json["unknown_supply_placements"] as? [String: Int] == ["search-results": 1])
        #expect(json["test_records"] as? Int == 1)
        #expect((json["tokens"] as? [String: Int])?["not_attributed"] == 1)
        let text = try await Self.postbackd(["apple-ads", "status", "--db", store.argument])
        #expect(text.standardOutput.contains("not_attributed  1"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("developer-mode test records (in no count): 1"))
        #expect(text.standardOutput.contains(#"undocumented supplyPlacement values (kept): "search-results" 1"#))

        // Beside the SKAN report, the test record is no install either.
        let side = try await Self.postbackd([
            "report", "--db", store.argument, "--by", "app_id", "--with-apple-ads", "--format", "csv",
        ])
        #expect(side.status == 0, "\(side.standardError)")
        let lines: [String] = side.standardOutput.split(separator: "\n").map(String.init)
        let header: [String] =
            lines.first?.split(separator: ",", omittingEmptySubsequences: false).map(String.init) ?? []
        let values: [String] =
            lines.dropFirst().first?.split(separator: ",", omittingEmptySubsequences: false).map(String.init) ?? []
        let cells: [String: String] = Dictionary(uniqueKeysWithValues: zip(header, values))
        #expect(cells["apple_ads_installs"] == "2", "\(side.standardOutput)")
        await standIn.stop()
    }
}

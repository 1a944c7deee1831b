import AsyncHTTPClient
import Foundation
import NIOCore
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The report API, the summary and the dashboard of `postbackd serve`, and `report --format
/// html`: the built binary on a loopback port, a real HTTP client, a real browser (headless
/// Chromium), both engines.
@Suite("postbackd serve: report API and dashboard", .serialized, .timeLimit(.minutes(20)))
struct DashboardTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("dashboard")
    }

    private func sampleStore(_ engine: TestEngine) async throws -> TestStore {
        try await TestStore.sample(engine, in: directory)
    }

    // MARK: The report API

    @Test("GET /api/v1/report answers byte for byte what report --format json prints", arguments: TestEngine.available)
    func reportEqualsCLI(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        // What the sample's networks claim (SamplePostbacks/claims), for with_claims.
        let claimFiles = try FileManager.default.contentsOfDirectory(atPath: Repository.path("SamplePostbacks/claims"))
            .filter { $0.hasSuffix(".csv") }.sorted().map { Repository.path("SamplePostbacks/claims/" + $0) }
        let claimed = try await Postbackd.run(["claims", "add", "--db", store.argument] + claimFiles)
        #expect(claimed.status == 0 && claimFiles.count == 5, "\(claimed.standardError)")
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        // (query, the same options on the command line)
        let cases: [(String, [String])] = [
            ("", []),
            (
                "with_claims=true&date_basis=received&by=date,ad_network_id",
                ["--with-claims", "--date-basis", "received", "--by", "date,ad_network_id"]
            ),
            (
                "cohorts=true&from=2026-11-10&as_of=2026-12-01",
                ["--cohorts", "--from", "2026-11-10", "--as-of", "2026-12-01"]
            ),
            (
                "by=app_id,ad_network_id&from=2026-11-15&to=2026-11-18",
                ["--by", "app_id,ad_network_id", "--from", "2026-11-15", "--to", "2026-11-18"]
            ),
            ("by=date&events=true", ["--by", "date", "--events"]),
            (
                "date_basis=install&by=install_date,crowd_anonymity_tier",
                ["--date-basis", "install", "--by", "install_date,crowd_anonymity_tier"]
            ),
            ("by=date,app_id&with_apple_ads=1", ["--by", "date,app_id", "--with-apple-ads"]),
            (
                "by=date&app_id=1254734734&ad_network_id=fzbddbi26k.skadnetwork&ad_network_id=vdsbuozq6b.skadnetwork",
                [
                    "--by", "date", "--app-id", "1254734734", "--ad-network-id",
                    "fzbddbi26k.skadnetwork,vdsbuozq6b.skadnetwork",
                ]
            ),
            ("by=", ["--by", ""]),
            // Form-encoded, as a browser submits the dashboard's filters: '+' is a space.
            ("by=date,+app_id&date%5Fbasis=received", ["--by", "date, app_id", "--date-basis", "received"]),
            ("by=date%2C%20app_id", ["--by", "date, app_id"]),
            (
                "by=campaign,source_identifier_digits&from=2026-11-16",
                ["--by", "campaign,source_identifier_digits", "--from", "2026-11-16"]
            ),
        ]
        for (query, arguments) in cases {
            let cli = try await Postbackd.run(["report", "--db", store.argument, "--format", "json"] + arguments)
            #expect(cli.status == 0, "\(arguments): \(cli.standardError)")
            let answer = try await client.send(.GET, server.base + "/api/v1/report?" + query)
            #expect(answer.status == 200, "\(query): \(answer.body)")
            #expect(answer.header("Content-Type") == "application/json")
            #expect(answer.body == cli.standardOutput, "\(query)")
            #expect(answer.body.count > 2, "\(query): rows expected")
        }
        // The claims join the sample's rows: claimed installs beside the verified ones.
        let claims = try await client.send(
            .GET,
            server.base + "/api/v1/report?with_claims=true&date_basis=received&by=date,ad_network_id"
        )
        #expect(claims.body.range(of: "\"claimed_installs\":[0-9]", options: .regularExpression) != nil)
        #expect(claims.body.range(of: "\"claim_coverage\":[0-9]", options: .regularExpression) != nil)
        // The filtered report holds only the app and networks asked for.
        let filtered = try await client.send(
            .GET,
            server.base
                + "/api/v1/report?by=app_id,ad_network_id&app_id=1254734734&ad_network_id=fzbddbi26k.skadnetwork"
        )
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(filtered.body.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["app_id"] as? Int == 1_254_734_734)
        #expect(rows.first?["ad_network_id"] as? String == "fzbddbi26k.skadnetwork")
    }

    @Test("the report API refuses what report refuses, naming the parameter; unknown and repeated parameters are 400")
    func reportErrors() async throws {
        let store = try await sampleStore(.sqlite)
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        let cases: [(String, String)] = [
            ("from=2026-13-01", "from"),
            ("from=2026-11-20&to=2026-11-10", "from"),
            ("by=date,colour", "by"),
            ("date_basis=sent", "date_basis"),
            ("app_id=abc", "app_id"),
            ("events=maybe", "events"),
            ("by=date&by=app_id", "by"),
            ("format=csv", "format"),
            ("with_apple_ads=true&events=true", "with_apple_ads"),
            ("with_claims=true&events=true", "with_claims"),
            ("cohorts=true&by=ad_network_id", "cohorts"),
        ]
        for (query, field) in cases {
            let answer = try await client.send(.GET, server.base + "/api/v1/report?" + query)
            #expect(answer.status == 400, "\(query)")
            #expect(answer.jsonStatus == "error", "\(query)")
            #expect(answer.json["field"] as? String == field, "\(query): \(answer.body)")
            #expect((answer.json["reason"] as? String)?.isEmpty == false)
        }
        let post = try await client.send(.POST, server.base + "/api/v1/report", body: [])
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        let summary = try await client.send(.GET, server.base + "/api/v1/summary?by=date")
        #expect(summary.status == 400)
        #expect(summary.json["field"] as? String == "by")
    }

    @Test("the report API warns in a header when postbacks arrived after the last aggregate")
    func staleness() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let file = try directory.write("few.jsonl", try await Postbackd.generated(count: 40, seed: 16))
        #expect(
            try await Postbackd.run(["ingest", "--db", store.argument, "--keys", TestKeys.directory, file]).status == 0
        )
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let answer = try await HTTPClient.forTests().send(.GET, server.base + "/api/v1/report")
        #expect(answer.status == 200)
        #expect(answer.body == "[]")
        #expect(answer.header("X-Postbackd-Warning")?.contains("run postbackd aggregate") == true)
    }

    // MARK: The summary

    @Test(
        "GET /api/v1/summary: the totals report's numbers and the intake of the same days",
        arguments: TestEngine.available
    )
    func summary(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        // Without a period: the 30 days up to the last day with postbacks.
        let answer = try await client.send(.GET, server.base + "/api/v1/summary")
        #expect(answer.status == 200, "\(answer.body)")
        let from = try #require(answer.json["from"] as? String)
        let to = try #require(answer.json["to"] as? String)
        let last = try #require(
            try await Postbackd.run(["report", "--db", store.argument, "--by", "date", "--format", "csv"])
                .standardOutput
                .split(separator: "\n").last?.split(separator: ",").first.map(String.init)
        )
        #expect(to == last)
        let first = try #require(UTCDay(from))
        let end = try #require(UTCDay(to))
        #expect(end.daysSinceEpoch - first.daysSinceEpoch == 29)
        let totals = try await Postbackd.run([
            "report", "--db", store.argument, "--by", "", "--from", from, "--to", to, "--format", "json",
        ])
        let row = try #require(
            (try JSONSerialization.jsonObject(with: Data(totals.standardOutput.utf8)) as? [[String: Any]])?.first
        )
        for metric in ["postbacks", "installs", "redownloads", "null_conversion_values", "unmodelled"] {
            #expect(answer.json[metric] as? Int == row[metric] as? Int, "\(metric)")
        }
        #expect(
            (answer.json["revenue"] as? [String: Any])?.keys.sorted()
                == (row["revenue"] as? [String: Any])?.keys.sorted()
        )
        // The intake: every quarantined body and duplicate copy received in the period.
        func number(_ sql: String) async throws -> Int? {
            // PostgreSQL's rows come as a record's text: "(30)".
            try await store.rows(sql).first.flatMap { Int($0.trimmingCharacters(in: CharacterSet(charactersIn: "()"))) }
        }
        let quarantined = try await number(
            "SELECT COALESCE(SUM(received_count), 0) FROM quarantine WHERE \(dayOf(engine)) BETWEEN '\(from)' AND '\(to)'"
        )
        let duplicates = try await number(
            "SELECT COUNT(*) FROM sightings WHERE \(dayOf(engine)) BETWEEN '\(from)' AND '\(to)'"
        )
        #expect(answer.json["quarantined"] as? Int == quarantined)
        #expect(answer.json["duplicates"] as? Int == duplicates)
        #expect((answer.json["quarantined"] as? Int ?? 0) > 0)
        #expect((answer.json["duplicates"] as? Int ?? 0) > 0)
    }

    private func dayOf(_ engine: TestEngine) -> String {
        engine == .sqlite ? "substr(received_at, 1, 10)" : "to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    }

    // MARK: Access control

    @Test(
        "--dashboard-token: the API takes the bearer token, the page a login cookie; postbacks stay open; the token is never shown"
    )
    func token() async throws {
        let store = try await sampleStore(.sqlite)
        let token = "dashboard-secret-\(UInt64.random(in: 1...UInt64.max))"
        let tokenFile = try directory.write("token", token + "\n")
        let server = try await ServerProcess.start(
            ["--db", store.argument, "--dashboard-token-file", tokenFile, "--access-log"],
            directory: directory.path
        )
        var configuration = HTTPClient.testConfiguration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { Task { try? await client.shutdown() } }

        for path in ["/api/v1/report", "/api/v1/summary"] {
            let refused = try await client.send(.GET, server.base + path)
            #expect(refused.status == 401, "\(path)")
            #expect(refused.header("WWW-Authenticate") == "Bearer")
            let wrong = try await client.send(
                .GET,
                server.base + path,
                headers: [("Authorization", "Bearer " + token + "x")]
            )
            #expect(wrong.status == 401, "\(path)")
            let allowed = try await client.send(
                .GET,
                server.base + path,
                headers: [("Authorization", "Bearer " + token)]
            )
            #expect(allowed.status == 200, "\(path)")
        }
        let page = try await client.send(.GET, server.base + "/dashboard")
        #expect(page.status == 303)
        #expect(page.header("Location") == "/login")
        let form = try await client.send(.GET, server.base + "/login")
        #expect(form.status == 200)
        #expect(form.body.contains("type=\"password\""))

        let form2 = [("Content-Type", "application/x-www-form-urlencoded")]
        let refused = try await client.send(
            .POST,
            server.base + "/login",
            body: Array("token=guess".utf8),
            headers: form2
        )
        #expect(refused.status == 401)
        #expect(refused.header("Set-Cookie") == nil)
        let encoded = token.replacingOccurrences(of: "-", with: "%2D")
        let accepted = try await client.send(
            .POST,
            server.base + "/login",
            body: Array("token=\(encoded)".utf8),
            headers: form2
        )
        #expect(accepted.status == 303)
        #expect(accepted.header("Location") == "/dashboard")
        let cookie = try #require(accepted.header("Set-Cookie"))
        #expect(cookie.hasPrefix("postbackd_session="))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        #expect(!cookie.contains(token))
        let session = String(cookie.prefix { $0 != ";" })
        let signedIn = try await client.send(
            .GET,
            server.base + "/dashboard",
            headers: [("Cookie", "theme=dark; " + session)]
        )
        #expect(signedIn.status == 200)
        #expect(signedIn.body.contains("<figure"))
        let forged = try await client.send(
            .GET,
            server.base + "/dashboard",
            headers: [("Cookie", "postbackd_session=00")]
        )
        #expect(forged.status == 303)

        // Devices carry no token: the postback routes and health stay open.
        let postback = try await Postbackd.generated(count: 1, seed: 7, duplicates: 0, invalid: 0)
        let received = try await client.send(
            .POST,
            server.base + "/.well-known/skadnetwork/report-attribution/",
            body: Array(postback.split(separator: "\n")[0].utf8)
        )
        #expect(received.status == 200)
        #expect(try await client.send(.GET, server.base + "/healthz").status == 200)

        #expect(server.stop() == 0)
        #expect(!server.standardOutput.contains(token) && !server.standardError.contains(token))
        #expect(
            !server.standardError.contains(String(cookie.prefix { $0 != ";" }.dropFirst("postbackd_session=".count)))
        )
    }

    // MARK: In a browser

    @Test("the browser cases run", .enabled(if: Chromium.cases.noticeRuns, "they do"))
    func browserCasesRun() {
        // On a machine without a browser the browser cases are skipped, and this says so; CI
        // installs one, and fails here if it did not.
        #expect(Chromium.cases.noticed(), "CI must run the browser cases: \(Chromium.skipNotice)")
    }

    @Test(
        "the dashboard in headless Chromium: every chart drawn, the numbers in its tables, nothing fetched from elsewhere",
        // Skipped without a browser; `browserCasesRun` says so, and fails under CI.
        .enabled(if: Chromium.installed != nil, "headless Chromium is installed")
    )
    func dashboardInBrowser() async throws {
        let store = try await sampleStore(.sqlite)
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let summary = try await HTTPClient.forTests().send(.GET, server.base + "/api/v1/summary")
        let installs = try #require(summary.json["installs"] as? Int)

        let browser = try Chromium(directory: directory)
        let url = server.base + "/dashboard"
        let dom = try browser.dumpDOM(url)
        Self.checkCharts(dom, installs: installs)
        #expect(dom.contains("<form method=\"get\" action=\"/dashboard\""))
        let requested = try browser.pageRequests(site: "http://127.0.0.1")
        #expect(requested.contains(url), "the log holds the page's own request: \(requested)")
        #expect(requested.allSatisfy { $0.hasPrefix(server.base + "/") }, "\(requested)")

        let desktop = try browser.screenshot(url, width: 1280, height: 800, name: "dashboard-1280x800.png")
        #expect(try Chromium.pngSize(desktop) == (1280, 800))
        let phone = try browser.screenshot(url, width: 390, height: 844, name: "dashboard-390x844.png")
        #expect(try Chromium.pngSize(phone) == (390, 844))
        // The page filtered by the install date: the basis switch.
        let install = try browser.dumpDOM(url + "?date_basis=install&app_id=1254734734")
        #expect(install.contains("by install date"))
        #expect(install.contains("Install date (UTC)"))
        // By install date, the cohort view: a row per install date, its windows as they arrive.
        #expect(install.contains("id=\"cohorts\"") && install.contains("d3-7 postbacks (rate)"))
        #expect(!dom.contains("id=\"cohorts\""), "by day received: no cohort view")
    }

    @Test(
        "with costs: the report API carries spend, CPI and ROAS as the command prints them, and the dashboard's spend panel draws them",
        arguments: TestEngine.available
    )
    func spendPanel(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        let spend = try directory.write(
            "spend-\(engine).csv",
            """
            date,ad_network_id,spend,currency
            2026-11-17,fzbddbi26k.skadnetwork,400,USD
            2026-11-18,fzbddbi26k.skadnetwork,350.5,USD
            2026-11-18,3rpoyewmr9.skadnetwork,300,EUR
            2026-11-19,vdsbuozq6b.skadnetwork,120,USD

            """
        )
        let rates = try directory.write(
            "rates-\(engine).csv",
            "date,base,quote,rate\n2026-11-16,EUR,USD,1.1\n2026-11-16,USD,JPY,150\n"
        )
        for arguments in [["costs", "add", spend], ["rates", "add", rates]] {
            let run = try await Postbackd.run(arguments + ["--db", store.argument])
            #expect(run.status == 0, "\(arguments): \(run.standardError)")
        }
        let server = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        for (query, arguments) in [
            ("by=date,ad_network_id", ["--by", "date,ad_network_id"]),
            (
                "by=ad_network_id&currency=USD&from=2026-11-17",
                ["--by", "ad_network_id", "--currency", "USD", "--from", "2026-11-17"]
            ),
        ] {
            let cli = try await Postbackd.run(["report", "--db", store.argument, "--format", "json"] + arguments)
            #expect(cli.status == 0, "\(arguments): \(cli.standardError)")
            let answer = try await client.send(.GET, server.base + "/api/v1/report?" + query)
            #expect(answer.status == 200, "\(query): \(answer.body)")
            #expect(answer.body == cli.standardOutput, "\(query)")
        }
        // In USD from 2026-11-17: fzbddbi26k's spend is 750.5, its ROAS its revenue over that.
        let answer = try await client.send(
            .GET,
            server.base + "/api/v1/report?by=ad_network_id&currency=USD&from=2026-11-17"
        )
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]])
        let network = try #require(rows.first { $0["ad_network_id"] as? String == "fzbddbi26k.skadnetwork" })
        #expect((network["spend"] as? [String: Double])?["USD"] == 750.5)
        let revenue = try #require(((network["revenue"] as? [String: Any])?["USD"] as? [String: Double])?["estimate"])
        let roas = try #require(((network["roas"] as? [String: Any])?["USD"] as? [String: Double])?["estimate"])
        #expect(abs(roas - revenue / 750.5) < 1e-5)
        let refused = try await client.send(.GET, server.base + "/api/v1/report?currency=dollars")
        #expect(refused.status == 400 && refused.body.contains("\"currency\""))

        // The spend panel in a browser: once, and only where one is installed (`browserCasesRun`).
        guard engine == .sqlite, Chromium.installed != nil else { return }
        let browser = try Chromium(directory: directory)
        let url = server.base + "/dashboard?from=2026-11-16&to=2026-11-21&currency=USD"
        let dom = try browser.dumpDOM(url)
        #expect(dom.contains("<figure id=\"spend-0\""), "the spend panel")
        #expect(dom.contains("Return on ad spend per day (USD)"))
        #expect(dom.contains("By ad network (USD)"))
        #expect(dom.contains("<th scope=\"row\">fzbddbi26k.skadnetwork</th><td>750.50</td>"))
        #expect(dom.contains("fill-opacity=\"0.18\""), "the minimum-to-maximum band")
        let shot = try browser.screenshot(url, width: 1280, height: 2400, name: "dashboard-spend-1280.png")
        #expect(try Chromium.pngSize(shot) == (1280, 2400))
        // A day without a rate (2026-11-15): the networks with revenue to convert that day have
        // no converted spend, and the page says which day and pair.
        let early = try browser.dumpDOM(server.base + "/dashboard?from=2026-11-15&to=2026-11-21&currency=USD")
        #expect(early.contains("– (no rate)"))
        #expect(early.contains("exchange rate on 2026-11-15"))
        // Without costs in the period: no panel.
        let before = try browser.dumpDOM(server.base + "/dashboard?from=2026-11-14&to=2026-11-16")
        #expect(!before.contains("spend-0"))
    }

    @Test("report --format html: the same page as one file that a browser draws without a server")
    func htmlFile() async throws {
        let store = try await sampleStore(.sqlite)
        let file = directory.path + "/dashboard.html"
        let run = try await Postbackd.run(["report", "--db", store.argument, "--format", "html", "--output", file])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
        let html = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!html.contains("<script"))
        #expect(!html.contains("<form"))
        #expect(!html.contains("src="))
        let totals = try await Postbackd.run(
            ["report", "--db", store.argument, "--format", "json", "--by", ""] + Self.period(html)
        )
        let row = try #require(
            (try JSONSerialization.jsonObject(with: Data(totals.standardOutput.utf8)) as? [[String: Any]])?.first
        )
        let installs = try #require(row["installs"] as? Int)
        // A file page has no site to tell its requests by: it names no URL but the SVG
        // namespace, so it cannot ask for any.
        let urls = html.components(separatedBy: "://").count - 1
        #expect(urls == html.components(separatedBy: "xmlns=\"http://www.w3.org/2000/svg\"").count - 1)

        let refused = try await Postbackd.run(["report", "--db", store.argument, "--format", "html", "--by", "date"])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("--format html"))

        // The page in a browser, where one is installed (`browserCasesRun`).
        guard Chromium.installed != nil else { return }
        let browser = try Chromium(directory: directory)
        let dom = try browser.dumpDOM("file://" + file)
        Self.checkCharts(dom, installs: installs)
        let shot = try browser.screenshot("file://" + file, width: 1280, height: 800, name: "report-html-1280x800.png")
        #expect(try Chromium.pngSize(shot) == (1280, 800))
    }

    /// `--from A --to B` from the page's period line.
    private static func period(_ html: String) -> [String] {
        guard let range = html.range(of: #"\d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}"#, options: .regularExpression) else {
            return []
        }
        let parts = html[range].components(separatedBy: " to ")
        return ["--from", parts[0], "--to", parts[1]]
    }

    /// The DOM as the browser built it: each chart a figure with an SVG image that has a title
    /// and description, a legend where it has series, a table; the installs in the headline
    /// and in the installs table's total.
    private static func checkCharts(_ dom: String, installs: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        for id in ["installs", "redownloads", "revenue-0", "fine-values", "null-rate", "tiers", "intake"] {
            #expect(
                dom.contains("<figure id=\"\(id)\" class=\"chart\">"),
                "figure \(id)",
                sourceLocation: sourceLocation
            )
            #expect(dom.contains("aria-labelledby=\"\(id)-t \(id)-d\""), "svg \(id)", sourceLocation: sourceLocation)
        }
        #expect(dom.components(separatedBy: "role=\"img\"").count - 1 >= 7, sourceLocation: sourceLocation)
        #expect(dom.components(separatedBy: "<table>").count - 1 >= 7, sourceLocation: sourceLocation)
        #expect(dom.contains("<path fill=\"#0072B2\""), "bars drawn", sourceLocation: sourceLocation)
        #expect(dom.contains("<polyline"), "lines drawn", sourceLocation: sourceLocation)
        #expect(dom.contains("class=\"legend\""), sourceLocation: sourceLocation)
        let formatted = installs.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
        #expect(
            dom.contains("<span class=\"label\">Installs</span><span class=\"value\">\(formatted)</span>"),
            "headline installs \(formatted)",
            sourceLocation: sourceLocation
        )
        #expect(dom.contains("\(formatted) installs over"), sourceLocation: sourceLocation)
        #expect(!dom.contains("<script"), sourceLocation: sourceLocation)
    }
}

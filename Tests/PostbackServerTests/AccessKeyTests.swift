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

/// Keys scoped to apps (`postbackd keys`), the limit on wrong keys, and what `serve` stores of
/// client addresses: the built binary on a loopback port, a real HTTP client, both engines.
@Suite(
    "postbackd serve: keys scoped to apps, the sign-in limit, client addresses",
    .serialized,
    .timeLimit(.minutes(20))
)
struct AccessKeyTests {
    let directory: TemporaryDirectory
    /// The sample's apps: a game and a marketplace, each with postbacks and a model.
    static let game: Int64 = 1_254_734_734
    static let marketplace: Int64 = 421_214_301

    init() throws {
        directory = try TemporaryDirectory("access-keys")
    }

    /// `postbackd keys add NAME arguments…`: the secret it printed.
    func addKey(_ store: TestStore, _ name: String, _ arguments: [String]) async throws -> String {
        let run = try await Postbackd.run(["keys", "add", "--db", store.argument, name] + arguments)
        #expect(run.status == 0, "\(run.standardError)")
        let secret = run.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("pbk_") && secret.count == 68, "\(secret)")
        #expect(!run.standardError.contains(secret), "the secret is printed once, on standard output")
        return secret
    }

    static func bearer(_ secret: String) -> [(String, String)] { [("Authorization", "Bearer " + secret)] }

    /// A client that does not follow redirects (the login answers 303).
    static func client() -> HTTPClient {
        var configuration = HTTPClient.testConfiguration()
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The app ids of a report's JSON rows.
    static func apps(_ body: String) throws -> Set<Int> {
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]])
        return Set(rows.compactMap { $0["app_id"] as? Int })
    }

    /// The dashboard page without its "Generated …" time.
    static func timeless(_ page: String) -> String {
        page.replacing(/Generated [0-9T:.\-Z]+/, with: "Generated")
    }

    @Test(
        "two keys with different apps each see exactly their apps on every route; another app is 403; the options' keys open every app",
        arguments: TestEngine.available
    )
    func scopedKeys(_ engine: TestEngine) async throws {
        let store = try await TestStore.sample(engine, in: directory)
        let game = try await addKey(store, "game-studio", ["--apps", String(Self.game)])
        let market = try await addKey(
            store,
            "market.co",
            ["--apps", String(Self.marketplace), "--scope", "report,dashboard,conversion-value,apple-ads"]
        )
        let operations = try await addKey(store, "operations", ["--all-apps"])
        let token = "dashboard-token-\(UInt64.random(in: 1...UInt64.max))"
        let server = try await ServerProcess.start(
            ["--db", store.argument, "--dashboard-token", token, "--access-log"],
            directory: directory.path
        )
        defer { server.stop() }
        let client = Self.client()
        defer { Task { try? await client.shutdown() } }

        // The report API: without a filter, exactly what `report --app-id` of the key's apps prints.
        for (secret, app) in [(game, Self.game), (market, Self.marketplace)] {
            for (query, arguments) in [
                ("", [String]()), ("by=app_id,ad_network_id", ["--by", "app_id,ad_network_id"]),
                ("by=date,app_id&events=true", ["--by", "date,app_id", "--events"]),
            ] {
                let answer = try await client.send(
                    .GET,
                    server.base + "/api/v1/report?" + query,
                    headers: Self.bearer(secret)
                )
                #expect(answer.status == 200, "\(query): \(answer.body)")
                let cli = try await Postbackd.run(
                    ["report", "--db", store.argument, "--format", "json", "--app-id", String(app)] + arguments
                )
                #expect(answer.body == cli.standardOutput, "\(app) \(query)")
            }
            let byApp = try await client.send(
                .GET,
                server.base + "/api/v1/report?by=app_id",
                headers: Self.bearer(secret)
            )
            #expect(try Self.apps(byApp.body) == [Int(app)])
            // Blank filters filter nothing: still the key's apps, never every app.
            for blank in ["app_id=,", "app_id=%20,%20", "app_id=,&app_id=,"] {
                let answer = try await client.send(
                    .GET,
                    server.base + "/api/v1/report?by=app_id&" + blank,
                    headers: Self.bearer(secret)
                )
                #expect(answer.body == byApp.body, "\(blank): \(answer.status) \(answer.body)")
            }
            // Its own app by filter: the same; another's: 403, naming it.
            let own = try await client.send(
                .GET,
                server.base + "/api/v1/report?by=app_id&app_id=\(app)",
                headers: Self.bearer(secret)
            )
            #expect(own.body == byApp.body)
            let other = app == Self.game ? Self.marketplace : Self.game
            for path in ["/api/v1/report?app_id=\(other)", "/api/v1/summary?app_id=\(app),\(other)"] {
                let refused = try await client.send(.GET, server.base + path, headers: Self.bearer(secret))
                #expect(refused.status == 403, "\(path)")
                #expect(refused.json["field"] as? String == "app_id")
                #expect((refused.json["reason"] as? String ?? "").contains("does not open app \(other)"))
            }
            // The summary: what a key of every app reads with the app's filter.
            let summary = try await client.send(.GET, server.base + "/api/v1/summary", headers: Self.bearer(secret))
            let filtered = try await client.send(
                .GET,
                server.base + "/api/v1/summary?app_id=\(app)",
                headers: Self.bearer(operations)
            )
            #expect(summary.status == 200 && summary.body == filtered.body, "\(summary.body)")
        }
        // Every app for the key of every app and for --dashboard-token: the unfiltered report.
        let everything = try await Postbackd.run([
            "report", "--db", store.argument, "--format", "json", "--by", "app_id",
        ])
        #expect(try Self.apps(everything.standardOutput).count >= 3)
        for secret in [operations, token] {
            let all = try await client.send(
                .GET,
                server.base + "/api/v1/report?by=app_id",
                headers: Self.bearer(secret)
            )
            #expect(all.body == everything.standardOutput)
        }
        let allSummary = try await client.send(.GET, server.base + "/api/v1/summary", headers: Self.bearer(operations))
        let gameSummary = try await client.send(.GET, server.base + "/api/v1/summary", headers: Self.bearer(game))
        #expect(allSummary.body != gameSummary.body, "the totals are the key's apps' alone")
        // Apple Ads side by side is not per app.
        let appleAds = try await client.send(
            .GET,
            server.base + "/api/v1/report?with_apple_ads=1",
            headers: Self.bearer(game)
        )
        #expect(appleAds.status == 403)

        // No key, an unknown key: 401; the page sends to the login.
        #expect(try await client.send(.GET, server.base + "/api/v1/report").status == 401)
        #expect(
            try await client.send(
                .GET,
                server.base + "/api/v1/report",
                headers: Self.bearer("pbk_" + String(repeating: "0", count: 64))
            )
            .status == 401
        )
        #expect(try await client.send(.GET, server.base + "/dashboard").status == 303)

        // The dashboard: signed in with a key, the page of its apps, totals included.
        func signIn(_ secret: String) async throws -> String {
            let answer = try await client.send(
                .POST,
                server.base + "/login",
                body: Array("token=\(secret)".utf8),
                headers: [("Content-Type", "application/x-www-form-urlencoded")]
            )
            #expect(answer.status == 303, "\(answer.body)")
            let cookie = try #require(answer.header("Set-Cookie"))
            #expect(!cookie.contains(secret))
            return String(cookie.prefix { $0 != ";" })
        }
        let gameSession = try await signIn(game)
        let operationsSession = try await signIn(operations)
        let gamePage = try await client.send(.GET, server.base + "/dashboard", headers: [("Cookie", gameSession)])
        #expect(gamePage.status == 200 && gamePage.body.contains("<figure"))
        let filteredPage = try await client.send(
            .GET,
            server.base + "/dashboard?app_id=\(Self.game)",
            headers: [("Cookie", operationsSession)]
        )
        #expect(Self.timeless(gamePage.body) == Self.timeless(filteredPage.body))
        let allPage = try await client.send(.GET, server.base + "/dashboard", headers: [("Cookie", operationsSession)])
        #expect(Self.timeless(allPage.body) != Self.timeless(gamePage.body))
        let otherPage = try await client.send(
            .GET,
            server.base + "/dashboard?app_id=\(Self.marketplace)",
            headers: [("Cookie", gameSession)]
        )
        #expect(otherPage.status == 403)

        // The routes apps call: closed once a key opens them (market.co's), then only to the
        // keys that open them, for their apps.
        let post = server.base + "/v1/conversion-value"
        func state(_ app: Int64) -> [UInt8] { Array(#"{"app_id": \#(app), "elapsed_hours": 1}"#.utf8) }
        #expect(try await client.send(.POST, post, body: state(Self.marketplace)).status == 401)
        let marketValue = try await client.send(
            .POST,
            post,
            body: state(Self.marketplace),
            headers: Self.bearer(market)
        )
        #expect(marketValue.status == 200, "\(marketValue.body)")
        let gameValue = try await client.send(.POST, post, body: state(Self.game), headers: Self.bearer(market))
        #expect(gameValue.status == 403 && gameValue.json["field"] as? String == "app_id", "\(gameValue.body)")
        let unscoped = try await client.send(.POST, post, body: state(Self.game), headers: Self.bearer(game))
        #expect(unscoped.status == 403, "game-studio's key does not open conversion-value: \(unscoped.body)")
        let snippet = server.base + "/api/v2/conversion_value?n=__SESSION__&idfv=D3V1CE&a=\(market)&i="
        #expect(try await client.send(.GET, snippet + String(Self.marketplace)).status == 200)
        let otherSnippet = try await client.send(.GET, snippet + String(Self.game))
        #expect(otherSnippet.status == 403 && otherSnippet.jsonStatus == "error", "\(otherSnippet.body)")
        let tokens = server.base + "/v1/apple-ads/token"
        let ownToken = try await client.send(
            .POST,
            tokens,
            body: Array(#"{"app_id": \#(Self.marketplace), "token": "market-token"}"#.utf8),
            headers: Self.bearer(market)
        )
        #expect(ownToken.status == 202, "\(ownToken.body)")
        let otherToken = try await client.send(
            .POST,
            tokens,
            body: Array(#"{"app_id": \#(Self.game), "token": "game-token"}"#.utf8),
            headers: Self.bearer(market)
        )
        #expect(otherToken.status == 403)
        #expect(try await store.count("apple_ads_tokens") == 1, "the refused token was not stored")

        // Devices carry no key: the postback routes stay open.
        let postback = try await Postbackd.generated(count: 1, seed: 38, duplicates: 0, invalid: 0)
        let received = try await client.send(
            .POST,
            server.base + "/.well-known/skadnetwork/report-attribution/",
            body: Array(postback.split(separator: "\n")[0].utf8)
        )
        #expect(received.status == 200)

        // The last use is recorded within the reload interval; no secret is shown or logged.
        var listed = ""
        for _ in 0..<40 {
            listed = try await Postbackd.run(["keys", "list", "--db", store.argument, "--format", "json"])
                .standardOutput
            if listed.components(separatedBy: "\"last_used_at\":\"").count == 4 { break }
            usleep(250_000)
        }
        #expect(listed.components(separatedBy: "\"last_used_at\":\"").count == 4, "\(listed)")
        #expect(server.stop() == 0)
        let table = try await Postbackd.run(["keys", "list", "--db", store.argument]).standardOutput
        for secret in [game, market, operations, token] {
            #expect(!server.standardOutput.contains(secret) && !server.standardError.contains(secret))
            #expect(!listed.contains(secret) && !table.contains(secret))
            #expect(!listed.contains(AccessKeySecret.sha256(secret)), "not even its hash")
        }
    }

    @Test(
        "a key added or revoked is taken within 10 s by a second serve sharing the store",
        arguments: TestEngine.available
    )
    func revocation(_ engine: TestEngine) async throws {
        let store = try await TestStore.sample(engine, in: directory)
        let first = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { first.stop() }
        let second = try await ServerProcess.start(["--db", store.argument], directory: directory.path)
        defer { second.stop() }
        let client = Self.client()
        defer { Task { try? await client.shutdown() } }
        // No key yet: the report is open, as before keys.
        #expect(try await client.send(.GET, second.base + "/api/v1/report").status == 200)

        func secondsUntil(_ status: Int, _ server: ServerProcess, _ secret: String?) async throws -> Double? {
            try await Self.secondsUntil(status, server, secret, client: client)
        }
        let secret = try await addKey(store, "partner", ["--apps", String(Self.game)])
        // Added through the store: both servers close the route and take the key.
        for server in [first, second] {
            let closed = try await secondsUntil(401, server, nil)
            #expect(closed.map { $0 <= 10 } == true, "closed after \(String(describing: closed)) s")
            #expect(
                try await client.send(.GET, server.base + "/api/v1/summary", headers: Self.bearer(secret)).status == 200
            )
        }
        let revoke = try await Postbackd.run(["keys", "revoke", "--db", store.argument, "partner"])
        #expect(revoke.status == 0 && revoke.standardOutput == "revoked partner\n")
        let refused = try await secondsUntil(401, second, secret)
        #expect(refused.map { $0 <= 10 } == true, "refused after \(String(describing: refused)) s")
        #expect(try await secondsUntil(401, first, secret).map { $0 <= 10 } == true)
        // The route stays closed with no key left: revoking the last key opens nothing.
        #expect(try await client.send(.GET, first.base + "/api/v1/summary").status == 401)
        // A revoked key's name stays taken; the list shows when it was revoked.
        #expect(try await Postbackd.run(["keys", "add", "--db", store.argument, "partner", "--all-apps"]).status == 2)
        let listed = try await Postbackd.run(["keys", "list", "--db", store.argument]).standardOutput
        #expect(listed.contains("partner") && !listed.contains("revoked  \n"), "\(listed)")
    }

    @Test(
        "the pull API read in small pages while serve stores postbacks returns every stored postback of the key's apps exactly once, as export writes it",
        arguments: TestEngine.available
    )
    func pullAPI(_ engine: TestEngine) async throws {
        let store = try await TestStore.sample(engine, in: directory)
        let game = try await addKey(store, "game-studio", ["--apps", String(Self.game)])
        let market = try await addKey(store, "market.co", ["--apps", String(Self.marketplace)])
        let everything = try await addKey(store, "warehouse", ["--all-apps", "--scope", "export"])
        let reports = try await addKey(store, "reports", ["--all-apps", "--scope", "report"])
        let server = try await ServerProcess.start(
            ["--db", store.argument] + ServeTests.keyArguments,
            directory: directory.path
        )
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        let url = server.base + "/api/v1/postbacks"

        /// Pages of `limit` from no cursor, in order. Once the posting is done, a short page means
        /// nothing more is final now (on PostgreSQL another transaction running holds the bound
        /// back), so it goes on from the cursor until it holds `expected` lines, for at most 60 s.
        @Sendable func pull(
            _ secret: String,
            limit: Int,
            until done: @Sendable () -> Bool,
            expected: @Sendable () async throws -> Int
        ) async throws -> [String] {
            var lines: [String] = []
            var cursor = ""
            var deadline: Date?
            while true {
                let finished = done()
                let page = try await client.send(
                    .GET,
                    url + "?limit=\(limit)&after=\(cursor)",
                    headers: Self.bearer(secret)
                )
                #expect(page.status == 200, "\(page.body)")
                #expect(page.header("Content-Type") == "application/x-ndjson")
                let rows = page.body.split(separator: "\n").map(String.init)
                #expect(page.header("X-Postbackd-Rows") == String(rows.count))
                lines += rows
                cursor = try #require(page.header("X-Postbackd-Cursor"))
                if finished && rows.count < limit {
                    let end = deadline ?? Date().addingTimeInterval(60)
                    deadline = end
                    if try await lines.count >= expected() { return lines }
                    if Date() > end {
                        // What held the bound back, for the failure below to be explained: the
                        // cluster's transactions that hold an id, and the snapshot.
                        if store.engine == .postgres {
                            let running = try await store.rows(
                                """
                                SELECT datname::text, backend_xid::text, state, xact_start::text, left(query, 100)
                                FROM pg_stat_activity WHERE backend_xid IS NOT NULL
                                """
                            )
                            let snapshot = try await store.rows("SELECT pg_current_snapshot()::text")
                            print("pull: short of the stored lines after 60 s at \(cursor): \(snapshot), \(running)")
                        }
                        return lines
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
        }

        // Postbacks of several apps posted by 4 clients while two readers page through.
        let postbacks = try await Postbackd.generated(count: 400, seed: 3_838, duplicates: 0.05, invalid: 0.02)
            .split(separator: "\n").map { Array($0.utf8) }
        let posted = Flag()
        let gameTask = Task {
            try await pull(
                game,
                limit: 7,
                until: { posted.value.load(ordering: .relaxed) },
                expected: { try await store.count("postbacks", where: "app_id = \(Self.game)") }
            )
        }
        let allTask = Task {
            try await pull(
                everything,
                limit: 13,
                until: { posted.value.load(ordering: .relaxed) },
                expected: { try await store.count("postbacks") }
            )
        }
        let marketTask = Task {
            try await pull(
                market,
                limit: 11,
                until: { posted.value.load(ordering: .relaxed) },
                expected: { try await store.count("postbacks", where: "app_id = \(Self.marketplace)") }
            )
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for part in 0..<4 {
                group.addTask {
                    for (index, body) in postbacks.enumerated() where index % 4 == part {
                        _ = try await client.send(
                            .POST,
                            server.base + "/.well-known/skadnetwork/report-attribution/",
                            body: body
                        )
                    }
                }
            }
            try await group.waitForAll()
        }
        posted.value.store(true, ordering: .relaxed)
        let gamePulled = try await gameTask.value
        let allPulled = try await allTask.value
        let marketPulled = try await marketTask.value

        // Exactly what export writes, in its order: the key's apps' lines, each once.
        let export = try await Postbackd.run(["export", "--db", store.argument, "--format", "jsonl"])
        #expect(export.status == 0, "\(export.standardError)")
        let exported = export.standardOutput.split(separator: "\n").map(String.init)
        #expect(exported.count > postbacks.count / 2)
        #expect(allPulled == exported, "\(allPulled.count) pulled, \(exported.count) stored")
        let gameExported = exported.filter { $0.contains("\"app_id\":\(Self.game),") }
        #expect(!gameExported.isEmpty && gameExported.count < exported.count)
        #expect(gamePulled == gameExported, "\(gamePulled.count) pulled, \(gameExported.count) of the game stored")
        #expect(Set(gamePulled).count == gamePulled.count, "nothing twice")
        let marketExported = exported.filter { $0.contains("\"app_id\":\(Self.marketplace),") }
        #expect(!marketExported.isEmpty && marketPulled == marketExported, "the other key: its app's alone")

        // From the last cursor: nothing new; the key's scope and the cursor's form are checked.
        #expect(try await client.send(.GET, url, headers: Self.bearer(reports)).status == 403)
        #expect(try await client.send(.GET, url).status == 401)
        for query in [
            "after=mysql:1", "after=sqlite:1;DROP", "after=sqlite:99999999999999999999",
            "after=postgres:99999999999999999999999", "after=postgres:1:", "limit=0", "limit=10001", "since=1",
            "limit=1&limit=2",
        ] {
            let refused = try await client.send(.GET, url + "?" + query, headers: Self.bearer(game))
            #expect(refused.status == 400, "\(query): \(refused.body)")
        }
    }
}

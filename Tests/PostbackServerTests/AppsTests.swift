import AsyncHTTPClient
import Foundation
import NIOCore
import PostbackKit
import PostbackTestSupport
import Testing

/// The app registry: under `apps policy registered`, postbacks of unregistered apps are stored
/// but counted nowhere until their app is registered. The built binary, `serve` on a loopback
/// port, a real HTTP client, both engines.
@Suite(
    "postbackd apps: unregistered traffic out of every total, claimed by registration",
    .serialized,
    .timeLimit(.minutes(20))
)
struct AppsTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("apps")
    }

    private static func appIDs(_ json: String) throws -> [Int64: Int] {
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        var counts: [Int64: Int] = [:]
        for row in rows {
            if let app = row["app_id"] as? Int64 { counts[app, default: 0] += row["postbacks"] as? Int ?? 0 }
        }
        return counts
    }

    @Test(
        "under policy registered, postbacks received over HTTP for unregistered apps are stored but out of reports, summary, dashboard, export and the pull API; registering an app claims them",
        arguments: TestEngine.available
    )
    func unclaimed(_ engine: TestEngine) async throws {
        let game = AccessKeyTests.game
        let market = AccessKeyTests.marketplace
        let store = try await TestStore.sample(engine, in: directory)
        func cli(_ arguments: [String]) async throws -> String {
            let run = try await Postbackd.run(arguments + ["--db", store.argument])
            #expect(run.status == 0, "\(arguments): \(run.standardError)")
            return run.standardOutput
        }
        func report() async throws -> [Int64: Int] {
            try Self.appIDs(
                try await Postbackd.run(["report", "--db", store.argument, "--by", "app_id", "--format", "json"])
                    .standardOutput
            )
        }
        let before = try await report()
        #expect(before.count >= 3 && before[game] != nil && before[market] != nil)
        #expect(try await cli(["apps", "policy"]) == "all\n", "the default counts every app")
        #expect(
            try await cli(["apps", "add", String(game), "--name", "Example \u{1B}[2JGame"]).hasPrefix(
                "app \(game) added"
            )
        )
        #expect(try await cli(["apps", "policy", "registered"]).hasPrefix("policy registered"))
        let warehouse = try await cli(["keys", "add", "warehouse", "--all-apps", "--scope", "export"])
            .trimmingCharacters(in: .whitespacesAndNewlines)

        // More traffic over HTTP, for every app: stored, answered as usual.
        let server = try await ServerProcess.start(
            ["--db", store.argument] + ServeTests.keyArguments,
            directory: directory.path
        )
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        let postbacks = try await Postbackd.generated(count: 60, seed: 3_839, duplicates: 0, invalid: 0).split(
            separator: "\n"
        )
        for body in postbacks {
            let answer = try await client.send(
                .POST,
                server.base + "/.well-known/skadnetwork/report-attribution/",
                body: Array(body.utf8)
            )
            #expect(answer.jsonStatus == "stored", "\(answer.body)")
        }
        _ = try await cli(["aggregate"])

        // Only the registered app counts, everywhere; its numbers are all of it.
        let stored = try await store.strings("SELECT app_id || ' ' || COUNT(*) FROM postbacks GROUP BY app_id")
            .compactMap { $0 }.reduce(into: [Int64: Int]()) { counts, text in
                let parts = text.split(separator: " ")
                counts[Int64(parts[0]) ?? 0] = Int(parts[1])
            }
        #expect(
            stored.count >= 3 && stored.values.reduce(0, +) == before.values.reduce(0, +) + postbacks.count,
            "stored as usual"
        )
        #expect(try await report() == [game: stored[game, default: 0]])
        let summary = try await client.send(.GET, server.base + "/api/v1/summary")
        let gameSummary = try await client.send(.GET, server.base + "/api/v1/summary?app_id=\(game)")
        #expect(summary.status == 200 && summary.json["postbacks"] as? Int == stored[game])
        #expect(gameSummary.json["postbacks"] as? Int == stored[game])
        let page = try await client.send(.GET, server.base + "/dashboard")
        let gamePage = try await client.send(.GET, server.base + "/dashboard?app_id=\(game)")
        #expect(page.status == 200)
        // The totals of the unfiltered page are the game's: the same headline numbers.
        #expect(
            Self.headline(page.body) == Self.headline(gamePage.body) && !Self.headline(page.body).isEmpty,
            "\(Self.headline(page.body)) \(Self.headline(gamePage.body))"
        )
        let export = try await cli(["export", "--format", "jsonl"]).split(separator: "\n")
        #expect(export.count == stored[game] && export.allSatisfy { $0.contains("\"app_id\":\(game),") })
        var pulled: [Substring] = []
        var cursor = ""
        while true {
            let page = try await client.send(
                .GET,
                server.base + "/api/v1/postbacks?limit=200&after=" + cursor,
                headers: [("Authorization", "Bearer " + warehouse)]
            )
            pulled += page.body.split(separator: "\n")
            cursor = try #require(page.header("X-Postbackd-Cursor"))
            if page.header("X-Postbackd-Rows") != "200" { break }
        }
        #expect(pulled == export)
        let check = try await Postbackd.run(["check", "--db", store.argument, "--quick"])
        #expect(check.status == 0, "\(check.standardOutput) \(check.standardError)")

        // The others are listed, with their counts; the name is shown escaped.
        let unclaimed = try await cli(["apps", "unclaimed", "--format", "json"]).split(separator: "\n")
        #expect(unclaimed.count == stored.count - 1)
        #expect(unclaimed.contains { $0.contains("\"app_id\":\(market),\"postbacks\":\(stored[market, default: 0]),") })
        #expect(try await cli(["apps", "list"]).contains("Example \\x1b[2JGame"))

        // Registering claims them: the next aggregate counts them, export (from the start) too.
        #expect(try await cli(["apps", "add", String(market)]).hasPrefix("app \(market) added"))
        _ = try await cli(["aggregate"])
        #expect(try await report() == [game: stored[game, default: 0], market: stored[market, default: 0]])
        let claimed = try await client.send(.GET, server.base + "/api/v1/summary")
        #expect(claimed.json["postbacks"] as? Int == stored[game, default: 0] + stored[market, default: 0])
        #expect(
            try await cli(["export", "--format", "jsonl"]).split(separator: "\n").count == claimed.json["postbacks"]
                as? Int
        )
        // Removed, they are out again; policy all counts everything as before.
        #expect(try await cli(["apps", "remove", String(market)]) == "app \(market) removed\n")
        #expect(try await Postbackd.run(["apps", "remove", "--db", store.argument, String(market)]).status == 2)
        #expect(try await cli(["apps", "policy", "all"]).hasPrefix("policy all"))
        _ = try await cli(["aggregate"])
        #expect(try await report() == stored)

        // models add --bundle-id registers its app.
        let model = try directory.write(
            "model.json",
            FixtureModels.app111.replacingOccurrences(of: #""appId": "111""#, with: #""appId": "777""#)
        )
        _ = try await cli(["models", "add", "--bundle-id", "com.example.seven", model])
        await #expect(
            try cli(["apps", "list", "--format", "json"]).contains(
                #"{"app_id":777,"name":null,"bundle_id":"com.example.seven""#
            )
        )
    }

    /// The dashboard's headline numbers (its summary tiles), in order.
    private static func headline(_ page: String) -> [String] {
        page.matches(of: /<span class="value">([^<]*)</).map { String($0.output.1) }
    }
}

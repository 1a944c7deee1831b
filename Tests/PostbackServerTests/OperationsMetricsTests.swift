import AsyncHTTPClient
import Foundation
import PostbackKit
import PostbackServer
import PostbackTestSupport
import Testing

/// The metrics the shipped alert rules and dashboard read (ops/prometheus, ops/grafana): per-app
/// series labelled by the registered apps, kept across a restart from the store; and every
/// metric the rules and the dashboard name is one `serve` exposes. The built binary, `serve` on
/// a loopback port, a real HTTP client.
@Suite("serve's metrics for the alert rules and the dashboard", .serialized, .timeLimit(.minutes(20)))
struct OperationsMetricsTests {
    let directory: TemporaryDirectory
    static let skan = "/.well-known/skadnetwork/report-attribution/"
    /// The app of ``SamplePostback``.
    static let app: Int64 = 525_463_029

    init() throws {
        directory = try TemporaryDirectory("operations-metrics")
    }

    private static func signed(_ transactionID: String) throws -> [UInt8] {
        Array(try SamplePostback.signedJSON(.v4_0, transactionID: transactionID).utf8)
    }

    /// The value of the sample `name{labels}` in Prometheus text, if present.
    private static func value(_ metrics: String, _ sample: String) -> Double? {
        for line in metrics.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    /// Scrapes `/metrics` until `ready` holds or 10 s pass.
    private static func scrape(
        _ client: HTTPClient,
        _ server: ServerProcess,
        until ready: (String) -> Bool
    ) async throws -> String {
        let deadline = Date().addingTimeInterval(10)
        var metrics = ""
        repeat {
            metrics = try await client.send(.GET, server.base + "/metrics").body
            if ready(metrics) { break }
            try await Task.sleep(for: .milliseconds(100))
        } while Date() < deadline
        return metrics
    }

    @Test(
        "postbacks stored per registered app and kind (others as `other`; duplicates and forgeries not counted), the newest postback's time per app from the store after a restart, Apple Ads tokens pending",
        arguments: TestEngine.available
    )
    func perApp(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let added = try await Postbackd.run(["apps", "add", String(Self.app), "--db", store.argument])
        #expect(added.status == 0, "\(added.standardError)")
        let client = try HTTPClient.forTests()
        let before = Date().timeIntervalSince1970.rounded(.down)
        var server = try await ServerProcess.start(
            ["--db", store.argument] + ServeTests.keyArguments,
            directory: directory.path
        )
        let first = try Self.signed("22222222-0000-4000-8000-000000000001")
        for body in [first, try Self.signed("22222222-0000-4000-8000-000000000002"), first] {
            #expect(try await client.send(.POST, server.base + Self.skan, body: body).status == 200)
        }
        // A forgery naming the app: quarantined, and no sign of life for it.
        var forged = try #require(try JSONSerialization.jsonObject(with: Data(first)) as? [String: Any])
        forged["transaction-id"] = "22222222-0000-4000-8000-000000000003"
        let refused = try await client.send(
            .POST,
            server.base + Self.skan,
            body: Array(try JSONSerialization.data(withJSONObject: forged))
        )
        #expect(refused.status == 200 && refused.jsonStatus == "quarantined", "\(refused.body)")
        // A postback of an app no one registered: `other`.
        var unregistered = SamplePostback.make(.v4_0, transactionID: "22222222-0000-4000-8000-000000000004")
        unregistered.appID = 42
        let other = Array(try TestKeys.signer.signed(unregistered).jsonText().utf8)
        #expect(try await client.send(.POST, server.base + Self.skan, body: other).status == 200)
        // A development postback (Apple's AdAttributionKit example, as `doctor --endpoint`
        // posts it): stored, and no sign of life for any app.
        let aak = try Repository.bytes(Repository.path("SamplePostbacks/apple/apple-aak-dev1-reengagement.json"))
        let development = try await client.send(.POST, server.base + Self.skan, body: aak)
        #expect(development.status == 200 && development.jsonStatus == "stored", "\(development.body)")
        let after = Date().timeIntervalSince1970.rounded(.up)

        let newest = "postbackd_app_newest_postback_timestamp_seconds{app=\"\(Self.app)\"}"
        var metrics = try await client.send(.GET, server.base + "/metrics").body
        #expect(
            Self.value(metrics, "postbackd_app_postbacks_total{app=\"\(Self.app)\",kind=\"skan\"}") == 2,
            "\(metrics)"
        )
        #expect(Self.value(metrics, "postbackd_app_postbacks_total{app=\"other\",kind=\"skan\"}") == 1, "\(metrics)")
        #expect(!metrics.contains("kind=\"aak\""), "a development postback counts for no app: \(metrics)")
        let stored = try #require(Self.value(metrics, newest), "\(metrics)")
        #expect((before...after).contains(stored))
        #expect(Self.value(metrics, "postbackd_app_newest_postback_timestamp_seconds{app=\"other\"}") != nil)
        #expect(Self.value(metrics, "postbackd_apple_ads_tokens_pending") == 0, "\(metrics)")
        #expect(server.stop() == 0)

        // Restarted: no postback yet, and the app's newest postback is the store's.
        server = try await ServerProcess.start(
            ["--db", store.argument] + ServeTests.keyArguments,
            directory: directory.path
        )
        metrics = try await Self.scrape(client, server) { Self.value($0, newest) != nil }
        let seeded = try #require(Self.value(metrics, newest), "\(metrics)")
        #expect((before...after).contains(seeded) && abs(seeded - stored) <= 1, "\(seeded) \(stored)")
        #expect(!metrics.contains("postbackd_app_postbacks_total{"), "nothing received since the restart")
        #expect(server.stop() == 0)
    }

    @Test("an app no longer registered loses its series (a frozen newest-postback time would look like a silence)")
    func unregisteredAppLosesItsSeries() {
        let metrics = ServerMetrics()
        metrics.apps(registered: [7, 8], newest: [7: 1_000, 8: 2_000, 9: 3_000])
        var text = String(decoding: metrics.text(), as: UTF8.self)
        for app in ["7", "8", "other"] {
            #expect(text.contains("postbackd_app_newest_postback_timestamp_seconds{app=\"\(app)\"}"), "\(text)")
        }
        metrics.apps(registered: [8])
        text = String(decoding: metrics.text(), as: UTF8.self)
        #expect(!text.contains("{app=\"7\"}"), "\(text)")
        #expect(text.contains("postbackd_app_newest_postback_timestamp_seconds{app=\"8\"} 2000"), "\(text)")
    }

    /// The metric names an expression file mentions: `postbackd_…` not part of a recording
    /// rule's name (`app:postbackd_…:max`).
    static func metricNames(in text: String) throws -> Set<String> {
        let pattern = try NSRegularExpression(pattern: "(?<![:A-Za-z0-9_])postbackd_[a-z0-9_]+")
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            pattern.matches(in: text, range: range).compactMap { match in
                Range(match.range, in: text).map { String(text[$0]) }
            }
        )
    }

    @Test("every metric the alert rules and the Grafana dashboard name is one serve or the doctor's textfile exposes")
    func opsFilesNameExposedMetrics() async throws {
        let rules = try String(contentsOfFile: Repository.path("ops/prometheus/postbackd-rules.yml"), encoding: .utf8)
        let dashboardText = try String(contentsOfFile: Repository.path("ops/grafana/postbackd.json"), encoding: .utf8)
        let dashboard = try #require(
            try JSONSerialization.jsonObject(with: Data(dashboardText.utf8)) as? [String: Any]
        )
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        var queries: [String] = []
        for panel in panels {
            let targets = try #require(panel["targets"] as? [[String: Any]], "\(panel["title"] ?? "")")
            #expect(!targets.isEmpty)
            for target in targets { queries.append(try #require(target["expr"] as? String)) }
        }
        let named = try Self.metricNames(in: rules).union(try Self.metricNames(in: queries.joined(separator: "\n")))
        #expect(named.count > 10, "\(named)")

        // A server with everything on: a registered app, a stored postback, a destination to
        // forward it to.
        let store = try await TestStore.make(.sqlite, in: directory)
        #expect(try await Postbackd.run(["apps", "add", String(Self.app), "--db", store.argument]).status == 0)
        let receiver = try await ForwardTests.Receiver { _, _ in (200, .zero) }
        let config = directory.path + "/forward.json"
        try """
        {"destinations": [{"name": "partner", "url": "http://127.0.0.1:\(receiver.port)/partner", "payload": "raw",
          "filter": {"key_spaces": ["production", "test", "development"]}}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let certificate = try #require(
            Bundle.module.path(forResource: "localhost-cert", ofType: "pem", inDirectory: "Fixtures")
        )
        let key = try #require(Bundle.module.path(forResource: "localhost-key", ofType: "pem", inDirectory: "Fixtures"))
        let server = try await ServerProcess.start(
            ["--db", store.argument, "--forward", config, "--tls-cert", certificate, "--tls-key", key]
                + ServeTests.keyArguments,
            directory: directory.path
        )
        let client = try HTTPClient.forTests(trusting: certificate)
        let body = try Self.signed("33333333-0000-4000-8000-000000000001")
        #expect(try await client.send(.POST, server.base + Self.skan, body: body).status == 200)
        let metrics = try await Self.scrape(client, server) {
            $0.contains("postbackd_forward_oldest_pending_seconds{") && $0.contains("postbackd_forward_attempts_total{")
        }
        // The doctor's metrics, as `doctor --endpoint … --prometheus-textfile` writes them for
        // this server.
        let port = try #require(server.base.split(separator: ":").last)
        let textfile = directory.path + "/doctor.prom"
        let doctor = try await Postbackd.run([
            "doctor", "--endpoint", "https://localhost:\(port)", "--ca-file", certificate, "--prometheus-textfile",
            textfile,
        ])
        #expect(doctor.status == 0, "\(doctor.standardOutput)\(doctor.standardError)")
        let doctorMetrics = try String(contentsOfFile: textfile, encoding: .utf8)
        #expect(server.stop() == 0)
        await receiver.stop()
        try await client.shutdown()
        // The served certificate's notAfter, as openssl reads it (the fixture's: 2126).
        let notAfter = try await Shell.run(
            "openssl x509 -noout -enddate -dateopt iso_8601 -in \(Shell.quoted(certificate))",
            in: directory.path
        ).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = try #require(UTCInstant(iso8601: String(notAfter.dropFirst("notAfter=".count))), "\(notAfter)")
        #expect(
            Self.value(metrics, "postbackd_tls_certificate_expiry_timestamp_seconds")
                == Double(expected.milliseconds / 1000),
            "\(notAfter)"
        )
        var exposed = Set<String>()
        for line in metrics.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count >= 4 else { continue }
            exposed.insert(String(parts[2]))
            if parts[3] == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] { exposed.insert(String(parts[2]) + suffix) }
            }
        }
        for line in doctorMetrics.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            if parts.count >= 3 { exposed.insert(String(parts[2])) }
        }
        let missing = named.filter { !exposed.contains($0) }
        #expect(
            missing.isEmpty,
            "named by ops/ but exposed neither by serve nor by the doctor: \(missing.sorted())\n\(metrics)\n\(doctorMetrics)"
        )
    }
}

import AsyncHTTPClient
import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The conversion value endpoints of `postbackd serve`: the built binary on a loopback port, a
/// real HTTP client, both engines.
@Suite("postbackd serve: conversion values", .serialized, .timeLimit(.minutes(20)))
struct ConversionValueServeTests {
    let directory: TemporaryDirectory
    static let game = Repository.path("SamplePostbacks/models/app-1254734734-game.json")
    static let bundle = "com.example.game"
    static let postRoute = "/v1/conversion-value"
    static let snippetRoute = "/api/v2/conversion_value"

    init() throws {
        directory = try TemporaryDirectory("serve-conversion-values")
    }

    /// A store holding the game model under its bundle identifier.
    private func store(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory)
        _ = try await ModelsJob.add(files: [Self.game], bundleID: Self.bundle, location: store.location)
        return store
    }

    private func start(
        _ store: TestStore,
        _ arguments: [String] = [],
        environment: [String: String] = [:]
    ) async throws
        -> ServerProcess
    {
        try await ServerProcess.start(
            ["--db", store.argument] + arguments,
            directory: directory.path,
            environment: environment
        )
    }

    // MARK: The stateless route

    @Test("POST /v1/conversion-value answers exactly what encode prints, with and without explanations")
    func statelessEqualsEncode() async throws {
        let store = try await store(.sqlite)
        let states = [
            #"{"elapsed_hours": 1}"#,
            #"{"elapsed_hours": 3, "events": [{"name": "session", "hours": 0}, {"name": "level_complete", "hours": 1}, {"name": "level_complete", "hours": 2}]}"#,
            #"{"elapsed_hours": 30.5, "events": [{"name": "purchase", "hours": 2.0, "revenue": 4.99, "currency": "USD"}, {"name": "session", "hours": 29}], "current": {"fine": 3, "coarse": ["low", null, null], "locked": [false, false, false]}}"#,
            #"{"elapsed_hours": 60, "events": [{"name": "purchase", "hours": 50, "revenue": 64.99, "currency": "USD"}], "current": {"fine": 7, "coarse": ["medium", null, null]}}"#,
            #"{"elapsed_hours": 100, "current": {"fine": 7, "coarse": ["medium", "high", null], "locked": [false, true, false]}}"#,
            #"{"elapsed_hours": 900, "current": {"fine": 9, "coarse": ["medium", "high", "low"]}}"#,
        ]
        let file = try directory.write("states.jsonl", states.joined(separator: "\n"))
        let server = try await start(store)
        let client = try HTTPClient.forTests()
        for explain in [false, true] {
            let encoded = try await Postbackd.run(
                ["encode", "--db", store.argument, "--app", Self.bundle, "--state", file]
                    + (explain ? ["--explain"] : [])
            )
            #expect(encoded.status == 0, "\(encoded.standardError)")
            let lines = encoded.standardOutput.split(separator: "\n").map(String.init)
            #expect(lines.count == states.count)
            for (index, state) in states.enumerated() {
                let app = index % 2 == 0 ? #""app_id": 1254734734"# : #""bundle_id": "com.example.game""#
                let body = "{" + app + (explain ? #", "explain": true, "# : ", ") + state.dropFirst()
                let answer = try await client.send(.POST, server.base + Self.postRoute, body: Array(body.utf8))
                #expect(answer.status == 200, "\(answer.body)")
                #expect(answer.header("Content-Type") == "application/json")
                #expect(answer.body.trimmingCharacters(in: .newlines) == lines[index], "state \(index)")
            }
        }
        // Nothing about the users was stored.
        #expect(server.stop() == 0)
        #expect(try await store.count("conversion_value_devices") == 0)
    }

    @Test(
        "POST /v1/conversion-value with conversion_type re-engagement answers from the re-engagement model, as encode does"
    )
    func reengagementState() async throws {
        let store = try await store(.sqlite)
        let state =
            #""elapsed_hours": 30, "events": [{"name": "purchase", "hours": 2, "revenue": 6, "currency": "USD"}]}"#
        let client = try HTTPClient.forTests()
        func post(_ server: ServerProcess, _ type: String?) async throws -> (status: Int, body: String) {
            let field = type.map { #""conversion_type": "\#($0)", "# } ?? ""
            let body = #"{"bundle_id": "com.example.game", "# + field + state
            let answer = try await client.send(.POST, server.base + Self.postRoute, body: Array(body.utf8))
            return (answer.status, answer.body.trimmingCharacters(in: .newlines))
        }
        var server = try await start(store)
        let install = try await post(server, nil)
        #expect(install.status == 200)
        #expect(try await post(server, "install") == install)
        let none = try await post(server, "re-engagement")
        #expect(none.status == 400 && none.body.contains("no re-engagement model"), "\(none.body)")
        #expect(none.body.contains(#""field":"conversion_type""#), "\(none.body)")
        let unknown = try await post(server, "reengagement")
        #expect(unknown.status == 400 && unknown.body.contains("expected \\\"install\\\" or"), "\(unknown.body)")
        #expect(server.stop() == 0)

        // The game's re-engagement schema: another model for the same app.
        let reengagement = try directory.write(
            "reengagement.json",
            FixtureModels.app111.replacingOccurrences(of: #""appId": "111""#, with: #""appId": "1254734734""#)
        )
        let added = try await Postbackd.run([
            "models", "add", "--db", store.argument, "--conversion-type", "re-engagement", reengagement,
        ])
        #expect(added.status == 0, "\(added.standardError)")
        server = try await start(store)
        let answered = try await post(server, "re-engagement")
        let states = try directory.write("state.jsonl", "{" + state)
        let encoded = try await Postbackd.run([
            "encode", "--db", store.argument, "--app", Self.bundle, "--conversion-type", "re-engagement", "--state",
            states,
        ])
        #expect(encoded.status == 0, "\(encoded.standardError)")
        #expect(answered.status == 200)
        #expect(answered.body == encoded.standardOutput.trimmingCharacters(in: .newlines))
        #expect(answered.body != install.body, "the re-engagement model answers otherwise: \(answered.body)")
        #expect(try await post(server, nil) == install, "installs still answer from the install model")
        #expect(server.stop() == 0)
    }

    // MARK: Errors and keys

    @Test("errors: 400 naming the parameter or field, 401 without a listed key, 405; keys never logged")
    func errors() async throws {
        let store = try await store(.sqlite)
        let keys = try directory.write("keys", "# the partners' keys\nsecret-key-1\n\n  secret-key-2  \n")
        let server = try await start(
            store,
            ["--api-key-file", keys, "--access-log"],
            environment: ["POSTBACKD_LOG_LEVEL": "trace"]
        )
        let client = try HTTPClient.forTests()
        let base = server.base + Self.snippetRoute + "?i=com.example.game&n=__SESSION__&idfv=D3V1CE-1D-7F3A"

        func snippet(
            _ query: String,
            _ status: Int,
            _ reason: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let answer = try await client.send(.GET, base + query)
            #expect(answer.status == status, "\(query): \(answer.body)", sourceLocation: sourceLocation)
            #expect(answer.jsonStatus == "error", sourceLocation: sourceLocation)
            let given = answer.json["reason"] as? String ?? ""
            #expect(given.contains(reason), "\(query): \(given)", sourceLocation: sourceLocation)
        }
        try await snippet("", 401, "a: missing API key")
        try await snippet("&a=secret-key-3", 401, "a: unknown API key")
        try await snippet("&a=secret-key-2&i=1", 400, "i: given twice")
        let noApp = try await client.send(
            .GET,
            server.base + Self.snippetRoute + "?a=secret-key-1&i=com.other&n=x&idfv=A"
        )
        #expect(noApp.status == 400 && (noApp.json["reason"] as? String ?? "").contains("unknown app com.other"))
        let noIDFV = try await client.send(
            .GET,
            server.base + Self.snippetRoute + "?a=secret-key-1&i=com.example.game&n=x"
        )
        #expect(noIDFV.status == 400 && (noIDFV.json["reason"] as? String ?? "").contains("idfv: missing"))
        try await snippet("&a=secret-key-1&p0_coarse=3", 400, "p0_coarse: expected 0 (low), 1 (medium) or 2 (high)")
        try await snippet("&a=secret-key-1&skan_current_conversion_value=64", 400, "skan_current_conversion_value")
        try await snippet("&a=secret-key-1&skan_total_revenue_by_currency=%7B%22usd%22%3A1%7D", 400, "ISO 4217")
        try await snippet("&a=secret-key-1&skan_total_revenue_by_currency=4.99", 400, "expected a JSON object")
        try await snippet(
            "&a=secret-key-1&skan_first_call_to_skadnetwork_timestamp=\(Int(Date().timeIntervalSince1970) + 86_400)",
            400,
            "is in the future"
        )
        // Ignored parameters, and a listed key: answered.
        let ok = try await client.send(.GET, base + "&a=secret-key-2&v=4.0&app_v=1.2&p=iOS&idfa=X&prev_fine_value=3")
        #expect(ok.status == 200 && ok.jsonStatus == "ok", "\(ok.body)")

        let post = server.base + Self.postRoute
        let state = Array(#"{"app_id": 1254734734, "elapsed_hours": 1}"#.utf8)
        #expect(try await client.send(.POST, post, body: state).status == 401)
        #expect(
            try await client.send(.POST, post, body: state, headers: [("Authorization", "Bearer nope")]).status == 401
        )
        let authorized = try await client.send(
            .POST,
            post,
            body: state,
            headers: [("Authorization", "Bearer secret-key-1")]
        )
        #expect(authorized.status == 200, "\(authorized.body)")
        #expect(try await client.send(.POST, post + "?a=secret-key-2", body: state).status == 200)
        let badField = try await client.send(
            .POST,
            post + "?a=secret-key-1",
            body: Array(#"{"app_id": 1254734734, "elapsed_hours": 1, "events": [{"name": "x", "hours": "1"}]}"#.utf8)
        )
        #expect(badField.status == 400 && badField.json["field"] as? String == "events[0].hours", "\(badField.body)")
        let noModel = try await client.send(
            .POST,
            post + "?a=secret-key-1",
            body: Array(#"{"app_id": 1, "elapsed_hours": 1}"#.utf8)
        )
        #expect(noModel.status == 400 && (noModel.json["reason"] as? String ?? "").contains("unknown app"))
        #expect(try await client.send(.GET, post).status == 405)
        #expect(try await client.send(.POST, server.base + Self.snippetRoute, body: state).status == 405)

        #expect(server.stop() == 0)
        let logs = server.standardOutput + server.standardError
        #expect(logs.contains(Self.snippetRoute), "the access log names the route")
        #expect(!logs.contains("secret-key"), "an API key was logged")
        #expect(!logs.contains("D3V1CE-1D"), "a device identifier was logged")
    }

    // MARK: The snippet protocol

    /// A device running the client snippet: it sends what the snippet sends and sets what the
    /// answers say. Time runs through the first-call timestamp it sends (the first call moved
    /// back by the simulated hours), so 40 days take seconds.
    struct SnippetDevice {
        var idfv = UUID().uuidString
        var fine: Int? = nil
        var coarse: [Int?] = [nil, nil, nil]
        var locked: [Bool] = [false, false, false]
        var revenue: [String: Double] = [:]

        static func window(_ hours: Double) -> Int? {
            hours < 48 ? 0 : hours < 168 ? 1 : hours < 840 ? 2 : nil
        }

        func query(_ event: String, hours: Double, now: Date) -> String {
            var items = [
                URLQueryItem(name: "a", value: "device-key"),
                URLQueryItem(name: "i", value: ConversionValueServeTests.bundle),
                URLQueryItem(name: "n", value: event),
                URLQueryItem(name: "idfv", value: idfv),
                URLQueryItem(name: "v", value: "4.0"),
                URLQueryItem(
                    name: "skan_first_call_to_skadnetwork_timestamp",
                    value: String(Int(now.timeIntervalSince1970 - hours * 3600))
                ),
            ]
            if let fine { items.append(URLQueryItem(name: "skan_current_conversion_value", value: String(fine))) }
            for window in 0..<3 {
                if let value = coarse[window] {
                    items.append(URLQueryItem(name: "p\(window)_coarse", value: String(value)))
                }
                if locked[window] {
                    items.append(
                        URLQueryItem(name: "p\(window)_window_lock", value: String(Int(now.timeIntervalSince1970)))
                    )
                }
            }
            if !revenue.isEmpty {
                let json =
                    "{" + revenue.keys.sorted().map { "\"\($0)\":\(revenue[$0] ?? 0)" }.joined(separator: ",") + "}"
                items.append(URLQueryItem(name: "skan_total_revenue_by_currency", value: json))
            }
            var components = URLComponents()
            components.queryItems = items
            return components.percentEncodedQuery ?? ""
        }

        /// Applies an answer as the snippet does: the fine value, the window's coarse value, the lock.
        mutating func apply(_ answer: Answer, hours: Double) {
            guard let window = Self.window(hours) else { return }
            if let value = answer.json["conversion_value"] as? Int { fine = value }
            if let value = answer.json["skan_updated_coarse_value"] as? Int { coarse[window] = value }
            if answer.json["skan_updated_lock_window_value"] as? Bool == true { locked[window] = true }
        }
    }

    @Test(
        "the snippet protocol: a device's sessions and purchases over 40 days get the rules' values, across a server restart",
        arguments: TestEngine.available
    )
    func simulatedDevice(engine: TestEngine) async throws {
        let store = try await store(engine)
        var server = try await start(store, ["--api-key", "device-key"])
        let client = try HTTPClient.forTests()
        var device = SnippetDevice()
        let now = Date()

        /// One call at `hours`; its answer must be `expected` ("fine,coarse,lock", or "ok" alone).
        func step(
            _ event: String,
            at hours: Double,
            spend: Double = 0,
            expect expected: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            if spend > 0 { device.revenue["USD", default: 0] += spend }
            let url = server.base + Self.snippetRoute + "?" + device.query(event, hours: hours, now: now)
            let answer = try await client.send(.GET, url)
            #expect(answer.status == 200 && answer.jsonStatus == "ok", "\(answer.body)", sourceLocation: sourceLocation)
            let json = answer.json
            let got =
                json["conversion_value"] == nil
                ? "ok"
                : "\(json["conversion_value"] as? Int ?? -1),\((json["skan_updated_coarse_value"] as? Int).map(String.init) ?? "-"),\(json["skan_updated_lock_window_value"] as? Bool ?? false)"
            #expect(got == expected, "\(event) at hour \(hours): \(answer.body)", sourceLocation: sourceLocation)
            device.apply(answer, hours: hours)
        }

        // The game model: fine value = level_complete count in the first 48 hours (lock at 47);
        // coarse low = a session, medium = purchases of 0.99–20 USD, high = 50 USD or more;
        // windows 1 and 2 lock at high.
        try await step("__SESSION__", at: 0, expect: "0,0,false")
        try await step("level_complete", at: 1, expect: "1,0,false")
        try await step("level_complete", at: 1.5, expect: "2,0,false")
        try await step("level_complete", at: 2, expect: "3,0,false")
        try await step("purchase", at: 5, spend: 4.99, expect: "3,1,false")
        try await step("level_complete", at: 47.5, expect: "4,1,false")
        // Window 1: the fine value stays; coarse over all events so far.
        try await step("__SESSION__", at: 50, expect: "4,1,false")

        // The server restarts; the device's history is in the database.
        #expect(server.stop() == 0)
        server = try await start(store, ["--api-key", "device-key"])

        // 60 USD more: 64.99 in all, high, which locks window 1.
        try await step("purchase", at: 60, spend: 60, expect: "4,2,true")
        // Window 1 is locked: unchanged, locked.
        try await step("__SESSION__", at: 100, expect: "4,2,true")
        // Window 2 (day 8 on): high from the purchases, locks.
        try await step("__SESSION__", at: 200, expect: "4,2,true")
        // Day 40: after the last window, nothing to set.
        try await step("__SESSION__", at: 960, expect: "ok")
        #expect(server.stop() == 0)

        // Nothing kept for the device after its last window; the raw identifier never stored.
        #expect(try await store.count("conversion_value_devices") == 0)
    }

    @Test("the snippet protocol: a retried request records its event once", arguments: TestEngine.available)
    func retriedRequest(engine: TestEngine) async throws {
        let store = try await store(engine)
        let server = try await start(store)
        let client = try HTTPClient.forTests()
        let device = SnippetDevice()
        let now = Date()
        let url = server.base + Self.snippetRoute + "?" + device.query("level_complete", hours: 1, now: now)
        let first = try await client.send(.GET, url)
        let again = try await client.send(.GET, url)
        #expect(first.status == 200 && first.json["conversion_value"] as? Int == 1, "\(first.body)")
        #expect(again.body == first.body)
        let next = try await client.send(
            .GET,
            server.base + Self.snippetRoute + "?" + device.query("level_complete", hours: 1.1, now: now)
        )
        #expect(next.json["conversion_value"] as? Int == 2, "\(next.body)")
        #expect(server.stop() == 0)
        let history = try await store.strings("SELECT history FROM conversion_value_devices")
        #expect(history.count == 1)
        #expect(history.first??.components(separatedBy: "level_complete").count == 3, "two events: \(history)")
        let devices = try await store.strings("SELECT count(*) FROM conversion_value_devices")
        #expect(devices == ["1"])
    }

    @Test(
        "the snippet's query is form-encoded: + is a space and %2B a plus, as Python's urlencode writes it",
        arguments: TestEngine.available
    )
    func formEncodedQuery(engine: TestEngine) async throws {
        let store = try await store(engine)
        let server = try await start(store, ["--api-key", "key+plus"])
        let client = try HTTPClient.forTests()
        let first = Int(Date().timeIntervalSince1970) - 3600
        // What `urllib.parse.urlencode` makes of {"a": "key+plus", "i": "com.example.game",
        // "n": "level_complete", "idfv": "A B", "skan_total_revenue_by_currency": '{"USD": 4.99}', …}.
        func query(idfv: String, revenue: String, key: String = "key%2Bplus") -> String {
            server.base + Self.snippetRoute + "?a=\(key)&i=com.example.game&n=level_complete&idfv=\(idfv)"
                + "&skan_first_call_to_skadnetwork_timestamp=\(first)&skan_total_revenue_by_currency=\(revenue)"
        }
        let plus = try await client.send(.GET, query(idfv: "D3V1CE+1", revenue: "%7B%22USD%22%3A+4.99%7D"))
        #expect(plus.status == 200, "\(plus.body)")
        #expect(plus.json["conversion_value"] as? Int == 1, "\(plus.body)")
        // The same device and totals with %20: the same answer, for the device's second event.
        let percent = try await client.send(.GET, query(idfv: "D3V1CE%201", revenue: "%7B%22USD%22%3A%204.99%7D"))
        #expect(percent.status == 200, "\(percent.body)")
        #expect(percent.json["conversion_value"] as? Int == 2, "the same device: \(percent.body)")
        #expect(percent.json["skan_updated_coarse_value"] as? Int == plus.json["skan_updated_coarse_value"] as? Int)
        // %2B stays a plus: another device, and in the totals a '+' the JSON does not take.
        let other = try await client.send(.GET, query(idfv: "D3V1CE%2B1", revenue: "%7B%22USD%22%3A%204.99%7D"))
        #expect(other.json["conversion_value"] as? Int == 1, "another device: \(other.body)")
        let literal = try await client.send(.GET, query(idfv: "D3V1CE+1", revenue: "%7B%22USD%22%3A%2B4.99%7D"))
        #expect(literal.status == 400)
        #expect((literal.json["reason"] as? String ?? "").contains("unexpected '+'"), "\(literal.body)")
        // The key is decoded too: a '+' in it is a space, so not the key.
        #expect(try await client.send(.GET, query(idfv: "X", revenue: "", key: "key+plus")).status == 401)
        #expect(try await client.send(.GET, query(idfv: "X", revenue: "", key: "key%2bplus")).status == 200)
        #expect(server.stop() == 0)
        #expect(try await store.count("conversion_value_devices") == 3)
    }

    @Test("a locked window is answered with its values and the fine value even when the app sent none")
    func lockedWithoutFine() async throws {
        let store = try await store(.sqlite)
        let server = try await start(store)
        let client = try HTTPClient.forTests()
        let first = Int(Date().timeIntervalSince1970) - 3600
        let answer = try await client.send(
            .GET,
            server.base + Self.snippetRoute
                + "?i=com.example.game&n=__SESSION__&idfv=L0CK&p0_coarse=1&p0_window_lock=\(first + 60)&skan_first_call_to_skadnetwork_timestamp=\(first)"
        )
        #expect(
            answer.body.trimmingCharacters(in: .newlines)
                == #"{"status":"ok","conversion_value":0,"skan_updated_coarse_value":1,"skan_updated_lock_window_value":true}"#
        )
        #expect(server.stop() == 0)
    }

    @Test(
        "two servers on one PostgreSQL database, calls for the same devices at once: every call recorded once",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func twoServers() async throws {
        let store = try await store(.postgres)
        let servers = await [try start(store), try start(store)]
        let client = try HTTPClient.forTests()
        let first = Int(Date().timeIntervalSince1970) - 3600
        let devices = (0..<4).map { "TW0-SERVERS-\($0)" }
        let callsPerDevice = 40
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for call in 0..<callsPerDevice {
                for (index, device) in devices.enumerated() {
                    let server = servers[(call + index) % 2]
                    // `p` is ignored by the protocol but makes each call a different request.
                    let url =
                        server.base + Self.snippetRoute
                        + "?i=com.example.game&n=level_complete&idfv=\(device)&p=\(call)&skan_first_call_to_skadnetwork_timestamp=\(first)"
                    group.addTask { try await client.send(.GET, url).status }
                }
            }
            var all: [Int] = []
            for try await status in group { all.append(status) }
            return all
        }
        #expect(statuses.count == devices.count * callsPerDevice)
        #expect(statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
        for server in servers { #expect(server.stop() == 0) }
        let histories = try await store.strings("SELECT history FROM conversion_value_devices")
        #expect(histories.count == devices.count)
        for history in histories {
            #expect(history?.components(separatedBy: "level_complete").count == callsPerDevice + 1, "\(history ?? "")")
        }
    }

    @Test("a model added while the server runs answers within seconds")
    func modelsReloaded() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try await start(store)
        let client = try HTTPClient.forTests()
        let url = server.base + Self.snippetRoute + "?i=com.example.game&n=__SESSION__&idfv=B2"
        #expect(try await client.send(.GET, url).status == 400)
        let added = try await Postbackd.run([
            "models", "add", "--db", store.argument, "--bundle-id", Self.bundle, Self.game,
        ])
        #expect(added.status == 0, "\(added.standardError)")
        #expect(added.standardOutput.contains("bundle identifier com.example.game"))
        let deadline = Date().addingTimeInterval(20)
        var status = 0
        while Date() < deadline {
            status = try await client.send(.GET, url).status
            if status == 200 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(status == 200)
        #expect(server.stop() == 0)

        // A bundle identifier names one app.
        let other = Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json")
        let conflict = try await Postbackd.run([
            "models", "add", "--db", store.argument, "--bundle-id", Self.bundle, other,
        ])
        #expect(conflict.status == 2)
        #expect(
            conflict.standardError.contains("bundle identifier com.example.game belongs to app 1254734734"),
            "\(conflict.standardError)"
        )
        let listed = try await Postbackd.run(["models", "list", "--db", store.argument])
        #expect(listed.standardOutput.contains("app 1254734734 (com.example.game):"), "\(listed.standardOutput)")
    }
}

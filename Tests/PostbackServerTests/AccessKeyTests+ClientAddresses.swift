import AsyncHTTPClient
import Foundation
import NIOCore
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

extension AccessKeyTests {
    @Test("wrong keys and sign-ins are limited per client address: 10 a window, then 429 with Retry-After")
    func signInLimit() async throws {
        let store = try await TestStore.sample(.sqlite, in: directory)
        let secret = try await addKey(store, "reader", ["--all-apps"])
        let server = try await ServerProcess.start(
            // An hour's window, not a minute's: on a loaded machine the ten wrong keys below
            // may take longer than a minute. The window itself is FailureLimiterTests'.
            ["--db", store.argument, "--client-address-header", "X-Forwarded-For", "--key-failure-window", "3600"],
            directory: directory.path
        )
        defer { server.stop() }
        let client = Self.client()
        defer { Task { try? await client.shutdown() } }
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        func login(_ key: String, from address: String) async throws -> Answer {
            try await client.send(
                .POST,
                server.base + "/login",
                body: Array("token=\(key)".utf8),
                headers: form + [("X-Forwarded-For", address)]
            )
        }
        // Ten wrong tries, sign-ins and keys alike, are answered 401.
        for attempt in 0..<10 {
            let answer =
                attempt % 2 == 0
                ? try await login("guess-\(attempt)", from: "198.51.100.7")
                : try await client.send(
                    .GET,
                    server.base + "/api/v1/report",
                    headers: Self.bearer("guess-\(attempt)") + [("X-Forwarded-For", "198.51.100.7")]
                )
            #expect(answer.status == 401, "attempt \(attempt)")
        }
        // Then everything keyed from that address is 429, the right key too.
        for answer in [
            try await login(secret, from: "198.51.100.7"),
            try await client.send(
                .GET,
                server.base + "/api/v1/report",
                headers: Self.bearer(secret) + [("X-Forwarded-For", "198.51.100.7")]
            ),
        ] {
            #expect(answer.status == 429)
            let retry = try #require(answer.header("Retry-After").flatMap(Int.init))
            // Within the window: less its elapsed part (minutes, on a loaded machine).
            #expect((1...3_600).contains(retry))
        }
        // A session cookie can be computed from a guessed token: wrong ones count too.
        for _ in 0..<10 {
            let page = try await client.send(
                .GET,
                server.base + "/dashboard",
                headers: [
                    ("Cookie", "postbackd_session=\(UInt64.random(in: 1...UInt64.max))"),
                    ("X-Forwarded-For", "2001:db8:7::1"),
                ]
            )
            #expect(page.status == 303)
        }
        // Limited per IPv6 /64: another address of it too.
        #expect(try await login(secret, from: "2001:db8:7::2").status == 429)
        // Another address is not limited; health and postbacks need no key.
        #expect(try await login(secret, from: "198.51.100.8").status == 303)
        #expect(
            try await client.send(.GET, server.base + "/healthz", headers: [("X-Forwarded-For", "198.51.100.7")]).status
                == 200
        )
        #expect(server.stop() == 0)
        #expect(!server.standardOutput.contains(secret) && !server.standardError.contains(secret))
    }

    @Test(
        "--client-address keep, truncate, hash and drop store (and log) what they say; prune-addresses clears older rows",
        arguments: TestEngine.available
    )
    func clientAddresses(_ engine: TestEngine) async throws {
        let secretFile = try directory.write("address-secret", "a-secret-of-the-operator-\(engine)\n")
        let hashKey = Array("a-secret-of-the-operator-\(engine)".utf8)
        let sent = [
            "203.0.113.77", "2001:db8:1:2:3:4:5:6", "2001:0db8:0001:0002:0003:0004:0005:0006", "::ffff:192.0.2.9",
        ]
        let expected: [String: [String?]] = [
            "keep": sent,
            "truncate": ["203.0.113.0/24", "2001:db8:1::/48", "2001:db8:1::/48", "192.0.2.0/24"],
            "hash": [
                "203.0.113.77", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6", "192.0.2.9",
            ].map { "hmac-sha256:" + HMACSHA256.hex(key: hashKey, message: Array($0.utf8)) },
            "drop": [nil, nil, nil, nil],
        ]
        let postbacks = try await Postbackd.generated(count: 16, seed: 3_801, duplicates: 0, invalid: 0)
            .split(separator: "\n").map { Array($0.utf8) }
        var next = 0
        for policy in ["keep", "truncate", "hash", "drop"] {
            let store = try await TestStore.make(engine, in: directory, name: policy)
            let server = try await ServerProcess.start(
                [
                    "--db", store.argument, "--client-address", policy, "--client-address-header", "X-Forwarded-For",
                    "--access-log",
                ]
                    + ServeTests.keyArguments + (policy == "hash" ? ["--client-address-key-file", secretFile] : []),
                directory: directory.path
            )
            let client = try HTTPClient.forTests()
            var ids: [String] = []
            for address in sent {
                let answer = try await client.send(
                    .POST,
                    server.base + "/.well-known/skadnetwork/report-attribution/",
                    body: postbacks[next],
                    headers: [("X-Forwarded-For", "10.0.0.1, " + address)]
                )
                next += 1
                #expect(answer.jsonStatus == "stored", "\(answer.body)")
                ids.append(answer.json["request_id"] as? String ?? "")
            }
            // A body that is not a postback: quarantined, with the address as the policy says.
            let junk = try await client.send(
                .POST,
                server.base + "/.well-known/skadnetwork/report-attribution/",
                body: Array("not a postback".utf8),
                headers: [("X-Forwarded-For", sent[0])]
            )
            #expect(junk.status == 400)
            #expect(server.stop() == 0)
            for (index, id) in ids.enumerated() {
                let stored = try await store.strings("SELECT client_address FROM postbacks WHERE request_id = '\(id)'")
                #expect(stored == [expected[policy]?[index] ?? nil], "\(policy) \(sent[index])")
            }
            let quarantined = try await store.strings("SELECT client_address FROM quarantine")
            #expect(quarantined == [expected[policy]?[0] ?? nil], "\(policy): quarantine")
            // The access log names the client as stored, never more.
            let log = server.standardOutput + server.standardError
            if policy != "keep" {
                for address in sent { #expect(!log.contains(address), "\(policy) logged \(address)") }
            }

            // prune-addresses: nothing received within the last day; everything older than 0 days.
            let none = try await Postbackd.run(["prune-addresses", "--db", store.argument, "--older-than", "1"])
            #expect(
                none.status == 0
                    && none.standardOutput.hasPrefix(
                        "cleared the client addresses of 0 postbacks, 0 sightings and 0 quarantined entries"
                    ),
                "\(none.standardOutput)"
            )
            let all = try await Postbackd.run(["prune-addresses", "--db", store.argument, "--older-than", "0"])
            let count = policy == "drop" ? 0 : sent.count
            let quarantine = policy == "drop" ? 0 : 1
            #expect(
                all.status == 0
                    && all.standardOutput.hasPrefix(
                        "cleared the client addresses of \(count) postbacks, 0 sightings and \(quarantine) quarantined entries"
                    ),
                "\(all.standardOutput)"
            )
            for table in ["postbacks", "sightings", "quarantine"] {
                #expect(try await store.count(table, where: "client_address IS NOT NULL") == 0, "\(table)")
            }
            #expect(try await store.count("postbacks") == sent.count, "rows stay; only the address goes")
        }
        let refused = try await Postbackd.run(["serve", "--db", "x.sqlite", "--client-address", "hash"])
        #expect(refused.status == 2 && refused.standardError.contains("--client-address-key-file"))
    }
}

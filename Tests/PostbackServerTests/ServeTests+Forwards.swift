import AsyncHTTPClient
import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Channels over HTTP (issue 60): what devices post is `device`; a network pushes its forwards
/// to `POST /v1/forwards/CHANNEL` with a key of scope `forwards` that opens the channel.
extension ServeTests {
    /// `postbackd keys add NAME arguments…`: the secret it printed.
    func addKey(_ store: TestStore, _ name: String, _ arguments: [String]) async throws -> String {
        let run = try await Postbackd.run(["keys", "add", "--db", store.argument, name] + arguments)
        #expect(run.status == 0, "\(run.standardError)")
        return run.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "a network's forwards are stored on its channel, a device's copy on device, whichever comes first; the route needs a key of the channel and the app",
        arguments: TestEngine.available
    )
    func forwardsOnTheirChannel(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let networkX = try await addKey(
            store,
            "network-x",
            ["--all-apps", "--scope", "forwards", "--channels", "network-x"]
        )
        let everyChannel = try await addKey(store, "mmp", ["--all-apps", "--scope", "forwards"])
        let otherApp = try await addKey(
            store,
            "other-app",
            ["--apps", "1", "--scope", "forwards", "--channels", "network-x"]
        )
        let reader = try await addKey(store, "reader", ["--all-apps"])
        let server = try await start(store)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        let forwards = server.base + "/v1/forwards/network-x"
        func bearer(_ secret: String) -> [(String, String)] { [("Authorization", "Bearer " + secret)] }

        // Copy first: the device's copy, then the network's forward with a raised value.
        let copy = try Self.signed("60000000-0000-4000-8000-000000000001", fine: 20)
        let raised = try Self.signed("60000000-0000-4000-8000-000000000001", fine: 40)
        #expect(try await client.send(.POST, server.base + Self.skan + "/", body: copy).jsonStatus == "stored")
        let conflict = try await client.send(.POST, forwards, body: raised, headers: bearer(networkX))
        #expect(conflict.status == 200 && conflict.jsonStatus == "duplicate", "\(conflict.body)")
        #expect(conflict.json["conflict"] as? Bool == true)

        // Forward first, then the device's copy with the very same bytes: still a sighting of
        // its own (another source), on device. A trailing slash names the same channel.
        let second = try Self.signed("60000000-0000-4000-8000-000000000002")
        let forwarded = try await client.send(.POST, forwards + "/", body: second, headers: bearer(networkX))
        #expect(forwarded.jsonStatus == "stored", "\(forwarded.body)")
        #expect(try await client.send(.POST, server.base + Self.skan, body: second).jsonStatus == "duplicate")

        // A key of every channel posts on any; junk is quarantined on the channel.
        let third = try Self.signed("60000000-0000-4000-8000-000000000003")
        let mmp = try await client.send(
            .POST,
            server.base + "/v1/forwards/mmp.feed",
            body: third,
            headers: bearer(everyChannel)
        )
        #expect(mmp.jsonStatus == "stored", "\(mmp.body)")
        let junk = try await client.send(.POST, forwards, body: Array("not json".utf8), headers: bearer(networkX))
        #expect(junk.status == 400 && junk.jsonStatus == "quarantined", "\(junk.body)")

        // Refused, nothing stored: no key, a wrong one, another scope, another channel, another app.
        let fourth = try Self.signed("60000000-0000-4000-8000-000000000004")
        let refusals: [(String, [(String, String)], Int)] = [
            (forwards, [], 401),
            (forwards, bearer("pbk_" + String(repeating: "0", count: 64)), 401),
            (forwards, bearer(reader), 403),
            (server.base + "/v1/forwards/network-y", bearer(networkX), 403),
            (forwards, bearer(otherApp), 403),
            (server.base + "/v1/forwards/device", bearer(everyChannel), 404),
            (server.base + "/v1/forwards/Network_X", bearer(everyChannel), 404),
            (server.base + "/v1/forwards", bearer(everyChannel), 404),
        ]
        for (url, headers, status) in refusals {
            let answer = try await client.send(.POST, url, body: fourth, headers: headers)
            #expect(answer.status == status, "\(url) \(headers.isEmpty ? "no key" : "a key"): \(answer.body)")
        }
        let otherAppAnswer = try await client.send(.POST, forwards, body: fourth, headers: bearer(otherApp))
        #expect((otherAppAnswer.json["reason"] as? String ?? "").contains("does not open app 525463029"))
        let wrongMethod = try await client.send(.GET, forwards, headers: bearer(networkX))
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "POST")
        #expect(server.stop() == 0)

        #expect(
            try await store.strings(
                "SELECT transaction_id || ' ' || channel || ' ' || source FROM postbacks ORDER BY transaction_id"
            ) == [
                "60000000-0000-4000-8000-000000000001 device http",
                "60000000-0000-4000-8000-000000000002 network-x http:network-x",
                "60000000-0000-4000-8000-000000000003 mmp.feed http:mmp.feed",
            ]
        )
        #expect(
            try await store.strings(
                """
                SELECT p.transaction_id || ' ' || s.channel || ' ' || s.source || ' ' || CASE WHEN s.conflict THEN 1 ELSE 0 END
                FROM sightings s JOIN postbacks p ON p.id = s.postback_id ORDER BY p.transaction_id
                """
            ) == [
                "60000000-0000-4000-8000-000000000001 network-x http:network-x 1",
                "60000000-0000-4000-8000-000000000002 device http 0",
            ]
        )
        #expect(
            try await store.strings("SELECT channel || ' ' || source FROM quarantine") == [
                "network-x http:network-x"
            ]
        )
    }
}

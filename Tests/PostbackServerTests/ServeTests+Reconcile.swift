import AsyncHTTPClient
import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `reconcile` over HTTP (issue 60): the devices' copies posted to Apple's paths, a network's
/// forwards pushed to `POST /v1/forwards/network-x`, and `GET /api/v1/reconcile`.
extension ServeTests {
    @Test(
        "copies at Apple's paths and forwards at /v1/forwards, either first: GET /api/v1/reconcile counts the corpus as planned",
        arguments: TestEngine.available,
        [true, false]
    )
    func reconcileOverServe(_ engine: TestEngine, copyFirst: Bool) async throws {
        let corpus = try ReconcileCorpus(repeats: 1)
        let store = try await TestStore.make(engine, in: directory, name: "reconcile-\(copyFirst)")
        // The early postbacks' campaign started yesterday: they arrive within its first four days.
        let yesterday = UTCDay(daysSinceEpoch: UTCInstant.now().day.daysSinceEpoch - 1)
        try await PostbackStores.with(store.location) { store in
            _ = try await store.replaceCampaignMappings([ReconcileCorpus.mapping(validFrom: yesterday)])
        }
        let network = try await addKey(
            store,
            "network-x",
            ["--all-apps", "--scope", "forwards", "--channels", ReconcileCorpus.channel]
        )
        let reader = try await addKey(store, "reader", ["--all-apps"])
        let otherApp = try await addKey(store, "other-app", ["--apps", "1"])
        let server = try await start(store)
        defer { server.stop() }
        let client = try HTTPClient.forTests()
        let forwards = server.base + "/v1/forwards/" + ReconcileCorpus.channel

        func post(copy line: String) async throws {
            let path = line.hasPrefix("{\"jws-string\"") ? Self.aak : Self.skan
            let answer = try await client.send(.POST, server.base + path + "/", body: Array(line.utf8))
            #expect(answer.status == 200 || answer.jsonStatus == "quarantined", "\(answer.body)")
        }
        func post(forward line: String) async throws {
            let answer = try await client.send(
                .POST,
                forwards,
                body: Array(line.utf8),
                headers: [("Authorization", "Bearer " + network)]
            )
            #expect(answer.status == 200 || answer.jsonStatus == "quarantined", "\(answer.body)")
        }
        for old in [true, false] {
            if copyFirst {
                for line in corpus.copies(old: old) { try await post(copy: line) }
                for line in corpus.forwards(old: old) { try await post(forward: line) }
            } else {
                for line in corpus.forwards(old: old) { try await post(forward: line) }
                for line in corpus.copies(old: old) { try await post(copy: line) }
            }
        }

        // The nightly job, while the server runs.
        let aggregate = try await Postbackd.run(["aggregate", "--db", store.argument])
        #expect(aggregate.status == 0, "\(aggregate.standardError)")

        // Everything arrived now: judged eleven days on, every unmatched one is missing its
        // other side; judged now, every one is pending.
        let later = UTCInstant(milliseconds: UTCInstant.now().milliseconds + 11 * 86_400_000)
        func totals(asOf: UTCInstant, key: String = reader) async throws -> [String: Int] {
            let answer = try await client.send(
                .GET,
                server.base + "/api/v1/reconcile?by=&as_of=" + asOf.iso8601,
                headers: [("Authorization", "Bearer " + key)]
            )
            #expect(answer.status == 200, "\(answer.body)")
            let rows = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]] ?? []
            #expect(rows.count == 1)
            return (rows.first ?? [:]).compactMapValues { $0 as? Int }
        }
        func named(_ counts: ReconcileCounts) -> [String: Int] {
            Dictionary(uniqueKeysWithValues: ReconcileCounts.metrics.map { ($0.name, counts[keyPath: $0.value]) })
        }
        let expected = corpus.expected(allOld: true)
        #expect(try await totals(asOf: later) == named(expected))
        let now = try await totals(asOf: UTCInstant.now())
        #expect(now["pending"] == expected.pending + expected.copyOnly + expected.forwardOnly)
        #expect(now["copy_only"] == 0 && now["forward_only"] == 0)

        // A key of another app sees none of it, and may not ask for this app.
        let narrowed = try await client.send(
            .GET,
            server.base + "/api/v1/reconcile",
            headers: [("Authorization", "Bearer " + otherApp)]
        )
        #expect(narrowed.status == 200 && narrowed.body == "[]\n", "\(narrowed.body)")
        let refused = try await client.send(
            .GET,
            server.base + "/api/v1/reconcile?app_id=\(ReconcileCorpus.appID)",
            headers: [("Authorization", "Bearer " + otherApp)]
        )
        #expect(refused.status == 403, "\(refused.body)")
        let bad = try await client.send(
            .GET,
            server.base + "/api/v1/reconcile?grace_days=ten",
            headers: [("Authorization", "Bearer " + reader)]
        )
        #expect(bad.status == 400 && bad.json["field"] as? String == "grace_days", "\(bad.body)")
    }
}

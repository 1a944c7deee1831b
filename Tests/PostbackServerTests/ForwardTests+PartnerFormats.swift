import AsyncHTTPClient
import Foundation
import PostbackKit
import PostbackServer
import PostbackStore
import PostbackTestSupport
import Testing

extension ForwardTests {
    /// Campaign mappings for every network in `rows`: prefix `D` (each digit) to campaign
    /// `c-NETWORK-D`, ad group `g-D` and a creative that JSON must escape.
    private func addCampaigns(_ store: TestStore, _ rows: [String: [String: Any]]) async throws {
        var csv = CampaignMapping.header + "\n"
        for network in Set(rows.values.compactMap { $0["ad_network_id"] as? String }).sorted() {
            for digit in 0...9 {
                csv += "\(network),\(digit),,,c-\(network)-\(digit),g-\(digit),\"cr \"\"\(digit)\"\" é\"\n"
            }
        }
        let added = try await Self.forward(
            ["campaigns", "add", "--db", store.argument, try directory.write("campaigns.csv", csv)]
        )
        #expect(added.status == 0, "\(added.standardError)")
    }

    /// The campaign mapping row's values `addCampaigns` gave an exported row.
    private static func mapping(_ row: [String: Any]) -> (campaign: String, adGroup: String, creative: String)? {
        guard let network = row["ad_network_id"] as? String,
            let digit = (row["source_identifier"] as? String ?? (row["campaign_id"] as? Int).map(String.init))?.first
        else { return nil }
        return ("c-\(network)-\(digit)", "g-\(digit)", "cr \"\(digit)\" é")
    }

    @Test(
        "enriched, skan-standard and template bodies: Apple's signature verifies from what is forwarded, partner fields from the store and the campaign mappings",
        arguments: TestEngine.available
    )
    func partnerFormats(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        func production(_ store: TestStore, _ destination: String) async throws -> [String: [String: Any]] {
            try await exported(store, destination: destination).filter {
                $0.value["key_space"] as? String == "production"
            }
        }
        let mmpRows = try await production(store, "mmp")
        try await addCampaigns(store, mmpRows)
        let receiver = try await Receiver { _, _ in (200, .zero) }
        let config = try directory.write(
            "partners.json",
            """
            {"destinations": [
              {"name": "mmp", "url": "http://127.0.0.1:\(receiver.port)/mmp", "payload": "enriched",
               "fields": ["timestamp", "ip-address", "partner-campaign-id", "partner-campaign-name", "partner-ad-group", "partner-creative"],
               "hmac_secret_env": "NETWORK_SECRET"},
              {"name": "skan", "url": "http://127.0.0.1:\(receiver.port)/skan", "payload": "skan-standard"},
              {"name": "bi", "url": "http://127.0.0.1:\(receiver.port)/bi", "payload": "template",
               "template": {"event": {"id": "{{transaction_id}}", "value": "{{fine_value}}", "win": "{{did_win}}",
                 "campaign": "{{campaign}}", "label": "{{ad_network_id}}/{{country_code}}"}, "source": "postbackd"}}
            ]}
            """
        )
        let run = try await Self.forward(
            ["forward", "--db", store.argument, "--config", config, "--drain"],
            environment: environment
        )
        await receiver.stop()
        #expect(run.status == 0, "\(run.standardError)")
        let verifier = PostbackVerifier(keyRing: try TestKeys.ring)
        func object(_ bytes: [UInt8]) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        }
        func milliseconds(_ row: [String: Any]) throws -> Int64 {
            try #require((row["received_at"] as? String).flatMap(UTCInstant.init(iso8601:))).milliseconds
        }

        // enriched: Apple's members first and unchanged, the signature verifies, HMAC-signed.
        let mmp = receiver.delivered("mmp")
        #expect(!mmpRows.isEmpty && Set(mmp.keys) == Set(mmpRows.keys))
        var hadTimestamp = 0
        for (id, answers) in mmp {
            let body = try #require(answers.first?.body)
            let row = try #require(mmpRows[id])
            let raw = Array((row["raw"] as? String ?? "").utf8)
            #expect(verifier.check(body).verdict == .valid, "\(id): \(String(decoding: body, as: UTF8.self))")
            guard case .object(let sent) = try JSONValue.parse(body), case .object(let apple) = try JSONValue.parse(raw)
            else {
                Issue.record("not objects: \(id)")
                continue
            }
            #expect(Array(sent.prefix(apple.count)).map(\.key) == apple.map(\.key))
            #expect(
                JSONValue.object(Array(sent.prefix(apple.count))) == JSONValue.object(apple),
                "Apple's members of \(id)"
            )
            let added = Dictionary(uniqueKeysWithValues: sent.dropFirst(apple.count).map { ($0.key, $0.value) })
            let mapping = try #require(Self.mapping(row))
            var expected: [(key: String, value: JSONValue)] = [
                ("timestamp", .number(String(try milliseconds(row)))),
                ("partner-campaign-id", .string(mapping.campaign)),
                ("partner-campaign-name", .string(mapping.campaign)),
                ("partner-ad-group", .string(mapping.adGroup)), ("partner-creative", .string(mapping.creative)),
            ]
            // A forwarder's `timestamp` Apple's postback already carries stays, and is not repeated.
            if apple.contains(where: { $0.key == "timestamp" }) {
                expected.removeFirst()
                hadTimestamp += 1
            }
            #expect(
                JSONValue.object(Array(sent.dropFirst(apple.count))) == JSONValue.object(expected),
                "in the order of fields, no ip-address (ingest stores none): \(added)"
            )
            #expect(answers.first?.signature == "sha256=" + HMACSHA256.hex(key: Array(Self.secret.utf8), message: body))
        }

        #expect(hadTimestamp > 0, "postbacks that carry a forwarder's timestamp")

        // skan-standard: the postback in base64, byte for byte; the fields derived from it.
        let skan = receiver.delivered("skan")
        var rows = try await production(store, "skan")
        #expect(Set(skan.keys) == Set(rows.keys))
        var withEvents = 0
        for (id, answers) in skan {
            let sent = try object(try #require(answers.first?.body))
            let row = try #require(rows[id])
            let postback = try #require(Base64.decode(Array((sent["skan_postback"] as? String ?? "").utf8)))
            #expect(postback == Array((row["raw"] as? String ?? "").utf8))
            #expect(verifier.check(postback).verdict == .valid)
            #expect(
                sent["attribution_type"] as? String
                    == (row["kind"] as? String == "aak" ? "adattributionkit" : "skadnetwork")
            )
            #expect((sent["app_id"] as? Int) == row["app_id"] as? Int)
            #expect((sent["timestamp"] as? Int).map(Int64.init) == (try milliseconds(row)))
            #expect(sent["ip_address"] is NSNull)
            #expect(sent["country"] as? String == row["country_code"] as? String)
            #expect(sent["partner_campaign"] as? String == Self.mapping(row)?.campaign)
            #expect(sent["partner_creative"] as? String == Self.mapping(row)?.creative)
            let events = (row["events"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            if row["conversion"] as? String == "mapped" {
                #expect(sent["events"] as? [String] == events)
                if !events.isEmpty { withEvents += 1 }
            } else {
                #expect(sent["events"] is NSNull)
            }
        }
        #expect(withEvents > 0, "some postbacks decode to events")

        // template: a lone placeholder keeps its column's type, one inside text is text.
        let bi = receiver.delivered("bi")
        rows = try await production(store, "bi")
        #expect(Set(bi.keys) == Set(rows.keys))
        var numbers = 0
        for (id, answers) in bi {
            let sent = try object(try #require(answers.first?.body))
            let row = try #require(rows[id])
            let event = try #require(sent["event"] as? [String: Any])
            #expect(sent["source"] as? String == "postbackd")
            #expect(event["id"] as? String == row["transaction_id"] as? String)
            if let fine = row["fine_value"] as? Int {
                #expect(event["value"] as? Int == fine)
                numbers += 1
            } else {
                #expect(event["value"] is NSNull)
            }
            #expect((event["win"] as? Bool) == (row["did_win"] as? Bool))
            #expect(event["campaign"] as? String == Self.mapping(row)?.campaign)
            #expect(
                event["label"] as? String
                    == "\(row["ad_network_id"] as? String ?? "?")/\(row["country_code"] as? String ?? "")"
            )
        }
        #expect(numbers > 0, "some postbacks carry a fine value")
    }

    @Test("enriched and skan-standard bodies carry the client address serve stored, and no hashed one")
    func clientAddresses() async throws {
        let receiver = try await Receiver { _, _ in (200, .zero) }
        let config = try directory.write(
            "addresses.json",
            """
            {"destinations": [
              {"name": "mmp", "url": "http://127.0.0.1:\(receiver.port)/mmp", "payload": "enriched",
               "fields": ["ip-address", "timestamp", "partner-campaign-id"]},
              {"name": "skan", "url": "http://127.0.0.1:\(receiver.port)/skan", "payload": "skan-standard"}
            ]}
            """
        )
        let client = try HTTPClient.forTests()
        var bodies: [[UInt8]] = []
        for (index, policy) in ["keep", "hash"].enumerated() {
            let store = try await TestStore.make(.sqlite, in: directory)
            let keyFile = try directory.write("address-key", "a-secret-of-sixteen-or-more\n")
            let server = try await ServerProcess.start(
                ["--db", store.argument, "--keys", TestKeys.directory, "--forward", config, "--client-address", policy]
                    + (policy == "hash" ? ["--client-address-key-file", keyFile] : []),
                directory: directory.path,
                environment: environment
            )
            let body = try SamplePostback.signedJSON(
                .v4_0,
                transactionID: "00000000-0000-4000-8000-00000000010\(index)"
            )
            bodies.append(Array(body.utf8))
            let response = try await client.send(
                .POST,
                server.base + "/.well-known/skadnetwork/report-attribution/",
                body: Array(body.utf8)
            )
            #expect(response.status == 200)
            let deadline = Date().addingTimeInterval(10)
            while receiver.received.count < 2 * (index + 1) && Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(server.stop() == 0)
        }
        await receiver.stop()
        let received = receiver.received
        let verifier = PostbackVerifier(keyRing: try TestKeys.ring)
        for index in 0..<2 {
            let enriched = try #require(received.filter { $0.destination == "mmp" }.dropFirst(index).first?.body)
            #expect(verifier.check(enriched).verdict == .valid)
            // No mapping: the campaign is left out; the address only when it is one.
            guard case .object(let sent) = try JSONValue.parse(enriched),
                case .object(let apple) = try JSONValue.parse(bodies[index])
            else {
                Issue.record("not objects")
                continue
            }
            #expect(JSONValue.object(Array(sent.prefix(apple.count))) == JSONValue.object(apple))
            if index == 0 {
                #expect(sent.dropFirst(apple.count).map(\.key) == ["ip-address", "timestamp"])
                #expect(sent.dropFirst(apple.count).first?.value == .string("127.0.0.1"))
            } else {
                #expect(sent.dropFirst(apple.count).map(\.key) == ["timestamp"])
            }
            if case .number(let milliseconds)? = sent.last?.value, let received = Int64(milliseconds) {
                #expect(abs(received - UTCInstant.now().milliseconds) < 60_000, "received within the minute")
            } else {
                Issue.record("no timestamp: \(String(decoding: enriched, as: UTF8.self))")
            }
            let skan = try #require(received.filter { $0.destination == "skan" }.dropFirst(index).first?.body)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(skan)) as? [String: Any])
            if index == 0 {
                #expect(object["ip_address"] as? String == "127.0.0.1")
            } else {
                #expect(object["ip_address"] is NSNull)
            }
            #expect(object["partner_campaign"] is NSNull)
        }
    }
}

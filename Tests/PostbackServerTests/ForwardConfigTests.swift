import PostbackKit
import PostbackServer
import PostbackStore
import Testing

/// `postbackd forward`'s config, its retry schedule and its signatures.
@Suite("Forward configuration")
struct ForwardConfigTests {
    private func parse(_ text: String) throws(ForwardConfig.Problem) -> ForwardConfig {
        try ForwardConfig.parse(Array(text.utf8))
    }

    @Test("defaults: production postbacks only, 10 s, 8 at once, retry 1 s to 1 h, give up after 72 h")
    func defaults() throws {
        let config = try parse(
            #"{"destinations": [{"name": "network", "url": "http://127.0.0.1:9/in", "payload": "raw"}]}"#
        )
        let destination = try #require(config.destinations.first)
        #expect(destination.payload == .raw)
        #expect(destination.filter.keySpaces == ["production"])
        #expect(destination.timeoutSeconds == 10 && destination.concurrency == 8)
        #expect(
            destination.retry.baseSeconds == 1 && destination.retry.maxSeconds == 3600
                && destination.retry.giveUpHours == 72
        )
        #expect(destination.filter.admits(appID: 1, adNetworkID: "a", kind: "skan", keySpace: "production"))
        #expect(!destination.filter.admits(appID: 1, adNetworkID: "a", kind: "skan", keySpace: "test"))
    }

    @Test("every field read; a filter narrows by app, network, kind and key space")
    func everything() throws {
        let config = try parse(
            #"""
            {"destinations": [{"name": "bi", "url": "https://bi.example.com/postbacks", "payload": "decoded",
              "filter": {"app_ids": [525463029, "1254734734"], "ad_network_ids": ["example123.skadnetwork"], "kinds": ["skan"],
                         "key_spaces": ["production", "test"]},
              "headers": {"Authorization": "Bearer abc"}, "hmac_secret_env": "BI_SECRET", "timeout_seconds": 2.5,
              "concurrency": 32, "retry": {"base_seconds": 0.5, "max_seconds": 60, "give_up_hours": 1}}]}
            """#
        )
        let destination = try #require(config.destinations.first)
        #expect(destination.filter.appIDs == [525_463_029, 1_254_734_734])
        #expect(destination.headers.map(\.name) == ["Authorization"])
        #expect(destination.hmacSecretEnvironment == "BI_SECRET")
        #expect(destination.timeoutSeconds == 2.5 && destination.concurrency == 32)
        #expect(
            destination.filter.admits(
                appID: 525_463_029,
                adNetworkID: "example123.skadnetwork",
                kind: "skan",
                keySpace: "test"
            )
        )
        #expect(
            !destination.filter.admits(
                appID: 7,
                adNetworkID: "example123.skadnetwork",
                kind: "skan",
                keySpace: "production"
            )
        )
        #expect(
            !destination.filter.admits(appID: 525_463_029, adNetworkID: "other", kind: "skan", keySpace: "production")
        )
        #expect(
            !destination.filter.admits(
                appID: 525_463_029,
                adNetworkID: "example123.skadnetwork",
                kind: "aak",
                keySpace: "production"
            )
        )
    }

    @Test(
        "a bad config names the JSON path",
        arguments: [
            (#"{}"#, "$.destinations"),
            (#"{"destinations": [{"url": "http://x", "payload": "raw"}]}"#, "$.destinations[0].name"),
            (#"{"destinations": [{"name": "a", "url": "ftp://x", "payload": "raw"}]}"#, "$.destinations[0].url"),
            (#"{"destinations": [{"name": "a", "url": "http://x", "payload": "both"}]}"#, "$.destinations[0].payload"),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "filter": {"kinds": ["x"]}}]}"#,
                "$.destinations[0].filter.kinds[0]"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "headers": {"Host": "y"}}]}"#,
                "$.destinations[0].headers.Host"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "hmac_secret_env": "s3cr3t value"}]}"#,
                "$.destinations[0].hmac_secret_env"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "concurrency": 0}]}"#,
                "$.destinations[0].concurrency"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "retry": {"base_seconds": 10, "max_seconds": 1}}]}"#,
                "$.destinations[0].retry.max_seconds"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw"}, {"name": "a", "url": "http://y", "payload": "raw"}]}"#,
                "$.destinations[1].name"
            ),
        ]
    )
    func problems(_ text: String, _ path: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.path == path, "\(error)")
        }
    }

    @Test(
        "partner formats: a bad field name, a placeholder, a template that is not an object or too deep names its path and what is wrong",
        arguments: [
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "enriched"}]}"#,
                "$.destinations[0].fields", "missing"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "enriched", "fields": ["ip-address", "ip"]}]}"#,
                "$.destinations[0].fields[1]",
                "\"ip\" is not a field postbackd adds; the fields are ip-address, timestamp, partner-campaign-id, partner-campaign-name, partner-ad-group, partner-creative"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "enriched", "fields": ["timestamp", "timestamp"]}]}"#,
                "$.destinations[0].fields[1]", "timestamp is named twice"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "enriched", "fields": []}]}"#,
                "$.destinations[0].fields", "non-empty array"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw", "fields": ["timestamp"]}]}"#,
                "$.destinations[0].fields", "only with \"payload\": \"enriched\""
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template"}]}"#,
                "$.destinations[0].template", "missing"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template", "template": ["{{id}}"]}]}"#,
                "$.destinations[0].template", "expected a JSON object (the body to send), found an array"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "decoded", "template": {}}]}"#,
                "$.destinations[0].template", "only with \"payload\": \"template\""
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "raw"}, {"name": "b", "url": "http://x", "payload": "template", "template": {"event": {"id": "{{transaction_id}}", "value": "{{fine_valu}}"}}}]}"#,
                "$.destinations[1].template.event.value", "unknown placeholder {{fine_valu}}; the columns are id, kind,"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template", "template": {"list": [1, {"odd key": "x {{ nope }} y"}]}}]}"#,
                #"$.destinations[0].template.list[1]["odd key"]"#, "unknown placeholder {{nope}}"
            ),
            (
                #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template", "template": {"a": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}}]}"#,
                "$.destinations[0].template.a[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]", "nested deeper than 16"
            ),
        ]
    )
    func partnerProblems(_ text: String, _ path: String, _ message: String) {
        checkProblem(text, path, message)
    }

    @Test("a template holds at most 256 placeholders and 64 KiB")
    func placeholderBound() throws {
        func config(_ count: Int) -> String {
            let list = Array(repeating: #""{{fine_value}}""#, count: count).joined(separator: ",")
            return #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template", "template": {"v": ["#
                + list + "]}}]}"
        }
        _ = try parse(config(256))
        checkProblem(config(257), "$.destinations[0].template.v[256]", "more than 256 placeholders")
        let large =
            #"{"destinations": [{"name": "a", "url": "http://x", "payload": "template", "template": {"v": ""#
            + String(repeating: "x", count: 65_530) + #""}}]}"#
        checkProblem(large, "$.destinations[0].template", "65538 bytes as compact JSON; at most 65536")
    }

    private func checkProblem(_ text: String, _ path: String, _ message: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.path == path, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }

    @Test("partner formats read: enriched fields in order, a template of any depth up to the bound")
    func partnerFormats() throws {
        let config = try parse(
            #"""
            {"destinations": [
              {"name": "mmp", "url": "http://x", "payload": "enriched", "fields": ["timestamp", "ip-address", "partner-creative"]},
              {"name": "skan", "url": "http://x", "payload": "skan-standard"},
              {"name": "bi", "url": "http://x", "payload": "template",
               "template": {"a": [[[[[[[[[[[[[[1]]]]]]]]]]]]]], "id": "{{ transaction_id }}", "c": "{{campaign}}/{{creative}}"}}]}
            """#
        )
        #expect(config.destinations.map(\.payload) == [.enriched, .skanStandard, .template])
        #expect(config.destinations[0].fields == [.timestamp, .ipAddress, .partnerCreative])
        #expect(config.destinations[2].template != nil && config.destinations[1].template == nil)
    }

    @Test(
        "a template fills a lone placeholder with the column's JSON type and interpolates one inside text (null as nothing)"
    )
    func templateRendering() throws {
        let template = try ForwardTemplate(
            try JSONValue.parse(
                Array(
                    #"""
                    {"event": {"value": "{{fine_value}}", "win": "{{did_win}}", "country": "{{country_code}}",
                     "label": "tx-{{transaction_id}}/{{country_code}}/{{fine_value}}/{{did_win}}", "big": 123456789012345678901234567890,
                     "literal": "{{ not closed", "list": ["{{app_id}}", 1.50, null, true]}}
                    """#.utf8
                )
            ),
            path: "$"
        )
        let values: [String: ExportValue] = [
            "fine_value": .integer(42), "did_win": .bool(true), "country_code": .null,
            "transaction_id": .text("a\"b"), "app_id": .integer(525_463_029),
        ]
        let body = String(decoding: template.render { values[$0] ?? .null }, as: UTF8.self)
        #expect(
            body
                == #"{"event":{"value":42,"win":true,"country":null,"label":"tx-a\"b//42/true","big":123456789012345678901234567890,"literal":"{{ not closed","list":[525463029,1.50,null,true]}}"#
        )
    }

    @Test(
        "enriching adds members after Apple's last, keeps every other byte, never repeats or replaces a member Apple's postback has"
    )
    func splicing() throws {
        let pretty = Array("{\n  \"app-id\" : 525463029,\n  \"timestamp\" : \"Apple's\"\n}\n".utf8)
        let added = try #require(
            ForwardBody.spliced(
                pretty,
                [("timestamp", "1"), ("ip-address", #""17.0.0.1""#), ("partner-ad-group", #""a\"g""#)]
            )
        )
        #expect(
            String(decoding: added, as: UTF8.self)
                == "{\n  \"app-id\" : 525463029,\n  \"timestamp\" : \"Apple's\",\"ip-address\":\"17.0.0.1\",\"partner-ad-group\":\"a\\\"g\"\n}\n"
        )
        #expect(ForwardBody.spliced(Array("{}".utf8), [("timestamp", "1")]) == Array(#"{"timestamp":1}"#.utf8))
        #expect(ForwardBody.spliced(pretty, [("timestamp", "1")]) == pretty)
        #expect(ForwardBody.spliced(Array("[1]".utf8), [("timestamp", "1")]) == nil)
    }

    @Test("retry waits grow exponentially to the cap, with jitter between half and all of it")
    func retrySchedule() {
        let retry = ForwardConfig.Destination.Retry(baseSeconds: 1, maxSeconds: 60, giveUpHours: 72)
        #expect(retry.delaySeconds(afterFailures: 1, unit: 0) == 0.5)
        #expect(retry.delaySeconds(afterFailures: 1, unit: 0.999_999) < 1)
        #expect(retry.delaySeconds(afterFailures: 4, unit: 0) == 4)
        #expect(retry.delaySeconds(afterFailures: 30, unit: 0) == 30)
        #expect(retry.delaySeconds(afterFailures: 1000, unit: 0.999_999) < 60)
    }

    @Test("HMAC-SHA256 as RFC 4231 test case 2 gives it")
    func hmac() {
        #expect(
            HMACSHA256.hex(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        )
    }

    @Test("a delivery id is the same for one postback and destination, different otherwise")
    func deliveryIDs() {
        let key: [UInt8] = [1, 2, 3]
        let id = ForwardConfig.Destination.deliveryID(dedupKey: key, destination: "bi")
        #expect(id.count == 32)
        #expect(id == ForwardConfig.Destination.deliveryID(dedupKey: key, destination: "bi"))
        #expect(id != ForwardConfig.Destination.deliveryID(dedupKey: key, destination: "network"))
        #expect(id != ForwardConfig.Destination.deliveryID(dedupKey: [1, 2, 4], destination: "bi"))
    }

    @Test(
        "answers: 2xx delivered; 408, 429, 5xx and no answer retried (not before Retry-After, capped) until give_up_hours, then failed; other statuses rejected"
    )
    func outcomes() {
        let retry = ForwardConfig.Destination.Retry(baseSeconds: 1, maxSeconds: 60, giveUpHours: 1)
        func outcome(
            _ answer: DeliveryAnswer,
            attempts: Int = 1,
            firstMs: Int64 = 1_000_000,
            nowMs: Int64 = 1_000_000
        )
            -> DeliveryOutcome
        {
            var outcome = DeliveryOutcome(
                destination: "d",
                postbackID: 1,
                state: .pending,
                attempts: attempts,
                firstAttemptMs: firstMs,
                lastAttemptMs: nowMs,
                nextAttemptMs: nowMs,
                status: nil,
                answer: nil
            )
            outcome.apply(answer, retry: retry, nowMs: nowMs, unit: 0)
            return outcome
        }
        for code in [200, 202, 204] { #expect(outcome(.status(code, "", retryAfter: nil)).state == .delivered) }
        for code in [301, 400, 401, 404, 410, 422] {
            let rejected = outcome(.status(code, "gone", retryAfter: nil))
            #expect(rejected.state == .rejected && rejected.status == code && rejected.answer == "gone")
        }
        for code in [408, 429, 500, 502, 503] {
            let retried = outcome(.status(code, "", retryAfter: nil), attempts: 3)
            #expect(retried.state == .pending && retried.nextAttemptMs == 1_000_000 + 2_000, "\(code)")
        }
        let timedOut = outcome(.failure("postbackd: no answer within 10 s"))
        #expect(
            timedOut.state == .pending && timedOut.status == nil
                && timedOut.answer == "postbackd: no answer within 10 s"
        )
        // Retry-After delays further, up to max_seconds.
        #expect(outcome(.status(503, "", retryAfter: 30)).nextAttemptMs == 1_000_000 + 30_000)
        #expect(outcome(.status(429, "", retryAfter: 7_200)).nextAttemptMs == 1_000_000 + 60_000)
        // give_up_hours after the first attempt, a failure is final.
        let late = outcome(.status(500, "", retryAfter: nil), attempts: 20, firstMs: 0, nowMs: 3_600_000)
        #expect(late.state == .failed && late.status == 500)
        #expect(
            outcome(.status(200, "", retryAfter: nil), attempts: 20, firstMs: 0, nowMs: 3_600_000).state == .delivered
        )
    }
}

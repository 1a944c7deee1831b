import AsyncHTTPClient
import Foundation
import NIOHTTP1
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd serve`: the built binary on a loopback port, a real HTTP client, both engines.
@Suite("postbackd serve", .serialized, .timeLimit(.minutes(20)))
struct ServeTests {
    let directory: TemporaryDirectory
    static let skan = "/.well-known/skadnetwork/report-attribution"
    static let aak = "/.well-known/appattribution/report-attribution"
    /// Apple's keys and the test keys, as the vectors and generated postbacks need.
    static let keyArguments = ["--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory]

    init() throws {
        directory = try TemporaryDirectory("serve")
    }

    func start(_ store: TestStore, _ arguments: [String] = []) async throws -> ServerProcess {
        try await ServerProcess.start(
            ["--db", store.argument] + Self.keyArguments + arguments,
            directory: directory.path
        )
    }

    /// A new store of `engine` and a server on it (``start(_:_:)``).
    func start(
        _ engine: TestEngine,
        _ arguments: [String] = []
    ) async throws -> (store: TestStore, server: ServerProcess) {
        let store = try await TestStore.make(engine, in: directory)
        return await (store, try start(store, arguments))
    }

    static func signed(
        _ transactionID: String,
        _ version: SKANVersion = .v4_0,
        fine: Int = 20
    ) throws -> [UInt8] {
        Array(
            try SamplePostback.signedJSON(version, transactionID: transactionID, conversionValue: .fine(fine)).utf8
        )
    }

    /// `genuine` with the signature of `donor`: well-formed, claims genuine's key, does not verify.
    static func forged(_ genuine: [UInt8], signatureOf donor: [UInt8]) throws -> [UInt8] {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(genuine)) as? [String: Any])
        let other = try #require(try JSONSerialization.jsonObject(with: Data(donor)) as? [String: Any])
        object["attribution-signature"] = other["attribution-signature"]
        return Array(try JSONSerialization.data(withJSONObject: object))
    }

    // MARK: Status codes

    @Test("every status code and route", arguments: TestEngine.available)
    func statusCodes(engine: TestEngine) async throws {
        let (store, server) = try await start(engine, ["--max-body", "2048"])
        let client = try HTTPClient.forTests()
        let genuine = try Self.signed("11111111-0000-4000-8000-000000000001")

        let stored = try await client.send(.POST, server.base + Self.skan + "/", body: genuine)
        #expect(stored.status == 200)
        #expect(stored.jsonStatus == "stored")
        #expect(stored.verdict == "valid")
        #expect(stored.header("X-Request-Id")?.count == 32)
        let again = try await client.send(.POST, server.base + Self.skan, body: genuine)
        #expect(again.status == 200 && again.jsonStatus == "duplicate", "\(again.body)")

        let forged = try Self.forged(genuine, signatureOf: try Self.signed("11111111-0000-4000-8000-000000000002"))
        let invalid = try await client.send(.POST, server.base + Self.skan, body: forged)
        #expect(invalid.status == 200 && invalid.jsonStatus == "quarantined" && invalid.verdict == "invalid")
        #expect(invalid.json["field"] as? String == "attribution-signature")

        let malformed = try await client.send(
            .POST,
            server.base + Self.aak + "/",
            body: Array(#"{"version":"4.0","ad-network-id":"example123.skadnetwork"}"#.utf8),
            headers: [("X-Request-Id", "device-retry-7")]
        )
        #expect(malformed.status == 400)
        #expect(malformed.verdict == "malformed")
        // Neither kind's signature, on the AdAttributionKit path: told what that path takes.
        #expect(malformed.json["field"] as? String == "jws-string", "\(malformed.body)")
        let reason = malformed.json["reason"] as? String ?? ""
        #expect(reason.hasPrefix("jws-string: missing, but the AdAttributionKit path requires it"), "\(reason)")
        #expect(!reason.contains("1.0"), "\(reason)")
        #expect(malformed.header("X-Request-Id") == "device-retry-7")
        let notJSON = try await client.send(.POST, server.base + Self.skan, body: Array("hello".utf8))
        #expect(notJSON.status == 400 && (notJSON.json["reason"] as? String)?.contains("not valid JSON") == true)

        // An AdAttributionKit body on the SKAdNetwork path is handled as AdAttributionKit.
        let aakBody = try Repository.bytes(Repository.path("SamplePostbacks/apple/apple-aak-dev1-reengagement.json"))
        let aak = try await client.send(.POST, server.base + Self.skan, body: aakBody)
        #expect(aak.status == 200 && aak.jsonStatus == "stored" && aak.json["kind"] as? String == "aak")

        // Over --max-body: refused from its declared length, or once a chunked body passes it,
        // and the connection closed rather than the rest read.
        let port = server.port
        let declared = try Self.exchange(
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{\"version\"",
            port: port
        )
        #expect(declared.hasPrefix("HTTP/1.1 413 "), "\(declared)")
        #expect(declared.contains(#""status":"too_large""#))
        let chunk = String(repeating: " ", count: 4096)
        let chunked = try Self.exchange(
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n\(chunk)\r\n",
            port: port
        )
        #expect(chunked.hasPrefix("HTTP/1.1 413 "), "\(chunked)")
        #expect(try await client.send(.GET, server.base + "/nowhere").status == 404)
        let wrongMethod = try await client.send(.GET, server.base + Self.skan)
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "POST")
        #expect(try await client.send(.POST, server.base + "/healthz").status == 405)
        #expect(try await client.send(.GET, server.base + "/healthz").status == 200)
        let ready = try await client.send(.GET, server.base + "/readyz/")
        #expect(ready.status == 200 && ready.jsonStatus == "ready")

        let metrics = try await client.send(.GET, server.base + "/metrics").body
        for line in [
            #"postbackd_http_requests_total{route="\#(Self.skan)",status="200"} 4"#,
            #"postbackd_http_requests_total{route="\#(Self.skan)",status="413"} 2"#,
            #"postbackd_postbacks_total{verdict="valid"} 3"#,
            #"postbackd_postbacks_total{verdict="malformed"} 2"#,
            "postbackd_stored_total 2", "postbackd_duplicates_total 1", "postbackd_quarantined_total 3",
        ] {
            #expect(metrics.contains(line + "\n"), "\(line) not in\n\(metrics)")
        }
        #expect(metrics.contains("postbackd_commit_duration_seconds_count 6\n"), "\(metrics)")
        #expect(metrics.contains("\npostbackd_open_connections "))
        #expect(server.stop() == 0)
        #expect(server.standardOutput.contains("stopped: 6 received, 2 stored, 1 duplicates, 3 quarantined"))

        // What is stored for an HTTP postback.
        let rows = try await store.strings(
            "SELECT source || ' ' || received_at_source || ' ' || client_address || ' ' || length(request_id) FROM postbacks ORDER BY id"
        )
        #expect(rows == ["http http 127.0.0.1 32", "http http 127.0.0.1 32"])
        let quarantine = try await store.strings(
            "SELECT verdict || ' ' || source || ' ' || request_id FROM quarantine WHERE verdict = 'malformed' AND raw_size > 10"
        )
        #expect(quarantine == ["malformed http device-retry-7"])
    }

    @Test("pipelined requests are answered in order, the hot routes' and the router's alike")
    func pipelined() async throws {
        let (store, server) = try await start(.sqlite)
        let port = server.port
        let first = String(decoding: try Self.signed("11111111-0000-4000-8000-0000000000a1"), as: UTF8.self)
        let second = String(decoding: try Self.signed("11111111-0000-4000-8000-0000000000a2"), as: UTF8.self)
        func post(_ body: String, close: Bool = false) -> String {
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n"
                + (close ? "Connection: close\r\n" : "") + "\r\n" + body
        }
        let get = { (path: String) in "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" }
        // All in one write: a postback, a routed GET, the same postback, a 404, a HEAD of a hot
        // route that takes GET (400: no query), another postback that closes.
        let received = try Self.exchange(
            post(first) + get("/healthz") + post(first) + get("/nowhere")
                + "HEAD /api/v2/conversion_value HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + post(second, close: true),
            port: port
        )
        let answers = received.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0) }
        let statuses = answers.map { $0.prefix(3) }
        #expect(statuses == ["200", "200", "200", "404", "400", "200"], "\(received)")
        let bodies = answers.map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
        if bodies.count == 6 {
            #expect(bodies[0].contains(#""status":"stored""#))
            #expect(bodies[1].contains(#""status":"up""#))
            #expect(bodies[2].contains(#""status":"duplicate""#))
            #expect(bodies[3].contains(#""status":"not_found""#))
            #expect(bodies[4].isEmpty, "a HEAD's answer has no body: \(bodies[4])")
            #expect(bodies[5].contains(#""status":"stored""#))
        }
        // The hot path's answers carry what Hummingbird's do.
        for answer in answers {
            #expect(answer.contains("\r\nDate: ") || answer.contains("\r\ndate: "), "\(answer)")
            #expect(answer.lowercased().contains("\r\ncontent-length: "), "\(answer)")
        }
        #expect(server.stop() == 0)
        #expect(try await store.strings("SELECT count(*) FROM postbacks") == ["2"])
    }

    @Test("thousands of pipelined requests behind a postback are all answered, and a GET's body is not read")
    func longPipeline() async throws {
        let server = try await start(.sqlite).server
        let port = server.port
        let postback = String(decoding: try Self.signed("11111111-0000-4000-8000-0000000000b1"), as: UTF8.self)
        var text =
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(postback.utf8.count)\r\n\r\n" + postback
        // Answered at once, each: while the postback waits for its commit they queue behind it.
        let state = "POST /v1/conversion-value HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"
        text += String(repeating: state, count: 3_000)
        // A GET of the snippet's route with a body: the body is skipped, the query answered.
        text += "GET /api/v2/conversion_value HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello"
        text += "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let received = try Self.exchange(text, port: port)
        let statuses = received.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses.count == 3_003, "\(statuses.count) answers")
        #expect(statuses.first == "200")
        #expect(statuses.dropFirst().prefix(3_000).allSatisfy { $0 == "400" })
        #expect(Array(statuses.suffix(2)) == ["400", "200"], "\(statuses.suffix(2))")
        #expect(received.contains(#""reason":"i: missing""#), "the snippet's GET was answered from its query")
        #expect(server.stop() == 0)
    }

    // MARK: Same verdicts as verify

    @Test("the vectors give verify's verdicts")
    func vectorsAsVerify() async throws {
        let folder = Repository.sharedVectors ?? Repository.vectors
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
            .sorted()
        #expect(files.count >= 9)
        let server = try await start(.sqlite).server
        let client = try HTTPClient.forTests()
        for file in files {
            let path = folder + "/" + file
            let verify = try await Postbackd.run(["verify", "--format", "json"] + Self.keyArguments + [path])
            let expected = try #require(
                try JSONSerialization.jsonObject(with: Data(verify.standardOutput.utf8)) as? [String: Any]
            )
            let answer = try await client.send(.POST, server.base + Self.skan, body: try Repository.bytes(path))
            #expect(answer.verdict == expected["verdict"] as? String, "\(file): \(answer.body)")
            #expect(answer.json["field"] as? String == expected["field"] as? String, "\(file)")
            #expect(answer.status == (expected["verdict"] as? String == "malformed" ? 400 : 200), "\(file)")
        }
        #expect(server.stop() == 0)
    }

    // MARK: Dedup and forgeries

    @Test("a forged copy, before or after the genuine one, never blocks it", arguments: TestEngine.available)
    func forgeriesNeverBlock(engine: TestEngine) async throws {
        let (store, server) = try await start(engine)
        let client = try HTTPClient.forTests()
        let donor = try Self.signed("22222222-0000-4000-8000-0000000000ff")
        let first = try Self.signed("22222222-0000-4000-8000-000000000001")
        let second = try Self.signed("22222222-0000-4000-8000-000000000002")

        // Forged before the genuine one.
        let early = try await client.send(
            .POST,
            server.base + Self.skan,
            body: try Self.forged(first, signatureOf: donor)
        )
        #expect(early.jsonStatus == "quarantined" && early.verdict == "invalid")
        #expect(try await client.send(.POST, server.base + Self.skan, body: first).jsonStatus == "stored")
        // Forged after it.
        #expect(try await client.send(.POST, server.base + Self.skan, body: second).jsonStatus == "stored")
        let late = try await client.send(
            .POST,
            server.base + Self.skan,
            body: try Self.forged(second, signatureOf: donor)
        )
        #expect(late.jsonStatus == "quarantined")
        // A genuine copy with other unsigned values is a duplicate and a conflict, not a new postback.
        var changed = try #require(try JSONSerialization.jsonObject(with: Data(second)) as? [String: Any])
        changed["country-code"] = "FR"
        let copy = try await client.send(
            .POST,
            server.base + Self.skan,
            body: Array(try JSONSerialization.data(withJSONObject: changed))
        )
        #expect(copy.jsonStatus == "duplicate" && copy.json["conflict"] as? Bool == true, "\(copy.body)")
        #expect(copy.json["signed_differs"] == nil)
        // A genuine signature over other signed content under the same key: a conflict, flagged.
        var other = SamplePostback.make(.v4_0, transactionID: "22222222-0000-4000-8000-000000000002")
        other.sourceIdentifier = "5240"
        let otherContent = try await client.send(
            .POST,
            server.base + Self.skan,
            body: Array(try TestKeys.signer.signed(other).jsonText().utf8)
        )
        #expect(otherContent.status == 200)
        #expect(otherContent.jsonStatus == "duplicate" && otherContent.verdict == "valid", "\(otherContent.body)")
        #expect(otherContent.json["conflict"] as? Bool == true, "\(otherContent.body)")
        #expect(otherContent.json["signed_differs"] as? Bool == true, "\(otherContent.body)")
        let metrics = try await client.send(.GET, server.base + "/metrics").body
        for line in [
            "postbackd_duplicates_total 2", "postbackd_conflicts_total 2", "postbackd_signed_conflicts_total 1",
        ] {
            #expect(metrics.contains(line + "\n"), "\(line) not in\n\(metrics)")
        }
        #expect(server.stop() == 0)

        #expect(
            try await store.strings("SELECT transaction_id FROM postbacks ORDER BY transaction_id") == [
                "22222222-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002",
            ]
        )
        #expect(
            try await store.strings(
                "SELECT CASE WHEN signed_differs THEN 'signed' ELSE 'unsigned' END FROM conflicts ORDER BY sighting_id"
            ) == ["unsigned", "signed"]
        )
        #expect(
            try await store.strings("SELECT signed_conflicts || ' ' || conflicts FROM ingest_runs") == ["1 2"],
            "the server's run counts them"
        )
        #expect(try await store.strings("SELECT count(*) FROM quarantine WHERE verdict = 'invalid'") == ["2"])
    }

    @Test("postbacks posted over HTTP and ingested from a file end in the same rows", arguments: TestEngine.available)
    func httpEqualsIngest(engine: TestEngine) async throws {
        let corpus = try await Postbackd.generated(count: 400, seed: 11, duplicates: 0.1, invalid: 0.05)
        let lines = corpus.split(separator: "\n").map { Array($0.utf8) }
        let file = try directory.write("corpus.jsonl", corpus)
        let viaFile = try await TestStore.make(engine, in: directory, name: "file")
        let ingest = try await Postbackd.run(
            ["ingest", "--format", "json", "--db", viaFile.argument] + Self.keyArguments + [file]
        )
        #expect(ingest.status == 0, "\(ingest.standardError)")

        let viaHTTP = try await TestStore.make(engine, in: directory, name: "http")
        let server = try await start(viaHTTP)
        let client = try HTTPClient.forTests()
        // In file order, so that the first copy of each key is the same one.
        for line in lines {
            let answer = try await client.send(.POST, server.base + Self.skan, body: line)
            #expect(answer.status == 200 || answer.status == 400, "\(answer.body)")
        }
        #expect(server.stop() == 0)

        let postbacks = """
            SELECT kind || '|' || key_space || '|' || ad_network_id || '|' || transaction_id || '|' ||
                postback_sequence_index || '|' || COALESCE(version, '-') || '|' || app_id || '|' ||
                COALESCE(fine_value::text, '-') || '|' || COALESCE(coarse_value, '-') || '|' ||
                COALESCE(country_code, '-') || '|' || CASE WHEN test_mode THEN 1 ELSE 0 END || '|' || key_name
            FROM postbacks ORDER BY 1
            """
        let sqlitePostbacks = postbacks.replacingOccurrences(of: "::text", with: "")
        let query = engine == .sqlite ? sqlitePostbacks : postbacks
        let fromFile = try await viaFile.strings(query)
        #expect(fromFile.count > 300)
        #expect(try await viaHTTP.strings(query) == fromFile)
        let raw = "SELECT raw FROM postbacks ORDER BY dedup_key"
        #expect(try await viaHTTP.strings(raw) == (try await viaFile.strings(raw)))
        // The same counts. (Sightings differ by design: a file's copies are sightings at their own
        // lines, while an HTTP copy with the stored postback's very bytes adds no row.)
        let fileSummary = try #require(
            try JSONSerialization.jsonObject(with: Data(ingest.standardOutput.utf8)) as? [String: Any]
        )
        let counts = [
            fileSummary["read"], fileSummary["accepted"], fileSummary["duplicates"], fileSummary["quarantined"],
        ]
        .map { "\($0 ?? "-")" }
        #expect(
            server.standardOutput.contains(
                "stopped: \(counts[0]) received, \(counts[1]) stored, \(counts[2]) duplicates, \(counts[3]) quarantined"
            ),
            "\(server.standardOutput) vs \(counts)"
        )
        let conflicts = "SELECT count(*) FROM conflicts"
        #expect(try await viaHTTP.strings(conflicts) == (try await viaFile.strings(conflicts)))
        // A repeated junk body is one quarantine row with a count; from a file, one row per line.
        let quarantined = try await viaFile.strings(
            "SELECT verdict || ' ' || count(*) FROM quarantine GROUP BY verdict ORDER BY verdict"
        )
        #expect(!quarantined.isEmpty)
        #expect(
            try await viaHTTP.strings(
                "SELECT verdict || ' ' || sum(received_count) FROM quarantine GROUP BY verdict ORDER BY verdict"
            ) == quarantined
        )
    }
}

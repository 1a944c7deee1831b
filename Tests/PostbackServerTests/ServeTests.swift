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
@Suite("postbackd serve", .serialized, .timeLimit(.minutes(5)))
struct ServeTests {
    let directory: TemporaryDirectory
    static let skan = "/.well-known/skadnetwork/report-attribution"
    static let aak = "/.well-known/appattribution/report-attribution"
    /// Apple's keys and the test keys, as the vectors and generated postbacks need.
    static let keyArguments = ["--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory]

    init() throws {
        directory = try TemporaryDirectory("serve")
    }

    private func start(_ store: TestStore, _ arguments: [String] = []) throws -> ServerProcess {
        try ServerProcess.start(["--db", store.argument] + Self.keyArguments + arguments, directory: directory.path)
    }

    private static func signed(
        _ transactionID: String,
        _ version: SKANVersion = .v4_0,
        fine: Int = 20
    ) throws -> [UInt8] {
        Array(
            try SamplePostback.signedJSON(version, transactionID: transactionID, conversionValue: .fine(fine)).utf8
        )
    }

    /// `genuine` with the signature of `donor`: well-formed, claims genuine's key, does not verify.
    private static func forged(_ genuine: [UInt8], signatureOf donor: [UInt8]) throws -> [UInt8] {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(genuine)) as? [String: Any])
        let other = try #require(try JSONSerialization.jsonObject(with: Data(donor)) as? [String: Any])
        object["attribution-signature"] = other["attribution-signature"]
        return Array(try JSONSerialization.data(withJSONObject: object))
    }

    // MARK: Status codes

    @Test("every status code and route", arguments: TestEngine.available)
    func statusCodes(engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let server = try start(store, ["--max-body", "2048"])
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
        let port = try #require(UInt16(server.base.split(separator: ":").last ?? ""))
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
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store)
        let port = try #require(UInt16(server.base.split(separator: ":").last ?? ""))
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
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store)
        let port = try #require(UInt16(server.base.split(separator: ":").last ?? ""))
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
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store)
        let client = try HTTPClient.forTests()
        for file in files {
            let path = folder + "/" + file
            let verify = try Postbackd.run(["verify", "--format", "json"] + Self.keyArguments + [path])
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
        let store = try await TestStore.make(engine, in: directory)
        let server = try start(store)
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
        let corpus = try Postbackd.generated(count: 400, seed: 11, duplicates: 0.1, invalid: 0.05)
        let lines = corpus.split(separator: "\n").map { Array($0.utf8) }
        let file = try directory.write("corpus.jsonl", corpus)
        let viaFile = try await TestStore.make(engine, in: directory, name: "file")
        let ingest = try Postbackd.run(
            ["ingest", "--format", "json", "--db", viaFile.argument] + Self.keyArguments + [file]
        )
        #expect(ingest.status == 0, "\(ingest.standardError)")

        let viaHTTP = try await TestStore.make(engine, in: directory, name: "http")
        let server = try start(viaHTTP)
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

    // MARK: Durability

    /// Posts `bodies` from `connections` concurrent clients until they run out or the server
    /// stops answering; returns each answered body with its answer.
    private static func load(
        _ bodies: [[UInt8]],
        to base: String,
        connections: Int,
        client: HTTPClient,
        onAnswer: @escaping @Sendable (Int) -> Void = { _ in }
    ) async -> [(body: [UInt8], answer: Answer)] {
        let next = Tally()
        let answered = Tally()
        return await withTaskGroup(of: [(body: [UInt8], answer: Answer)].self) { group in
            for _ in 0..<connections {
                group.addTask {
                    var mine: [(body: [UInt8], answer: Answer)] = []
                    while true {
                        let index = next.value.add(1, ordering: .relaxed).oldValue
                        guard index < bodies.count else { break }
                        guard let answer = try? await client.send(.POST, base + skan, body: bodies[index]) else {
                            break
                        }
                        mine.append((bodies[index], answer))
                        onAnswer(answered.value.add(1, ordering: .relaxed).newValue)
                    }
                    return mine
                }
            }
            var all: [(body: [UInt8], answer: Answer)] = []
            for await part in group { all += part }
            return all
        }
    }

    /// Starts a server on a new store, loads it with `corpus` from 16 clients, sends it `signal`
    /// once `after` requests were answered, and waits for it to end.
    private func signalUnderLoad(
        _ engine: TestEngine,
        _ signal: Int32,
        after: Int,
        corpus: String
    ) async throws -> (
        store: TestStore, server: ServerProcess, bodies: [[UInt8]], answers: [(body: [UInt8], answer: Answer)]
    ) {
        let bodies = corpus.split(separator: "\n").map { Array($0.utf8) }
        let store = try await TestStore.make(engine, in: directory)
        let server = try start(store)
        let pid = server.process.processIdentifier
        let sent = Flag()
        let answers = await Self.load(bodies, to: server.base, connections: 16, client: try HTTPClient.forTests()) {
            count in
            if count >= after, !sent.value.exchange(true, ordering: .relaxed) { kill(pid, signal) }
        }
        server.process.waitUntilExit()
        return (store, server, bodies, answers)
    }

    @Test("kill -9 under load: every postback answered 200 is in the database", arguments: TestEngine.available)
    func killUnderLoad(engine: TestEngine) async throws {
        let (store, server, bodies, answers) = try await signalUnderLoad(
            engine,
            SIGKILL,
            after: 600,
            corpus: try Postbackd.generated(count: 3000, seed: 21, duplicates: 0, invalid: 0.02)
        )
        let client = try HTTPClient.forTests()
        #expect(server.process.terminationReason == .uncaughtSignal)
        let ok = answers.filter { $0.answer.status == 200 }
        #expect(ok.count >= 600 && ok.count < bodies.count, "the kill landed mid-run: \(ok.count) of \(bodies.count)")

        // Restarted, the server knows every postback it answered "stored" for.
        let restarted = try start(store)
        for (body, answer) in ok where answer.jsonStatus == "stored" {
            let again = try await client.send(.POST, restarted.base + Self.skan, body: body)
            #expect(again.jsonStatus == "duplicate", "answered stored before the kill, now \(again.body)")
        }
        let storedBefore = ok.filter { $0.answer.jsonStatus == "stored" }.count
        let quarantinedBefore = ok.filter { $0.answer.jsonStatus == "quarantined" }.count
        #expect(restarted.stop() == 0)
        let stored = Int(try #require(try await store.strings("SELECT count(*) FROM postbacks").first ?? nil)) ?? -1
        #expect(stored >= storedBefore)
        let quarantined =
            Int(try #require(try await store.strings("SELECT count(*) FROM quarantine").first ?? nil)) ?? -1
        #expect(quarantined >= quarantinedBefore)
    }

    @Test("SIGTERM under load: what was answered is stored, and the server exits 0", arguments: TestEngine.available)
    func terminateUnderLoad(engine: TestEngine) async throws {
        let (store, server, bodies, answers) = try await signalUnderLoad(
            engine,
            SIGTERM,
            after: 400,
            corpus: try Postbackd.generated(count: 2000, seed: 31, duplicates: 0, invalid: 0)
        )
        #expect(
            server.process.terminationReason == .exit && server.process.terminationStatus == 0,
            "\(server.standardError)"
        )
        let stored = answers.filter { $0.answer.jsonStatus == "stored" }
        #expect(stored.count >= 400 && stored.count < bodies.count, "\(stored.count) of \(bodies.count)")
        #expect(answers.allSatisfy { $0.answer.status == 200 || $0.answer.status == 503 })
        let rows = Int(try #require(try await store.strings("SELECT count(*) FROM postbacks").first ?? nil)) ?? -1
        // Every answered postback is stored, and nothing unanswered was left half-done.
        #expect(rows >= stored.count)
        #expect(try await store.strings("SELECT status FROM ingest_runs") == ["completed"])
    }

    @Test(
        "SQLite on a full disk: postbacks are answered 503 saying so, the log names the store; stored once there is room",
        .enabled(if: SmallDisk.available, "mounting a tmpfs needs root (CAP_SYS_ADMIN)")
    )
    func sqliteDiskFull() async throws {
        let small = directory.path + "/small"
        try SmallDisk.mount(at: small, size: "4m")
        defer { SmallDisk.unmount(small) }
        let database = small + "/serve.sqlite"
        let server = try ServerProcess.start(["--db", database] + Self.keyArguments, directory: directory.path)
        let client = try HTTPClient.forTests()
        #expect(
            try await client.send(
                .POST,
                server.base + Self.skan,
                body: try Self.signed("22222222-0000-4000-8000-000000000f00")
            ).jsonStatus == "stored"
        )

        SmallDisk.fill(small)
        // The log already holds room for a commit or two: a few more fill it.
        var refused: (status: Int, body: String)?
        var sent: [String] = []
        for index in 1...200 {
            let id = "22222222-0000-4000-8000-000000000\(String(format: "%03x", index))"
            let answer = try await client.send(.POST, server.base + Self.skan, body: try Self.signed(id))
            if answer.status == 503 {
                refused = (Int(answer.status), answer.body)
                sent.append(id)
                break
            }
            #expect(answer.jsonStatus == "stored")
        }
        let sizes = ((try? FileManager.default.contentsOfDirectory(atPath: small)) ?? []).map { name in
            "\(name): \(((try? FileManager.default.attributesOfItem(atPath: small + "/" + name))?[.size] as? Int) ?? -1)"
        }
        let answer = try #require(refused, "the full disk refused nothing: \(sizes) \(server.standardError)")
        #expect(answer.body.contains("the store's disk is full; retry later"), "\(answer.body)")
        #expect(!answer.body.contains(database), "the client is told the fault, not the store's path")

        // Room again: the refused postback is stored when it is sent again.
        try FileManager.default.removeItem(atPath: small + "/pad")
        for id in sent {
            #expect(
                try await client.send(.POST, server.base + Self.skan, body: try Self.signed(id)).jsonStatus == "stored"
            )
        }
        #expect(server.stop() == 0)
        #expect(server.standardError.contains("\(database) cannot grow: the disk is full"), "\(server.standardError)")
    }

    @Test(
        "PostgreSQL down: postbacks are answered 503 within seconds, SIGTERM still stops the server, and nothing is lost",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func postgresDown() async throws {
        // A server of its own, so that stopping it disturbs no other test.
        let database = try PostgresDevServer(folder: directory.path + "/pg")
        defer { database.stop() }
        let url = try database.start()
        let server = try ServerProcess.start(["--db", url] + Self.keyArguments, directory: directory.path)
        let client = try HTTPClient.forTests()
        let first = try Self.signed("11111111-0000-4000-8000-0000000000d1")
        let second = try Self.signed("11111111-0000-4000-8000-0000000000d2")
        #expect(try await client.send(.POST, server.base + Self.skan, body: first).jsonStatus == "stored")

        try database.halt()
        var started = ContinuousClock.now
        let refused = try await client.send(.POST, server.base + Self.skan, body: second)
        #expect(refused.status == 503, "\(refused.body)")
        #expect(refused.body.contains("the store cannot be reached; retry later"), "\(refused.body)")
        #expect(refused.header("Retry-After") != nil)
        #expect(ContinuousClock.now - started < .seconds(15), "answered after \(ContinuousClock.now - started)")
        started = ContinuousClock.now
        let ready = try await client.send(.GET, server.base + "/readyz")
        #expect(ready.status == 503)
        #expect(ContinuousClock.now - started < .seconds(15))

        // The run's end cannot be recorded: the server says so and stops anyway.
        started = ContinuousClock.now
        let status = server.stop()
        #expect(ContinuousClock.now - started < .seconds(30), "stopped after \(ContinuousClock.now - started)")
        #expect(status == 2)
        #expect(server.standardError.contains("record the end of the run"), "\(server.standardError)")
        // The log names the store (without a password) and says what is wrong in words.
        #expect(
            server.standardError.contains("\(url) could not store received postbacks: the server cannot be reached"),
            "\(server.standardError)"
        )

        // Back up: the refused postback is stored when the device sends it again.
        #expect(try database.start() == url, "resumed on the same port")
        let again = try ServerProcess.start(["--db", url] + Self.keyArguments, directory: directory.path)
        #expect(try await client.send(.POST, again.base + Self.skan, body: second).jsonStatus == "stored")
        #expect(try await client.send(.POST, again.base + Self.skan, body: first).jsonStatus == "duplicate")
        #expect(again.stop() == 0)
        let store = TestStore(engine: .postgres, location: try StoreLocation(url))
        #expect(try await store.strings("SELECT count(*) FROM postbacks") == ["2"])
        #expect(try await store.strings("SELECT status FROM ingest_runs ORDER BY id") == ["running", "completed"])
    }

    // MARK: Limits

    @Test("a flood of junk adds at most the hour's quarantine rows; repeats add to a count")
    func quarantineBudget() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store, ["--quarantine-rows-per-hour", "2"])
        let client = try HTTPClient.forTests()
        var statuses: [String] = []
        for index in 0..<4 {
            let answer = try await client.send(.POST, server.base + Self.skan, body: Array("junk \(index)".utf8))
            #expect(answer.status == 400)
            statuses.append(answer.jsonStatus ?? "-")
        }
        #expect(statuses == ["quarantined", "quarantined", "dropped", "dropped"])
        // A valid postback is stored whatever the budget.
        let genuine = try Self.signed("33333333-0000-4000-8000-000000000001")
        #expect(try await client.send(.POST, server.base + Self.skan, body: genuine).jsonStatus == "stored")
        let metrics = try await client.send(.GET, server.base + "/metrics").body
        #expect(metrics.contains("postbackd_quarantine_dropped_total 2\n"))
        #expect(server.stop() == 0)
        #expect(try await store.strings("SELECT count(*) FROM quarantine") == ["2"])

        let repeats = try start(store, ["--quarantine-rows-per-hour", "5"])
        for _ in 0..<3 {
            _ = try await client.send(.POST, repeats.base + Self.skan, body: Array("junk 0".utf8))
        }
        #expect(repeats.stop() == 0)
        #expect(
            try await store.strings("SELECT received_count FROM quarantine WHERE raw = CAST('junk 0' AS BLOB)") == ["4"]
        )
    }

    @Test("a client that stops sending mid-request is disconnected after --read-timeout")
    func slowClient() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store, ["--read-timeout", "1"])
        let port = try #require(UInt16(server.base.split(separator: ":").last ?? ""))
        for partial in [
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",  // head never ends
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"a\"",  // body never ends
        ] {
            let started = Date()
            let closed = try Self.sendAndWaitForClose(partial, port: port)
            let seconds = Date().timeIntervalSince(started)
            #expect(closed, "the server kept the connection open")
            #expect(seconds < 8, "closed after \(seconds) s")
        }
        #expect(server.stop() == 0)
    }

    /// Sends `text` on a new connection and returns what the server sends until it closes the
    /// connection (empty when it has not within 10 s).
    private static func exchange(_ text: String, port: UInt16) throws -> String {
        var received: [UInt8] = []
        let closed = try sendAndWaitForClose(text, port: port) { received += $0 }
        return closed ? String(decoding: received, as: UTF8.self) : ""
    }

    /// Sends `text` on a new connection and waits (at most 10 s) for the server to close it.
    private static func sendAndWaitForClose(
        _ text: String,
        port: UInt16,
        received: ([UInt8]) -> Void = { _ in }
    ) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = text.withCString { send(fd, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }  // closed by the server
            if count > 0 {
                received(Array(buffer[0..<count]))
                continue
            }
            if count < 0 { return errno == ECONNRESET }  // timed out: still open
        }
    }

    // MARK: TLS and start-up

    @Test("HTTPS with its own certificate")
    func tls() async throws {
        let certificate = try #require(
            Bundle.module.path(forResource: "localhost-cert", ofType: "pem", inDirectory: "Fixtures")
        )
        let key = try #require(Bundle.module.path(forResource: "localhost-key", ofType: "pem", inDirectory: "Fixtures"))
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try start(store, ["--tls-cert", certificate, "--tls-key", key])
        #expect(server.base.hasPrefix("https://127.0.0.1:"))
        let client = try HTTPClient.forTests(trusting: certificate)
        let answer = try await client.send(
            .POST,
            server.base + Self.skan + "/",
            body: try Self.signed("44444444-0000-4000-8000-000000000001")
        )
        #expect(answer.status == 200 && answer.jsonStatus == "stored")
        // Plain HTTP to the TLS port gets no answer.
        let plain = try HTTPClient.forTests()
        let http = server.base.replacingOccurrences(of: "https://", with: "http://")
        await #expect(throws: (any Error).self) { _ = try await plain.send(.GET, http + "/healthz") }
        #expect(server.stop() == 0)
        try await client.shutdown()
    }

    @Test("what cannot start says why and exits 2")
    func startFailures() throws {
        let missing = try Postbackd.run(
            [
                "serve", "--port", "0", "--tls-cert", directory.path + "/none.pem", "--tls-key",
                directory.path + "/none.pem",
            ],
            directory: directory.path
        )
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("none.pem (--tls-cert)"), "\(missing.standardError)")
        let half = try Postbackd.run(["serve", "--tls-cert", "x.pem"], directory: directory.path)
        #expect(half.status == 2 && half.standardError.contains("--tls-key"))
        let unreachable = try Postbackd.run(
            ["serve", "--port", "0", "--db", "postgres://postbackd:hunter2secret@127.0.0.1:1/postbackd"],
            directory: directory.path
        )
        #expect(unreachable.status == 2)
        #expect(unreachable.standardError.contains("127.0.0.1"))
        #expect(
            !unreachable.standardError.contains("hunter2secret")
                && !unreachable.standardOutput.contains("hunter2secret")
        )

        // A port in use.
        let first = try ServerProcess.start(["--db", directory.path + "/a.sqlite"], directory: directory.path)
        let port = String(first.base.split(separator: ":").last ?? "")
        let second = try Postbackd.run(
            ["serve", "--port", port, "--db", directory.path + "/b.sqlite"],
            directory: directory.path
        )
        #expect(second.status == 2)
        #expect(second.standardError.contains("cannot listen on 127.0.0.1:\(port)"), "\(second.standardError)")
        #expect(first.stop() == 0)
    }
}

/// A shared counter for concurrent clients.
final class Tally: Sendable {
    let value = Atomic<Int>(0)
}

/// A shared once-only switch.
final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostbackKit
import PostbackServer
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd forward` against a real HTTP receiver in the test process that fails a share of
/// requests, times out on some and rejects one postback; on both engines.
@Suite("Forward", .serialized, .timeLimit(.minutes(20)))
struct ForwardTests {
    let directory: TemporaryDirectory
    static let secret = "forward-test-secret"
    static let modelApp: Int64 = 1_694_955_804

    init() throws {
        directory = try TemporaryDirectory("forward")
    }

    // MARK: Data

    /// 300 generated postbacks (about 1% in test mode) stored, and a model for one app.
    func store(_ engine: TestEngine) async throws -> TestStore {
        try await fill(try await TestStore.make(engine, in: directory))
    }

    /// `store` with the 300 postbacks and the model of ``store(_:)``.
    func fill(_ store: TestStore) async throws -> TestStore {
        let file = try directory.write(
            "generated.jsonl",
            try await Postbackd.generated(count: 300, seed: 7, duplicates: 0, invalid: 0)
        )
        let ingest = try await Self.forward(["ingest", "--db", store.argument, "--keys", TestKeys.directory, file])
        #expect(ingest.status == 0, "\(ingest.standardError)")
        let model = try String(
            contentsOfFile: Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json"),
            encoding: .utf8
        )
        .replacingOccurrences(of: "\"525463029\"", with: "\"\(Self.modelApp)\"")
        let modelFile = try directory.write("model.json", model)
        let added = try await Self.forward(["models", "add", "--db", store.argument, modelFile])
        #expect(added.status == 0, "\(added.standardError)")
        return store
    }

    /// Every stored postback as `export` writes it, by delivery id to `destination`.
    func exported(_ store: TestStore, destination: String) async throws -> [String: [String: Any]] {
        let path = directory.path + "/export-\(destination).jsonl"
        _ = try await ExportJob.run(ExportJob.Options(output: path), location: store.location)
        var rows: [String: [String: Any]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let hex = try #require(object["dedup_key"] as? String)
            let key = try #require(bytesFromHex(hex, maximumCount: 4096))
            rows[ForwardConfig.Destination.deliveryID(dedupKey: key, destination: destination)] = object
        }
        return rows
    }

    func config(_ port: Int, concurrency: Int = 4, timeout: Double = 1) throws -> String {
        try directory.write(
            "forward.json",
            """
            {"destinations": [
              {"name": "network", "url": "http://127.0.0.1:\(port)/network", "payload": "raw",
               "hmac_secret_env": "NETWORK_SECRET", "timeout_seconds": \(timeout), "concurrency": \(concurrency),
               "retry": {"base_seconds": 0.05, "max_seconds": 0.2}},
              {"name": "bi", "url": "http://127.0.0.1:\(port)/bi", "payload": "decoded",
               "filter": {"app_ids": [\(Self.modelApp)], "kinds": ["skan"]},
               "timeout_seconds": \(timeout), "concurrency": 2, "retry": {"base_seconds": 0.05, "max_seconds": 0.2}}
            ]}
            """
        )
    }

    var environment: [String: String] { ["NETWORK_SECRET": Self.secret] }

    /// Runs `postbackd arguments…` on a thread of its own: waiting for it on the cooperative
    /// pool would take a thread from the receiver, which answers in this process.
    static func forward(
        _ arguments: [String],
        environment: [String: String] = [:]
    ) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, environment: environment)
    }

    /// Starts `forward --follow` and returns once the receiver has 20 deliveries to the network.
    func following(
        _ store: TestStore,
        _ config: String,
        until receiver: Receiver,
        errors: Any
    ) async throws
        -> Process
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Postbackd.executable)
        process.arguments = ["forward", "--db", store.argument, "--config", config, "--follow"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while receiver.delivered("network").count < 20 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        return process
    }

    /// A stable share of delivery ids.
    static func bucket(_ id: String, _ modulus: Int) -> Int {
        Int(id.utf8.reduce(UInt32(7)) { $0 &* 31 &+ UInt32($1) } % UInt32(modulus))
    }

    // MARK: Tests

    @Test(
        "--drain delivers every matching postback: raw byte for byte and signed, decoded with its events; 500s and timeouts retried, a 410 rejected once, filtered ones never sent",
        arguments: TestEngine.available
    )
    func drain(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let rows = try await exported(store, destination: "network")
        let production = rows.filter { $0.value["key_space"] as? String == "production" }
        #expect(production.count < rows.count, "the data holds test-mode postbacks, which the default filter excludes")
        let gone = try #require(production.keys.sorted().first)
        let receiver = try await Receiver { id, attempt in
            if id == gone { return (410, .zero) }
            if attempt == 1 && Self.bucket(id, 4) == 0 { return (500, .zero) }
            if attempt == 1 && Self.bucket(id, 9) == 1 { return (200, .milliseconds(2_500)) }  // past the timeout
            return (200, .zero)
        }
        let config = try config(receiver.port)

        let run = try await Self.forward(
            ["forward", "--db", store.argument, "--config", config, "--drain", "--status"],
            environment: environment
        )
        await receiver.stop()
        #expect(run.status == 1, "one delivery rejected: \(run.standardError)")

        // The network: every production postback but the rejected one, byte for byte, signed.
        let network = receiver.delivered("network")
        #expect(Set(network.keys) == Set(production.keys).subtracting([gone]))
        for (id, answers) in network {
            let body = try #require(answers.first?.body)
            #expect(body == Array((production[id]?["raw"] as? String ?? "").utf8), "raw body of \(id)")
            #expect(answers.first?.signature == "sha256=" + HMACSHA256.hex(key: Array(Self.secret.utf8), message: body))
        }
        let all = receiver.received.filter { $0.destination == "network" }
        #expect(all.filter { $0.deliveryID == gone }.count == 1, "the 410 is attempted once")
        #expect(all.contains { $0.status == 500 } && all.contains { $0.attempt > 1 }, "some deliveries were retried")
        #expect(!all.contains { rows[$0.deliveryID]?["key_space"] as? String != "production" })

        // BI: decoded lines of the one app's SKAdNetwork postbacks, with their events.
        let biRows = try await exported(store, destination: "bi").filter {
            ($0.value["app_id"] as? Int).map(Int64.init) == Self.modelApp && $0.value["kind"] as? String == "skan"
                && $0.value["key_space"] as? String == "production"
        }
        let bi = receiver.delivered("bi")
        #expect(!biRows.isEmpty && Set(bi.keys) == Set(biRows.keys))
        var mapped = 0
        for (id, answers) in bi {
            let body = try #require(answers.first?.body)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            let expected = try #require(biRows[id])
            #expect(object["raw"] as? String == expected["raw"] as? String)
            #expect(object["conversion"] as? String == expected["conversion"] as? String)
            #expect((object["events"] as? NSArray) == (expected["events"] as? NSArray), "events of \(id)")
            if object["conversion"] as? String == "mapped" { mapped += 1 }
            #expect(answers.first?.signature == nil, "bi has no secret")
        }
        #expect(mapped > 0, "some decoded postbacks carry events")
        #expect(!receiver.received.contains { $0.destination == "bi" && biRows[$0.deliveryID] == nil })

        // --status: the rejected one is shown with the rest delivered.
        let lines = run.outputLines
        #expect(lines.first?.hasPrefix("destination") == true)
        let networkLine = try #require(lines.first { $0.hasPrefix("network ") }).split(separator: " ").map(String.init)
        #expect(networkLine == ["network", String(production.count - 1), "0", "0", "1", "0", "-"])
        let biLine = try #require(lines.first { $0.hasPrefix("bi ") }).split(separator: " ").map(String.init)
        #expect(biLine == ["bi", String(biRows.count), "0", "0", "0", "0", "-"])
        #expect(!run.standardError.contains(Self.secret) && !run.standardOutput.contains(Self.secret))

        // A second run sends nothing: everything delivered stays delivered.
        let before = receiver.received.count
        let again = try await Self.forward(
            ["forward", "--db", store.argument, "--config", config, "--drain"],
            environment: environment
        )
        #expect(again.status == 0, "\(again.standardError)")
        #expect(receiver.received.count == before)
        #expect(again.standardError.contains("forwarded: 0 delivered, 0 rejected"))
    }

    @Test(
        "kill -9 during delivery, then --drain: everything delivered, repeats only for deliveries in flight",
        arguments: TestEngine.available
    )
    func killed(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let production = try await exported(store, destination: "network").filter {
            $0.value["key_space"] as? String == "production"
        }
        // Twenty delivered, the rest held until the kill: the kill lands part way.
        let gate = Gate(letting: 20)
        let receiver = try await Receiver(gate: gate) { _, _ in (200, .milliseconds(40)) }
        let config = try config(receiver.port, concurrency: 4, timeout: 1)

        let process = try await following(store, config, until: receiver, errors: FileHandle.nullDevice)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        gate.open()
        let atKill = receiver.delivered("network").count
        #expect((1...20).contains(atKill), "killed mid-way (\(atKill) of \(production.count))")

        let run = try await Self.forward(
            ["forward", "--db", store.argument, "--config", config, "--drain"],
            environment: environment
        )
        await receiver.stop()
        #expect(run.status == 0, "\(run.standardError)")
        let network = receiver.delivered("network")
        #expect(Set(network.keys) == Set(production.keys), "every production postback delivered")
        // Sent twice only if claimed and not yet committed at the kill: in flight, or answered
        // with the outcome waiting for its commit (the forwarder holds at most `queueDepth`
        // times the concurrency, 4, plus a group of outcomes, so claimed). At the receiver's
        // 100 answers a second a group's 10 ms window holds one or two; allow 16, the answers
        // of a commit slowed to 160 ms (seen: 12).
        let repeated = network.values.filter { $0.count > 1 }.count
        #expect(
            repeated <= Forwarder.queueDepth * 4 + 16,
            "\(repeated) repeats: \(network.values.filter { $0.count > 1 }.map { $0.map(\.attempt) })"
        )
        #expect(receiver.mostAtOnce == 1)
    }

    @Test(
        "--follow across a failover to a synchronous standby: it finds the promoted standby by itself and delivers everything",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func failover() async throws {
        let primary = try PostgresDevServer(folder: directory.path + "/primary")
        let standby = try PostgresDevServer(folder: directory.path + "/standby")
        defer {
            standby.stop()
            primary.stop()
        }
        var url = try await PostgresURL(try primary.start())
        await url.servers += try PostgresURL(try standby.startStandby(of: primary)).servers
        url.sessionAttributes = .readWrite
        let store = try await fill(TestStore(engine: .postgres, location: .postgres(url)))
        let production = try await exported(store, destination: "network").filter {
            $0.value["key_space"] as? String == "production"
        }
        // Twenty delivered, the rest held until the primary is killed: it lands part way.
        let gate = Gate(letting: 20)
        let receiver = try await Receiver(gate: gate) { _, _ in (200, .milliseconds(40)) }
        let config = try config(receiver.port, concurrency: 4, timeout: 1)
        let errors = Pipe()
        let process = try await following(store, config, until: receiver, errors: errors)
        // `kill` returns once the primary is gone; the outage lasts as long as the promotion.
        try await primary.kill()
        gate.open()
        let atKill = receiver.delivered("network").count
        try await standby.promote()
        let deadline = Date().addingTimeInterval(90)
        while receiver.delivered("network").count < production.count && Date() < deadline && process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(process.processIdentifier, SIGTERM)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(atKill < production.count, "killed mid-way (\(atKill) of \(production.count))")
        #expect(Set(receiver.delivered("network").keys) == Set(production.keys), "every production postback delivered")
        #expect(stderr.contains("the database's server changed"), "\(stderr)")
        // Every outcome is on the promoted standby: a --drain there sends nothing more.
        let before = receiver.received.count
        let drain = try await Self.forward(
            ["forward", "--db", try standby.url(), "--config", config, "--drain"],
            environment: environment
        )
        await receiver.stop()
        #expect(drain.status == 0, "\(drain.standardError)")
        // Outcomes answered while the primary died may be sent again (at most those in flight).
        #expect(receiver.received.count - before <= Forwarder.queueDepth * 4 + 16)
    }

    @Test(
        "SIGTERM stops --follow at once: the requests in flight finish and every outcome is recorded",
        arguments: TestEngine.available
    )
    func terminated(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let receiver = try await Receiver { _, _ in (200, .milliseconds(40)) }
        let config = try config(receiver.port, concurrency: 4, timeout: 5)
        let errors = Pipe()
        let process = try await following(store, config, until: receiver, errors: errors)
        let deadline = Date().addingTimeInterval(60)
        let signalled = Date()
        kill(process.processIdentifier, SIGTERM)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let stopping = Date().timeIntervalSince(signalled)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        // The requests in flight take 40 ms; the graceful-shutdown limit would be 35 s. Under CI's
        // load a stop that waited for nothing took 6.1 s, so the bound sits between.
        #expect(stopping < 15, "stopped \(stopping) s after SIGTERM")
        #expect(!stderr.contains("cannot record"), "\(stderr)")
        // Every answer received was recorded: a --drain now sends only what was never sent.
        let sent = Set(receiver.delivered("network").keys)
        let run = try await Self.forward(
            ["forward", "--db", store.argument, "--config", config, "--drain"],
            environment: environment
        )
        await receiver.stop()
        #expect(run.status == 0, "\(run.standardError)")
        let again = receiver.received.filter { $0.destination == "network" && $0.attempt > 0 }
        let repeated = Dictionary(grouping: again, by: \.deliveryID).filter {
            sent.contains($0.key) && $0.value.count > 1
        }
        #expect(repeated.isEmpty, "\(repeated.count) deliveries sent again after a graceful stop")
    }

    @Test(
        "two forward processes on one database share the work: no delivery sent twice",
        arguments: TestEngine.available
    )
    func shared(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let production = try await exported(store, destination: "network").filter {
            $0.value["key_space"] as? String == "production"
        }
        let receiver = try await Receiver { _, _ in (200, .milliseconds(5)) }
        let config = try config(receiver.port, concurrency: 8, timeout: 5)
        let arguments = ["forward", "--db", store.argument, "--config", config, "--drain"]
        let environment = self.environment
        async let first = Self.forward(arguments, environment: environment)
        async let second = Self.forward(arguments, environment: environment)
        let runs = try await [first, second]
        await receiver.stop()
        for run in runs { #expect(run.status == 0, "\(run.standardError)") }
        let network = receiver.delivered("network")
        #expect(Set(network.keys) == Set(production.keys))
        #expect(network.values.allSatisfy { $0.count == 1 }, "no delivery sent twice")
        #expect(receiver.mostAtOnce == 1)
    }

    @Test(
        "under apps policy registered, only registered apps' postbacks are forwarded",
        arguments: TestEngine.available
    )
    func registeredOnly(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let everyApp = try await exported(store, destination: "network").filter {
            $0.value["key_space"] as? String == "production"
        }
        let apps = Set(everyApp.values.compactMap { $0["app_id"] as? Int })
        #expect(apps.count > 1 && apps.contains(Int(Self.modelApp)), "\(apps)")
        for arguments in [["apps", "add", String(Self.modelApp)], ["apps", "policy", "registered"]] {
            #expect(try await Self.forward(arguments + ["--db", store.argument]).status == 0)
        }
        let receiver = try await Receiver { _, _ in (200, .zero) }
        let run = try await Self.forward(
            ["forward", "--db", store.argument, "--config", try config(receiver.port), "--drain"],
            environment: environment
        )
        await receiver.stop()
        #expect(run.status == 0, "\(run.standardError)")
        let registered = everyApp.filter { ($0.value["app_id"] as? Int).map(Int64.init) == Self.modelApp }
        #expect(!registered.isEmpty && registered.count < everyApp.count)
        #expect(Set(receiver.delivered("network").keys) == Set(registered.keys))
    }

    @Test("serve --forward delivers what it stores, and shows the deliveries in /metrics")
    func serveForward() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let receiver = try await Receiver { _, _ in (200, .zero) }
        let config = try config(receiver.port)
        let server = try await ServerProcess.start(
            ["--db", store.argument, "--keys", TestKeys.directory, "--forward", config],
            directory: directory.path,
            environment: environment
        )
        let client = try HTTPClient.forTests()
        let body = try SamplePostback.signedJSON(.v4_0, transactionID: "00000000-0000-4000-8000-000000000099")
        let response = try await client.send(
            .POST,
            server.base + "/.well-known/skadnetwork/report-attribution/",
            body: Array(body.utf8)
        )
        #expect(response.status == 200)
        let deadline = Date().addingTimeInterval(10)
        while receiver.delivered("network").isEmpty && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(receiver.delivered("network").first?.value.first?.body == Array(body.utf8))
        var metrics = ""
        while Date() < deadline {
            metrics = try await client.send(.GET, server.base + "/metrics").body
            if metrics.contains("postbackd_forward_deliveries{destination=\"network\",state=\"delivered\"} 1") { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(metrics.contains("postbackd_forward_attempts_total{destination=\"network\",outcome=\"delivered\"} 1"))
        #expect(metrics.contains("postbackd_forward_deliveries{destination=\"network\",state=\"delivered\"} 1"))
        let status = server.stop()
        await receiver.stop()
        #expect(status == 0)
    }

    @Test("a missing HMAC secret stops forward before anything is sent, naming the variable, not a value")
    func missingSecret() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        let config = try config(9)
        let run = try await Self.forward(["forward", "--db", store.argument, "--config", config, "--drain"])
        #expect(run.status == 2)
        #expect(run.standardError.contains("NETWORK_SECRET (hmac_secret_env) is not set"))
        let status = try await Self.forward(["forward", "--db", store.argument, "--config", config, "--status"])
        #expect(status.status == 0, "--status needs no secret: \(status.standardError)")
    }
}

import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// `postbackd doctor --db`, run as the built binary on both engines: a store whose app stopped
/// sending after a steady week is named (text, JSON, the Prometheus textfile, exit 1); a store
/// with nothing wrong exits 0; a store that cannot be read exits 2 without its password.
@Suite("postbackd doctor --db", .serialized, .timeLimit(.minutes(20)))
struct DoctorStoreCommandTests {
    let directory: TemporaryDirectory
    static let day: Int64 = 86_400_000

    init() throws {
        directory = try TemporaryDirectory("doctor-db-cli")
    }

    @Test(
        "an app silent for 2 days after a steady week is a finding; the same app still sending is none",
        arguments: TestEngine.available
    )
    func stoppedApp(_ engine: TestEngine) async throws {
        // Five postbacks a day on each of the 7 days before the last 2 (an hour inside each
        // day, as the doctor runs a little later), received then (the forwarder's
        // `timestamp` is the received time `ingest` keeps); another store has the same and
        // the last 2 days too.
        let now = UTCInstant.now().milliseconds
        func makeStore(_ name: String, days: ClosedRange<Int64>) async throws -> TestStore {
            var lines: [String] = []
            for day in days {
                for index in Int64(1)...5 {
                    let id = String(format: "00000000-0000-4000-8000-%012ld", Int(day * 10 + index))
                    let received = now - day * Self.day + index * 3_600_000
                    lines.append(
                        try SamplePostback.signedJSON(
                            .v4_0,
                            transactionID: id,
                            extraFields: [("timestamp", "\(received)")]
                        )
                    )
                }
            }
            let file = try directory.write("\(name)-\(engine).jsonl", lines.joined(separator: "\n"))
            let store = try await TestStore.make(engine, in: directory, name: name)
            let ingested = try await Postbackd.run([
                "ingest", "--db", store.argument, "--keys", TestKeys.directory, file,
            ])
            #expect(ingested.status == 0, "\(ingested.standardError)")
            #expect(ingested.standardOutput.contains("accepted     \(lines.count)\n"), "\(ingested.standardOutput)")
            return store
        }
        let store = try await makeStore("stopped", days: 3...9)
        let steady = try await makeStore("steady", days: 1...9)

        let textfile = directory.path + "/doctor-\(engine).prom"
        let text = try await Postbackd.run(["doctor", "--db", store.argument, "--prometheus-textfile", textfile])
        #expect(text.status == 1, "\(text.standardOutput)\(text.standardError)")
        #expect(text.standardOutput.contains("app 525463029 [stopped-apps]"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("1 finding\n"), "\(text.standardOutput)")
        let metrics = try String(contentsOfFile: textfile, encoding: .utf8)
        #expect(metrics.contains("postbackd_doctor_findings{check=\"db\",target=\""), "\(metrics)")
        #expect(metrics.contains("\"} 1\n"), "\(metrics)")

        let json = try await Postbackd.run(["doctor", "--db", store.argument, "--format", "json"])
        #expect(json.status == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        let checks = try #require(object["checks"] as? [[String: Any]])
        let findings = try #require(checks.first?["findings"] as? [[String: Any]])
        #expect(checks.first?["check"] as? String == "db")
        #expect(findings.map { $0["kind"] as? String } == ["stopped-apps"], "\(json.standardOutput)")
        #expect((findings.first?["problem"] as? String)?.isEmpty == false)
        #expect((findings.first?["fix"] as? String)?.isEmpty == false)

        let healthy = try await Postbackd.run(["doctor", "--db", steady.argument])
        #expect(healthy.status == 0, "\(healthy.standardOutput)\(healthy.standardError)")
        #expect(healthy.standardOutput.hasSuffix("nothing wrong found\n"), "\(healthy.standardOutput)")
    }

    @Test("a store that cannot be read exits 2, naming it without its password")
    func unreadable() async throws {
        let missing = try await Postbackd.run(["doctor", "--db", directory.path + "/none.sqlite"])
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("no store at \(directory.path)/none.sqlite"), "\(missing.standardError)")
        let unreachable = try await Postbackd.run([
            "doctor", "--db", "postgres://doctor:hunter2secret@127.0.0.1:1/postbackd?connect_timeout=2",
        ])
        #expect(unreachable.status == 2)
        #expect(
            unreachable.standardError.contains("cannot reach PostgreSQL at 127.0.0.1:1"),
            "\(unreachable.standardError)"
        )
        #expect(!(unreachable.standardOutput + unreachable.standardError).contains("hunter2secret"))
    }
}

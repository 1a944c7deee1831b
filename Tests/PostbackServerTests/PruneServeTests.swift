import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// `postbackd prune` beside a running `serve`: the built binaries, a loopback port, a real
/// HTTP client, both engines.
@Suite("postbackd prune while serve receives", .serialized, .timeLimit(.minutes(20)))
struct PruneServeTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("prune-serve")
    }

    @Test(
        "serve answers every postback stored while a prune removes old rows in short transactions",
        arguments: TestEngine.available
    )
    func serveDuringPrune(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        // 3,000 postbacks received in January: old enough for a retention of a day.
        let old = try directory.write(
            "old.jsonl",
            try await Postbackd.generated(count: 3_000, seed: 41, duplicates: 0.02, invalid: 0.02)
        )
        for arguments in [
            ["ingest", "--keys", TestKeys.directory, "--received-at", "2026-01-10T12:00:00Z", old],
            ["retention", "set", "raw=1", "test=1", "quarantine=1"],
        ] {
            let run = try await Postbackd.run(arguments + ["--db", store.argument])
            #expect(run.status == 0, "\(arguments.prefix(2)): \(run.standardError)")
        }
        let stored = try await store.count("postbacks")
        let server = try await ServerProcess.start(
            ["--db", store.argument] + ServeTests.keyArguments,
            directory: directory.path
        )
        defer { server.stop() }
        let fresh = try directory.write(
            "fresh-\(engine).jsonl",
            try await Postbackd.generated(count: 3_000, seed: 42, duplicates: 0, invalid: 0)
        )
        // The prune, ten rows a transaction (at least 25 ms apart on SQLite), in its own process;
        // postbacks posted one after another until it ends, by a client of its own (a Python
        // process: this test's tasks can wait long for a thread while other suites run, and
        // the overlap must not depend on that).
        let client = try directory.write("post-during-prune.py", Self.client)
        let prune = [Postbackd.executable, "prune", "--batch", "10", "--db", store.argument]
        let run = try await Shell.run(
            (["python3", client, server.base + "/.well-known/skadnetwork/report-attribution/", fresh] + prune)
                .map(Shell.quoted).joined(separator: " "),
            in: directory.path,
            standardError: false
        )
        let result = try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any],
            "\(run.output)"
        )
        let posted = result["posted"] as? Int ?? 0
        let during = result["during"] as? Int ?? 0
        let answers = result["answers"] as? [String] ?? []
        #expect(result["prune_status"] as? Int == 0, "\(result["prune_output"] ?? "")")
        let pruneOutput = result["prune_output"] as? String ?? ""
        #expect(pruneOutput.contains("prune run"), "\(pruneOutput)")
        #expect(answers.count == posted && answers.allSatisfy { $0 == "200 stored" }, "\(Set(answers))")
        // The prune overlapped the requests: many were answered while it ran.
        #expect(during >= 20, "\(during) of \(posted) answered while the prune ran")
        print("prune-serve \(engine): \(during) of \(posted) answered while the prune ran")
        // Every postback received is stored, raw bytes whole; the old ones lost only theirs.
        #expect(try await store.count("postbacks") == stored + posted - pruned(pruneOutput))
        #expect(try await store.count("postbacks", where: "length(raw) > 0") == posted)
        #expect(try await store.count("quarantine") == 0)
    }

    /// `post-during-prune.py URL FILE PRUNE…`: starts PRUNE, posts FILE's lines to URL one
    /// after another while it runs (all of them at most), and prints what happened as JSON.
    static let client = #"""
        import json, subprocess, sys, urllib.error, urllib.request
        url, path, command = sys.argv[1], sys.argv[2], sys.argv[3:]
        lines = open(path, "rb").read().splitlines()
        prune = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        answers, during = [], 0
        for line in lines:
            if prune.poll() is not None:
                break
            request = urllib.request.Request(url, data=line, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    status, body = answer.status, answer.read()
            except urllib.error.HTTPError as error:
                status, body = error.code, error.read()
            try:
                outcome = json.loads(body).get("status", "?")
            except ValueError:
                outcome = "?"
            answers.append(f"{status} {outcome}")
            if prune.poll() is None:
                during += 1
        output, _ = prune.communicate(timeout=300)
        print(json.dumps({"posted": len(answers), "during": during, "answers": answers,
                          "prune_status": prune.returncode, "prune_output": output.decode()}))
        """#

    @Test(
        "a prune killed with SIGKILL part way, then run again, leaves what one whole prune leaves",
        arguments: TestEngine.available
    )
    func killedAndRerun(_ engine: TestEngine) async throws {
        let old = try directory.write(
            "old-\(engine).jsonl",
            try await Postbackd.generated(count: 1_500, seed: 43, duplicates: 0.05, invalid: 0.05)
        )
        var stores: [TestStore] = []
        for name in ["whole", "killed"] {
            let store = try await TestStore.make(engine, in: directory, name: name)
            for arguments in [
                ["ingest", "--keys", TestKeys.directory, "--received-at", "2026-01-10T12:00:00Z", old],
                ["retention", "set", "raw=1", "test=1", "quarantine=1"],
            ] {
                let run = try await Postbackd.run(arguments + ["--db", store.argument])
                #expect(run.status == 0, "\(arguments.prefix(2)): \(run.standardError)")
            }
            stores.append(store)
        }
        let (whole, killed) = (stores[0], stores[1])
        let firstDay = UTCInstant.now().day
        let once = try await Postbackd.run(["prune", "--batch", "10", "--db", whole.argument])
        #expect(once.status == 0, "\(once.standardError)")

        // A row a transaction on PostgreSQL (no pause between its batches), ten on SQLite (25 ms
        // at least between them): several seconds either way. Killed two seconds in, by a
        // thread of its own (this test's tasks can wait long for a thread while other suites
        // run).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Postbackd.executable)
        process.arguments = ["prune", "--batch", engine == .postgres ? "1" : "10", "--db", killed.argument]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        Thread {
            usleep(2_000_000)
            kill(pid, SIGKILL)
        }.start()
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the prune ended before it was killed")
        #expect(try await killed.count("postbacks", where: "length(raw) > 0") > 0, "killed part way")

        let again = try await Postbackd.run(["prune", "--batch", "10", "--db", killed.argument])
        #expect(again.status == 0, "\(again.standardError)")
        #expect(try await killed.dump() == whole.dump())
        // A prune examines the days before today (UTC): when midnight fell between the two runs,
        // the second one examined a day more, and only that column differs.
        let examined = UTCInstant.now().day == firstDay ? "examined_before" : "NULL"
        for query in [
            "SELECT date, quarantined, duplicates, conflicts FROM pruned_intake ORDER BY date",
            "SELECT dedup_key, kind, first_seen FROM pruned_keys ORDER BY dedup_key",
            "SELECT kind, days, \(examined) FROM retention ORDER BY kind",
        ] {
            let (left, right) = (try await killed.rows(query), try await whole.rows(query))
            #expect(left == right, "\(query)")
        }
        #expect(try await killed.strings("SELECT status FROM prune_runs ORDER BY id") == ["running", "completed"])
    }

    /// The test-mode postbacks the prune's output says it removed.
    private func pruned(_ output: String) -> Int {
        let line = output.split(separator: "\n").first { $0.hasPrefix("test: removed ") } ?? ""
        return Int(line.split(separator: " ")[safe: 2]?.replacingOccurrences(of: ",", with: "") ?? "") ?? -1
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

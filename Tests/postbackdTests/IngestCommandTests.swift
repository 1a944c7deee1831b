import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

/// `postbackd ingest`, run as the built binary on real files and real databases.
@Suite("postbackd ingest", .timeLimit(.minutes(25)))
struct IngestCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("ingest-cli")
    }

    private func summary(_ run: Postbackd.Run) throws -> [String: Int] {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
        )
        return object.compactMapValues { $0 as? Int }
    }

    @Test("the main job: ingest into postbackd.sqlite in the working directory, JSON summary on one line")
    func defaultDatabase() async throws {
        let run = try await Postbackd.run(
            [
                "ingest", "--format", "json", "--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory,
                Repository.path("SamplePostbacks/apple"), Repository.path("SamplePostbacks/generated"),
            ],
            directory: directory.path
        )
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.outputLines.count == 1)
        let counts = try summary(run)
        for key in ["read", "accepted", "duplicates", "conflicts", "signed_conflicts", "quarantined", "test_mode"] {
            #expect(counts[key] != nil, "\(key)")
        }
        #expect(counts["read"] == 3452)
        // Apple's 2.0, 2.1 and 2.2 examples sign three contents under one transaction id: the
        // 2.1 and 2.2 ones are other signed content under the 2.0 one's key. No generated copy
        // differs in what is signed.
        #expect(counts["signed_conflicts"] == 2)
        #expect(counts["conflicts"] == 4)
        #expect(
            counts["read"] == (counts["accepted"] ?? 0) + (counts["duplicates"] ?? 0) + (counts["quarantined"] ?? 0)
        )
        // 2 of Apple's vectors, 27 SKAdNetwork and 2 AdAttributionKit postbacks generated with broken signatures
        #expect(counts["quarantined"] == 31)
        #expect(counts["conflicts"] ?? 0 >= 1)
        #expect(FileManager.default.fileExists(atPath: directory.path + "/postbackd.sqlite"))
        #expect(try DatabaseDump.count("postbacks", in: directory.path + "/postbackd.sqlite") == counts["accepted"])

        let again = try await Postbackd.run(
            [
                "ingest", "--format", "json", "--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory,
                Repository.path("SamplePostbacks/apple"), Repository.path("SamplePostbacks/generated"),
            ],
            directory: directory.path
        )
        #expect(try summary(again)["accepted"] == 0)
    }

    @Test("POSTBACKD_DB names the database; --db wins over it")
    func databaseEnvironment() async throws {
        let file = Repository.vectors + "/apple-3.0-win.json"
        let fromEnvironment = directory.path + "/env.sqlite"
        #expect(try await Postbackd.run(["ingest", file], environment: ["POSTBACKD_DB": fromEnvironment]).status == 0)
        #expect(try DatabaseDump.count("postbacks", in: fromEnvironment) == 1)
        let explicit = directory.path + "/explicit.sqlite"
        #expect(
            try await Postbackd.run(["ingest", "--db", explicit, file], environment: ["POSTBACKD_DB": fromEnvironment])
                .status
                == 0
        )
        #expect(try DatabaseDump.count("postbacks", in: explicit) == 1)
        #expect(try DatabaseDump.count("ingest_runs", in: fromEnvironment) == 1)
    }

    @Test("exit status 2 with a message that says what to do when the run cannot do its work")
    func failures() async throws {
        let database = directory.path + "/db.sqlite"
        let missing = try await Postbackd.run(["ingest", "--db", database, directory.path + "/nope.jsonl"])
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("nope.jsonl"))
        #expect(!FileManager.default.fileExists(atPath: database), "nothing is created before the inputs are checked")
        let notDatabase = try directory.write("text.sqlite", "hello")
        let unusable = try await Postbackd.run(["ingest", "--db", notDatabase, Repository.vectors])
        #expect(unusable.status == 2)
        #expect(unusable.standardError.contains("--db"))
        let badTime = try await Postbackd.run([
            "ingest", "--db", database, "--received-at", "yesterday", Repository.vectors,
        ])
        #expect(badTime.status == 2)
        #expect(badTime.standardError.contains("ISO 8601"))
        // One SQLite file has one writer.
        let writers = try await Postbackd.run(["ingest", "--db", database, "--writers", "2", Repository.vectors])
        #expect(writers.status == 2)
        #expect(writers.standardError.contains("a SQLite store has one writer"), "\(writers.standardError)")
        #expect(!FileManager.default.fileExists(atPath: database))
        let tooMany = try await Postbackd.run(["ingest", "--db", database, "--writers", "0", Repository.vectors])
        #expect(tooMany.status == 2)
        #expect(tooMany.standardError.contains("--writers 0 must be from 1 to 8"), "\(tooMany.standardError)")
        for channel in ["Network X", "network/x", ".x", String(repeating: "n", count: 65)] {
            let badChannel = try await Postbackd.run([
                "ingest", "--db", database, "--channel", channel, Repository.vectors,
            ])
            #expect(badChannel.status == 2, "\(channel)")
            #expect(
                badChannel.standardError.contains("--channel '\(channel)': a channel is 1 to 64 lower-case letters"),
                "\(badChannel.standardError)"
            )
        }
        #expect(!FileManager.default.fileExists(atPath: database), "nothing is read before the channel is checked")
        let keyChannels = [
            (["--all-apps", "--channels", "network-x"], "--channels goes with --scope forwards"),
            (["--all-apps", "--scope", "forwards", "--channels", "device"], "device is the channel of Apple's"),
            (["--all-apps", "--scope", "forwards", "--channels", "Network"], "is not a channel"),
        ]
        for (arguments, message) in keyChannels {
            let key = try await Postbackd.run(["keys", "add", "--db", database, "network-x"] + arguments)
            #expect(key.status == 2 && key.standardError.contains(message), "\(arguments): \(key.standardError)")
        }
        let quarantinedOnly = try await Postbackd.run([
            "ingest", "--db", database, Repository.vectors + "/apple-1.0-doc-example.json",
        ])
        #expect(quarantinedOnly.status == 0, "quarantined postbacks are data, not failure")
        #expect(quarantinedOnly.standardError.contains("apple-1.0-doc-example.json: invalid"))
    }

    @Test(
        "killed with SIGKILL at any moment and run again, the store ends as one clean run leaves it",
        arguments: TestEngine.available
    )
    func killAndRerun(_ engine: TestEngine) async throws {
        let input = try directory.write("day.jsonl", try await Postbackd.generated(count: 6000, seed: 11))
        // A partner forwards the first 300 again as a JSON array, with one entry that is not a postback.
        let copies = try await Postbackd.generated(count: 300, seed: 11).split(separator: "\n").joined(separator: ",")
        let forward = try directory.write("forward.json", "[" + copies + ",{\"bad\":1}]")
        // Small transactions (whole batches of 256, so one per batch), so that kills land
        // between commits whatever the machine's speed; the default commits far less often.
        let arguments = { (database: String) in
            [
                "ingest", "--db", database, "--keys", TestKeys.directory, "--received-at", "2026-11-21T06:00:00Z",
                "--commit-every", "200", input, forward,
            ]
        }

        let clean = try await TestStore.make(engine, in: directory, name: "clean")
        let started = Date()
        let cleanRun = try await Postbackd.run(arguments(clean.argument))
        let duration = Date().timeIntervalSince(started)
        #expect(cleanRun.status == 0, "\(cleanRun.standardError)")
        let expected = try await clean.dump()
        let total = expected["postbacks"]?.count ?? 0
        #expect(total > 5000)

        var crashed = try await TestStore.make(engine, in: directory, name: "crashed")
        var fresh = 0
        var interrupted: [Int] = []
        // Kills after a tenth of a clean run's duration, then half as long again each time, on
        // the same store: each run verifies the whole input again, so a later kill gets further.
        // Growing, not fixed, fractions: the clean run is only a guess of the killed runs' pace
        // (a release build's run is mostly start-up, and the tests around it load the machine
        // more or less), and a kill that finds nothing new stored just waits longer next time.
        // A run that ended before its first kill (the clean run was slowed by the tests around
        // it) proves nothing: a fresh store, and kills three times sooner.
        var delay = duration * 0.1
        for _ in 0..<16 where interrupted.count < 6 {
            let before = (try? await crashed.count("postbacks")) ?? 0
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Postbackd.executable)
            process.arguments = arguments(crashed.argument)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32(min(delay, 60) * 1_000_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let killed = process.terminationReason == .uncaughtSignal
            if killed { #expect(process.terminationStatus == SIGKILL) }
            let count = (try? await crashed.count("postbacks")) ?? 0
            if !killed || count == total {  // it finished, or was killed after its last commit
                if !interrupted.isEmpty { break }
                fresh += 1
                crashed = try await TestStore.make(engine, in: directory, name: "crashed-\(fresh)")
                delay /= 3
                continue
            }
            if count > before { interrupted.append(count) }
            delay *= 1.5
        }
        #expect(
            interrupted.contains { $0 > 0 && $0 < total },
            "at least one kill landed mid-run: \(interrupted) of \(total)"
        )

        let rerun = try await Postbackd.run(arguments(crashed.argument))
        #expect(rerun.status == 0, "\(rerun.standardError)")
        compare(try await crashed.dump(), expected, "after kills and a re-run")
    }

    /// Records every table whose rows differ between `actual` and `expected`.
    private func compare(_ actual: [String: [String]], _ expected: [String: [String]], _ what: String) {
        for table in ["postbacks", "sightings", "conflicts", "quarantine"] {
            let (got, want) = (actual[table] ?? [], expected[table] ?? [])
            #expect(got.count == want.count, "\(table): \(got.count) rows \(what), \(want.count) after one clean run")
            if let index = zip(got, want).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                Issue.record(
                    "\(table) row \(index) differs:\n  \(what): \(got[index].prefix(300))\n  clean run:   \(want[index].prefix(300))"
                )
            }
        }
    }

    @Test(
        "four ingests on one store at once: none fails, nothing is counted twice, summaries add up",
        arguments: TestEngine.available
    )
    func concurrentIngests(_ engine: TestEngine) async throws {
        let lines = try await Postbackd.generated(count: 4000, seed: 21).split(separator: "\n").map(String.init)
        let extra = try await Postbackd.generated(count: 2000, seed: 22).split(separator: "\n").map(String.init)
        // Four workers on overlapping inputs: each of the 6,000 postbacks is read by two of them.
        let all = lines + extra
        let inputs = try (0..<4).map { worker in
            let slice = (0..<all.count).filter { ($0 / 1500 == worker) || (($0 / 1500 + 1) % 4 == worker) }
            return try directory.write("worker-\(worker).jsonl", slice.map { all[$0] }.joined(separator: "\n"))
        }
        let union = try directory.write("union.jsonl", all.joined(separator: "\n"))

        let reference = try await TestStore.make(engine, in: directory, name: "reference")
        let single = try summary(
            try await Postbackd.run([
                "ingest", "--format", "json", "--db", reference.argument, "--keys", TestKeys.directory, union,
            ])
        )

        let shared = try await TestStore.make(engine, in: directory, name: "shared")
        let runs = Mutex<[Postbackd.Run?]>([nil, nil, nil, nil])
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let run = try? Postbackd.runBlocking([
                "ingest", "--format", "json", "--db", shared.argument, "--keys", TestKeys.directory,
                "--commit-every", "500", inputs[index],
            ])
            runs.withLock { $0[index] = run }
        }
        var summaries: [[String: Int]] = []
        for run in runs.withLock({ $0 }) {
            let run = try #require(run)
            #expect(run.status == 0, "\(run.standardError)")
            summaries.append(try summary(run))
        }
        func sum(_ key: String) -> Int { summaries.map { $0[key] ?? 0 }.reduce(0, +) }
        #expect(sum("read") == 2 * (single["read"] ?? 0))
        #expect(sum("accepted") == single["accepted"], "accepted over the workers = one run of the union")
        #expect(sum("quarantined") == 2 * (single["quarantined"] ?? 0))
        #expect(sum("accepted") + sum("duplicates") + sum("quarantined") == sum("read"))
        #expect(try await shared.count("postbacks") == single["accepted"])
        let keys =
            "SELECT ad_network_id || '/' || transaction_id || '/' || postback_sequence_index || '/' || key_space FROM postbacks ORDER BY 1"
        let sharedKeys = try await shared.strings(keys)
        let referenceKeys = try await reference.strings(keys)
        #expect(sharedKeys == referenceKeys)
        // Each worker read every bad line it was given: quarantine keeps one row per file and line.
        #expect(try await shared.count("quarantine") == 2 * reference.count("quarantine"))
    }

    @Test("several processes creating the same new store at once all succeed", arguments: TestEngine.available)
    func creationRace(_ engine: TestEngine) async throws {
        var written: [String] = []
        for index in 0..<3 {
            written.append(
                try directory.write(
                    "race-\(index).jsonl",
                    try await Postbackd.generated(count: 20, seed: 100 + index, duplicates: 0, invalid: 0)
                )
            )
        }
        let inputs = written
        for round in 0..<(engine == .sqlite ? 8 : 4) {
            let store = try await TestStore.make(engine, in: directory, name: "race-\(round)")
            let results = Mutex<[(status: Int32, message: String)]>(Array(repeating: (-1, ""), count: 3))
            DispatchQueue.concurrentPerform(iterations: 3) { index in
                let run = try? Postbackd.runBlocking([
                    "ingest", "--db", store.argument, "--keys", TestKeys.directory, inputs[index],
                ])
                results.withLock { $0[index] = (run?.status ?? -1, run?.standardError ?? "") }
            }
            let (statuses, messages) = results.withLock { ($0.map(\.status), $0.map(\.message)) }
            #expect(statuses == [0, 0, 0], "round \(round): \(messages)")
            #expect(try await store.count("postbacks") == 60)
            #expect(try await store.count("ingest_runs", where: "status = 'completed'") == 3)
        }
    }

    @Test(
        "PostgreSQL restarted in the middle of a run: the worker retries or stops saying so; a re-run completes it",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func postgresRestart() async throws {
        // A server of its own, so that restarting it disturbs no other test.
        let server = try PostgresDevServer(folder: directory.path + "/pg")
        defer { server.stop() }
        let url = try await server.start()
        // Every run reads standard input, so that each names its postbacks' input alike.
        let corpus = try await Postbackd.generated(count: 6000, seed: 31)
        let lines = corpus.split(separator: "\n")
        let arguments = { (database: String) in
            [
                "ingest", "--db", database, "--keys", TestKeys.directory, "--received-at", "2026-11-21T06:00:00Z",
                "--commit-every", "200", "-",
            ]
        }
        let clean = try await TestStore.make(.postgres, in: directory, name: "clean")
        #expect(try await Postbackd.run(arguments(clean.argument), input: Array(corpus.utf8)).status == 0)

        // Fed half its input, restarted once two commits are in: the run cannot have ended.
        let errors = Pipe()
        let fed = try FedProcess(arguments(url), standardOutput: FileHandle.nullDevice, standardError: errors)
        let process = fed.process
        try await fed.feed(lines.prefix(lines.count / 2))
        let restarting = TestStore(engine: .postgres, location: try StoreLocation(url))
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && Date() < deadline {
            let count = Int((try? await restarting.strings("SELECT count(*) FROM postbacks").first ?? nil) ?? "0") ?? 0
            if count >= 400 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(process.isRunning, "the restart must land while the worker runs")
        try await server.restart(pauseSeconds: 1)
        // The rest, unless it stopped (then the write fails: its input is closed).
        try? await fed.feed(lines.dropFirst(lines.count / 2))
        try? fed.end()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // Stopped while writing, it says what was committed is kept; stopped while it opened the
        // store (before anything was written), that the server could not be reached.
        #expect(
            process.terminationStatus == 0
                || (process.terminationStatus == 2
                    && (message.contains("run the same command again")
                        || message.contains("the server cannot be reached"))),
            "status \(process.terminationStatus): \(message)"
        )
        let rerun = try await Postbackd.run(arguments(url), input: Array(corpus.utf8))
        #expect(rerun.status == 0, "\(rerun.standardError)")
        compare(
            try await TestStore(engine: .postgres, location: StoreLocation(url)).dump(),
            try await clean.dump(),
            "after a server restart and a re-run"
        )
    }

    @Test(
        "a network's daily forwards compressed: .jsonl.gz and standard input ingest as the plain file; a truncated archive is named, exit 2, what was read before it stored"
    )
    func compressedForwards() async throws {
        let day = try directory.write(
            "day.jsonl",
            try await Postbackd.generated(count: 3000, seed: 60, duplicates: 0, invalid: 0.01)
        )
        let size = try #require(try FileManager.default.attributesOfItem(atPath: day)[.size] as? Int)
        let compress = try await Shell.run(
            "cd \(Shell.quoted(directory.path)) && gzip -c day.jsonl > day.jsonl.gz && zstd -q -c day.jsonl > day.jsonl.zst && head -c $(( $(stat -c %s day.jsonl.gz) / 2 )) day.jsonl.gz > cut.jsonl.gz",
            in: directory.path
        )
        #expect(compress.status == 0, "\(compress.output)")
        func ingest(_ name: String, _ input: String) async throws -> (Postbackd.Run, TestStore) {
            let store = TestStore(engine: .sqlite, location: .sqlite(path: directory.path + "/\(name).sqlite"))
            let run = try await Postbackd.run([
                "ingest", "--db", store.argument, "--keys", TestKeys.directory, "--channel", "network-x",
                "--received-at", "2026-11-21", input,
            ])
            return (run, store)
        }
        let (plainRun, plain) = try await ingest("plain", day)
        #expect(plainRun.status == 0, "\(plainRun.standardError)")
        let stored = try await plain.strings("SELECT transaction_id FROM postbacks ORDER BY transaction_id")
        #expect(stored.count > 2900)
        for archive in ["day.jsonl.gz", "day.jsonl.zst"] {
            let (run, store) = try await ingest(archive, directory.path + "/" + archive)
            #expect(run.status == 0, "\(archive): \(run.standardError)")
            #expect(try await store.strings("SELECT transaction_id FROM postbacks ORDER BY transaction_id") == stored)
            #expect(try await store.count("quarantine") == plain.count("quarantine"))
            #expect(try await store.count("postbacks", where: "channel <> 'network-x'") == 0)
        }
        let piped = try await Shell.run(
            "cd \(Shell.quoted(directory.path)) && gzip -c day.jsonl | '\(Postbackd.executable)' ingest --db piped.sqlite --keys '\(TestKeys.directory)' -",
            in: directory.path
        )
        #expect(piped.status == 0, "\(piped.output)")
        let pipedStore = TestStore(engine: .sqlite, location: .sqlite(path: directory.path + "/piped.sqlite"))
        #expect(try await pipedStore.count("postbacks") == stored.count)

        let (cutRun, cut) = try await ingest("cut", directory.path + "/cut.jsonl.gz")
        #expect(cutRun.status == 2)
        #expect(
            cutRun.standardError.contains("cut.jsonl.gz")
                && cutRun.standardError.contains("the gzip archive is truncated: it ends inside its compressed data"),
            "\(cutRun.standardError)"
        )
        let kept = try await cut.count("postbacks")
        #expect(kept > 100 && kept < stored.count, "\(kept) of \(stored.count) (\(size) bytes plain)")
        // The line the cut went through is not quarantined as a fragment: the archive is read
        // again whole once it is fixed.
        let digests = "SELECT raw_sha256 FROM quarantine"
        #expect(Set(try await cut.strings(digests)).isSubset(of: Set(try await plain.strings(digests))))
        let (rerun, _) = try await ingest("cut", directory.path + "/day.jsonl.gz")
        #expect(rerun.status == 0)
        #expect(try await cut.strings("SELECT transaction_id FROM postbacks ORDER BY transaction_id") == stored)
    }
}

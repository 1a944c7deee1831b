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

/// A primary with a synchronous streaming standby (two throwaway clusters of
/// `scripts/postgres-dev.sh`), postbackd given both in one multi-host URL; the primary is
/// killed (SIGKILL, every process of it) under load and the standby promoted.
@Suite(
    "failover to a synchronous standby",
    .serialized,
    .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set"),
    .timeLimit(.minutes(25))
)
struct FailoverTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("failover")
    }

    /// The pair, and the URL naming both (primary first), for writers.
    private func pair() async throws -> (primary: PostgresDevServer, standby: PostgresDevServer, url: String) {
        let primary = try PostgresDevServer(folder: directory.path + "/primary")
        let standby = try PostgresDevServer(folder: directory.path + "/standby")
        let primaryURL = try await PostgresURL(try primary.start())
        let standbyURL = try await PostgresURL(try standby.startStandby(of: primary))
        var url = primaryURL
        url.servers += standbyURL.servers
        url.sessionAttributes = .readWrite
        return (primary, standby, url.description)
    }

    /// The postbacks stored at `url`, each as `transaction id/sequence index`.
    private static func storedIDs(_ url: String) async throws -> Set<String> {
        let store = TestStore(engine: .postgres, location: try StoreLocation(url))
        return Set(
            try await store.strings("SELECT transaction_id || '/' || postback_sequence_index FROM postbacks")
                .compactMap { $0 }
        )
    }

    /// A postback's `transaction id/sequence index` (a transaction's three postbacks share its id).
    private static func transactionID(_ body: Substring) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            let id = object["transaction-id"] as? String
        else { return nil }
        return "\(id)/\((object["postback-sequence-index"] as? Int) ?? 0)"
    }

    /// Eight clients post `bodies` to `server` until they run out (or `stop` is set), each
    /// answer recorded with when it was sent and when it came (status 0: no answer).
    private static func load(
        _ bodies: [Substring],
        to server: ServerProcess,
        client: HTTPClient,
        answered: Tally,
        until stop: Flag? = nil
    ) async -> [Answered] {
        let next = Tally()
        return await withTaskGroup(of: [Answered].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine: [Answered] = []
                    while stop?.value.load(ordering: .relaxed) != true {
                        let index = next.value.add(1, ordering: .relaxed).oldValue
                        guard index < bodies.count else { break }
                        let sent = ContinuousClock.now
                        let answer = try? await client.send(
                            .POST,
                            server.base + ServeTests.skan,
                            body: Array(bodies[index].utf8)
                        )
                        mine.append(
                            Answered(
                                id: transactionID(bodies[index]) ?? "",
                                status: Int(answer?.status ?? 0),
                                json: answer?.jsonStatus,
                                sent: sent,
                                at: .now
                            )
                        )
                        answered.value.add(1, ordering: .relaxed)
                    }
                    return mine
                }
            }
            var all: [Answered] = []
            for await part in group { all += part }
            return all
        }
    }

    @Test(
        "serve: every postback answered 200 is on the promoted standby; the switch is answered 503; serve resumes without a restart"
    )
    func serveFailover() async throws {
        let (primary, standby, url) = try await pair()
        defer {
            standby.stop()
            primary.stop()
        }
        let server = try await ServerProcess.start(
            ["--db", url, "--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory],
            directory: directory.path
        )
        // 400 before the kill, more than 1,000 after the promotion: 3,500 leave room for the switch
        // at CI's pace (6,000, killed after 800, held this suite, the tests' longest, at nearly
        // 3 minutes of CI's 5).
        let corpus = try await Postbackd.generated(count: 3500, seed: 40, duplicates: 0, invalid: 0)
        let bodies = corpus.split(separator: "\n")
        let client = try HTTPClient.forTests()

        // Eight clients post the corpus, each answer recorded with when it came.
        let answered = Tally()
        let load = Task { await Self.load(bodies, to: server, client: client, answered: answered) }
        while answered.value.load(ordering: .relaxed) < 400 { try await Task.sleep(for: .milliseconds(20)) }
        try await primary.kill()
        // The switch itself, as an operator's promotion takes a while: the requests sent in it are
        // what this test is about (answered 200 once stored, or 503), so this wait stays.
        try await Task.sleep(for: .seconds(3))
        try await standby.promote()
        let promoted = ContinuousClock.now
        let answers = await load.value

        // Every request was answered: 200 stored, or 503 during the switch; none lost.
        #expect(answers.count == bodies.count)
        #expect(
            answers.allSatisfy { ($0.status == 200 && $0.json == "stored") || $0.status == 503 },
            "\(Set(answers.map { "\($0.status) \($0.json ?? "-")" }))"
        )
        let ok = answers.filter { $0.status == 200 }
        let refused = answers.filter { $0.status == 503 }
        // Requests during the switch are answered 503 (none, when the promotion lands within a
        // request's 7 s).
        // serve found the promoted standby by itself: postbacks answered 200 after it.
        #expect(ok.filter { $0.at > promoted + .seconds(2) }.count > 1000, "serve resumed after the promotion")
        #expect(answers.last { $0.status == 503 }.map { $0.at < promoted + .seconds(15) } ?? true)

        // Every postback answered 200 is on the new primary.
        let stored = try await Self.storedIDs(standby.url())
        let missing = ok.filter { !stored.contains($0.id) }
        #expect(missing.isEmpty, "answered 200 but not on the new primary: \(missing.prefix(5).map(\.id))")

        // Sent again, a refused postback is stored; an accepted one is a duplicate.
        for answer in refused.prefix(5) {
            let body = try #require(bodies.first { Self.transactionID($0) == answer.id })
            let again = try await client.send(.POST, server.base + ServeTests.skan, body: Array(body.utf8))
            #expect(again.jsonStatus == "stored" || again.jsonStatus == "duplicate", "\(again.body)")
        }
        let body = try #require(bodies.first { Self.transactionID($0) == ok.first?.id })
        let again = try await client.send(.POST, server.base + ServeTests.skan, body: Array(body.utf8))
        #expect(again.jsonStatus == "duplicate", "\(again.status) \(again.body)")
        #expect(server.stop() == 0, "\(server.standardError)")
        // What an operator sees: the switch in the log.
        #expect(server.standardError.contains("the database's server changed"), "\(server.standardError)")
    }

    @Test("ingest: a run across the failover finishes, and every postback of its input is on the promoted standby")
    func ingestFailover() async throws {
        let (primary, standby, url) = try await pair()
        defer {
            standby.stop()
            primary.stop()
        }
        let corpus = try await Postbackd.generated(count: 20000, seed: 41, duplicates: 0, invalid: 0)
        let lines = corpus.split(separator: "\n")
        let output = Pipe()
        let errors = Pipe()
        // Fed through its standard input: the run cannot end before the kill.
        let fed = try FedProcess(
            ["ingest", "--db", url, "--keys", TestKeys.directory, "--commit-every", "200", "--format", "json", "-"],
            standardOutput: output,
            standardError: errors
        )
        let process = fed.process
        try await fed.feed(lines.prefix(lines.count / 2))

        // Killed once a part of the input is committed, then promoted (`kill` returns once the
        // primary is gone); the rest of the input follows.
        let primaryStore = await TestStore(engine: .postgres, location: try StoreLocation(try primary.url()))
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && Date() < deadline {
            let count =
                Int((try? await primaryStore.strings("SELECT count(*) FROM postbacks").first ?? nil) ?? "0") ?? 0
            if count >= 400 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(process.isRunning, "the kill lands mid-run")
        try await primary.kill()
        try await standby.promote()
        try await fed.feed(lines.dropFirst(lines.count / 2))
        try fed.end()
        let standardError = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let standardOutput = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(standardError)")

        let expected = Set(lines.compactMap(Self.transactionID))
        #expect(expected.count == lines.count)
        let stored = try await Self.storedIDs(try standby.url())
        #expect(stored == expected, "\(expected.subtracting(stored).count) missing")
        #expect(standardOutput.contains("\"accepted\":\(expected.count),"), "\(standardOutput)")
        #expect(standardError.contains("the database's server changed"), "\(standardError)")
    }

    @Test("readers may ask for a standby; a writer that asks for one is refused; no server that fits is said as such")
    func sessionAttributes() async throws {
        let (primary, standby, writers) = try await pair()
        defer {
            standby.stop()
            primary.stop()
        }
        var url = try PostgresURL(writers)
        // The schema, made through the primary, and on the synchronous standby.
        let made = try await Postbackd.run(["ingest", "--db", writers, "--keys", TestKeys.directory, "-"], input: [])
        #expect(made.status == 0, "\(made.standardError)")

        // A writer asking for a standby: refused before anything is done.
        url.sessionAttributes = .standby
        let asked = try await Postbackd.run(
            ["ingest", "--db", url.description, "--keys", TestKeys.directory, "-"],
            input: []
        )
        #expect(asked.status == 2)
        #expect(
            asked.standardError.contains("target_session_attrs=standby, a session that cannot write"),
            "\(asked.standardError)"
        )

        // A reader on the standby, then with the standby away: `standby` finds none and says what
        // each server is; `prefer-standby` reads the primary.
        #expect(try await Postbackd.run(["models", "list", "--db", url.description]).status == 0)
        try await standby.halt()
        let none = try await Postbackd.run(["models", "list", "--db", url.description])
        #expect(none.status == 2)
        #expect(
            none.standardError.contains(
                "no server offers a standby session (\(url.servers[0]) is a primary; \(url.servers[1])"
            ),
            "\(none.standardError)"
        )
        url.sessionAttributes = .preferStandby
        #expect(try await Postbackd.run(["models", "list", "--db", url.description]).status == 0)

        // A writer when no server accepts writes (the primary gone, the standby not promoted).
        _ = try await standby.start()
        try await primary.kill()
        let stuck = try await Postbackd.run(["ingest", "--db", writers, "--keys", TestKeys.directory, "-"], input: [])
        #expect(stuck.status == 2)
        #expect(stuck.standardError.contains("no server offers a read-write session"), "\(stuck.standardError)")
        #expect(stuck.standardError.contains("is a standby (in recovery)"), "\(stuck.standardError)")
    }

    @Test(
        "serve --read-db: the reading routes read the standby (and go on while the primary is gone); keys stay on the primary, their use recorded there"
    )
    func readsOnStandby() async throws {
        let (primary, standby, writers) = try await pair()
        defer {
            standby.stop()
            primary.stop()
        }
        var readers = try await PostgresURL(try standby.url())
        readers.sessionAttributes = .standby
        // Refused before anything is done: a --read-db that is not PostgreSQL, or one beside SQLite.
        let sqlite = try await Postbackd.run([
            "serve", "--db", directory.path + "/x.sqlite", "--read-db", readers.description,
        ])
        #expect(sqlite.status == 2)
        #expect(sqlite.standardError.contains("--read-db takes a PostgreSQL URL"), "\(sqlite.standardError)")
        let notPostgres = try await Postbackd.run(["serve", "--db", writers, "--read-db", "reports.sqlite"])
        #expect(notPostgres.status == 2)
        #expect(notPostgres.standardError.contains("--read-db takes a PostgreSQL URL"), "\(notPostgres.standardError)")
        let malformed = try await Postbackd.run([
            "serve", "--db", writers, "--read-db", "postgres://db2.internal/postbackd",
        ])
        #expect(malformed.standardError.contains("--read-db postgres://db2.internal/postbackd is not a PostgreSQL URL"))

        // Postbacks stored and aggregated on the primary; a key that may read every app.
        let corpus = try await Postbackd.generated(count: 600, seed: 43, duplicates: 0, invalid: 0)
        let file = directory.path + "/postbacks.jsonl"
        try corpus.write(toFile: file, atomically: true, encoding: .utf8)
        let ingested = try await Postbackd.run(["ingest", "--db", writers, "--keys", TestKeys.directory, file])
        #expect(ingested.status == 0, "\(ingested.standardError)")
        #expect(try await Postbackd.run(["aggregate", "--db", writers]).status == 0)
        let added = try await Postbackd.run(["keys", "add", "--db", writers, "reporting", "--all-apps"])
        #expect(added.status == 0, "\(added.standardError)")
        let bearer = [
            ("Authorization", "Bearer " + added.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        ]

        let server = try await ServerProcess.start(
            ["--db", writers, "--read-db", readers.description, "--keys", TestKeys.directory],
            directory: directory.path
        )
        let client = try HTTPClient.forTests()
        // The pull API pages through every stored postback, read on the standby (once replayed).
        func pulled(after start: String = "") async throws -> (rows: Int, cursor: String) {
            var rows = 0
            var cursor = start
            while true {
                let page = try await client.send(
                    .GET,
                    server.base + "/api/v1/postbacks?limit=250" + (cursor.isEmpty ? "" : "&after=" + cursor),
                    headers: bearer
                )
                #expect(page.status == 200, "\(page.body)")
                let count = Int(page.header("X-Postbackd-Rows") ?? "") ?? 0
                cursor = page.header("X-Postbackd-Cursor") ?? cursor
                guard page.status == 200, count > 0 else { return (rows, cursor) }
                rows += count
            }
        }
        var (rows, end) = try await pulled()
        for _ in 0..<20 where rows < 600 {
            try await Task.sleep(for: .milliseconds(250))
            (rows, end) = try await pulled()
        }
        #expect(rows == 600)

        // A transaction running on the primary across a pull: the standby must not hand out a
        // cursor past it, or the rows it commits later would be skipped for good. (A standby's
        // snapshot lists no running transaction; its xmin does.)
        let primaryURL = try await primary.url()
        #expect(
            try await Shell.run("psql -X -q \(Shell.quoted(primaryURL)) -c 'CREATE TABLE hold (x int)'", in: ".").status
                == 0
        )
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "psql", "-X", "-q", primaryURL, "-c",
            "BEGIN; INSERT INTO hold VALUES (1); SELECT pg_sleep(6); COMMIT;",
        ]
        try holder.run()
        let more = try await Postbackd.generated(count: 50, seed: 44, duplicates: 0, invalid: 0)
        try more.write(toFile: file, atomically: true, encoding: .utf8)
        // Once the holding transaction has its id (its INSERT done), not after a fixed second.
        let holding =
            "SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND query LIKE '%INSERT INTO hold%'"
        for _ in 0..<200 {
            let run = try await Shell.run(
                "psql -X -q -At \(Shell.quoted(primaryURL)) -c \(Shell.quoted(holding))",
                in: "."
            )
            if run.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(try await Postbackd.run(["ingest", "--db", writers, "--keys", TestKeys.directory, file]).status == 0)
        let onStandby = TestStore(engine: .postgres, location: try StoreLocation(readers.description))
        for _ in 0..<40 where (try? await onStandby.count("postbacks")) != 650 {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await onStandby.count("postbacks") == 650)
        #expect(holder.isRunning, "the holding transaction runs across the pull")
        let during = try await pulled(after: end)
        #expect(during.rows == 0, "nothing past the running transaction: \(during)")
        holder.waitUntilExit()
        var after = (rows: 0, cursor: during.cursor)
        for _ in 0..<40 where after.rows < 50 {
            try await Task.sleep(for: .milliseconds(250))
            after = try await pulled(after: during.cursor)
        }
        #expect(after.rows == 50, "the rows committed after the holding transaction began are read once it ends")
        // A cursor from a server that has replayed further comes back as it was, not lower.
        let ahead = "postgres:4000000000"
        #expect(try await pulled(after: ahead) == (0, ahead))

        let report = try await client.send(.GET, server.base + "/api/v1/report?by=date", headers: bearer)
        let days = try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [[String: Any]]
        #expect(report.status == 200 && days?.isEmpty == false, "\(report.status) \(report.body)")

        // The key's use is recorded on the primary (a standby takes no writes).
        var listed = ""
        for _ in 0..<40 {
            listed = try await Postbackd.run(["keys", "list", "--db", writers, "--format", "json"]).standardOutput
            if listed.contains("\"last_used_at\":\"") { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(listed.contains("\"last_used_at\":\""), "\(listed)")
        #expect(!server.standardError.contains("cannot record"), "\(server.standardError)")

        // With the primary gone, the reading routes still answer, from the standby.
        try await primary.kill()
        let summary = try await client.send(.GET, server.base + "/api/v1/summary", headers: bearer)
        #expect(summary.status == 200, "\(summary.body)")
        let dashboard = try await client.send(.GET, server.base + "/dashboard", headers: bearer)
        #expect(dashboard.status == 200)
        #expect(try await pulled().rows == 650)
        _ = server.stop()
    }

    /// Whether this machine can make network namespaces: root, iproute2 and nftables, and a
    /// kernel that lets it (a namespace made and removed).
    static var namespaces: Bool {
        guard getuid() == 0,
            ["/usr/sbin/ip", "/usr/sbin/nft"].allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }),
            let probe = try? Shell.runBlocking(
                "ip netns add postbackd-probe && ip netns del postbackd-probe",
                in: NSTemporaryDirectory()
            )
        else { return false }
        return probe.status == 0
    }

    @Test(
        "a 30 s partition under load: 503 within the bound, nothing answered 200 lost, serving again within seconds",
        .enabled(if: namespaces, "needs root, iproute2 and nftables (scripts/netem.sh)")
    )
    func partition() async throws {
        // A namespace and subnet of this process's own, apart from another run's on the machine.
        let id = getpid() % 250 + 1
        let netem = { (arguments: String) throws -> String in
            let run = try Shell.runBlocking(
                "POSTBACKD_NETEM_DIR=\(Shell.quoted(directory.path + "/netem")) POSTBACKD_NETEM_NAME=pbtest\(id) "
                    + "POSTBACKD_NETEM_NET=10.231.\(id) \(Shell.quoted(Repository.path("scripts/netem.sh"))) \(arguments)",
                in: directory.path,
                standardError: false
            )
            guard run.status == 0 else { throw NetemError(description: "scripts/netem.sh \(arguments) failed") }
            return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // The cluster's folder, its parents made reachable by the postgres user.
        _ = try PostgresDevServer(folder: directory.path + "/netem/pg")
        _ = try? netem("down")
        let url = try netem("up")
        defer { _ = try? netem("down") }
        let server = try await ServerProcess.start(
            ["--db", url, "--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory],
            directory: directory.path
        )
        let corpus = try await Postbackd.generated(count: 30000, seed: 42, duplicates: 0, invalid: 0)
        let bodies = corpus.split(separator: "\n")
        let client = try HTTPClient.forTests()
        let answered = Tally()
        let stop = Flag()
        let load = Task { await Self.load(bodies, to: server, client: client, answered: answered, until: stop) }
        while answered.value.load(ordering: .relaxed) < 500 { try await Task.sleep(for: .milliseconds(20)) }
        _ = try netem("partition")
        let cut = ContinuousClock.now
        try await Task.sleep(for: .seconds(30))  // the partition itself, not a wait
        let healed = ContinuousClock.now
        _ = try netem("heal")
        // The load goes on past the recovery bound (12 s) until 400 more answers came, enough for
        // the checks below of what was stored after it.
        let bound = healed + .seconds(12)
        var atBound: Int?
        while ContinuousClock.now < healed + .seconds(60) {
            let count = answered.value.load(ordering: .relaxed)
            if let atBound, count - atBound >= 400 { break }
            if atBound == nil && ContinuousClock.now > bound { atBound = count }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop.value.store(true, ordering: .relaxed)
        let answers = await load.value

        // Every request answered: 200 stored, or 503 while the database was away.
        #expect(
            answers.allSatisfy { ($0.status == 200 && $0.json == "stored") || $0.status == 503 },
            "\(Set(answers.map { "\($0.status) \($0.json ?? "-")" }))"
        )
        let during = answers.filter { $0.sent > cut + .seconds(1) && $0.at < healed }
        #expect(
            !during.isEmpty && during.allSatisfy { $0.status == 503 },
            "503 while partitioned: \(during.filter { $0.status != 503 }.prefix(5).map { "\($0.status) \($0.json ?? "-") sent \($0.sent - cut) answered \($0.at - cut)" })"
        )
        // Answered within the documented bound: the retries' 5 s and the 2 s margin, and slack.
        let slowest = answers.map { $0.at - $0.sent }.max() ?? .zero
        #expect(slowest < .seconds(10), "the slowest answer took \(slowest)")
        // Serving again within seconds of the link's return.
        let firstAfter = answers.filter { $0.status == 200 && $0.sent > healed }.map(\.at).min()
        let recovered = try #require(firstAfter, "nothing stored after the partition")
        #expect(recovered - healed < .seconds(12), "stored again \(recovered - healed) after the partition")
        #expect(answers.filter { $0.status == 200 && $0.sent > healed + .seconds(12) }.count > 100)

        let stored = try await Self.storedIDs(try netem("url"))
        let missing = answers.filter { $0.status == 200 && !stored.contains($0.id) }
        #expect(missing.isEmpty, "answered 200 but not stored: \(missing.prefix(5).map(\.id))")
        #expect(server.stop() == 0, "\(server.standardError)")
    }
}

/// An answer of the partition test's load: what was sent, and when.
private struct Answered: Sendable {
    let id: String
    let status: Int
    let json: String?
    let sent: ContinuousClock.Instant
    let at: ContinuousClock.Instant
}

private struct NetemError: Error, CustomStringConvertible {
    let description: String
}

import Foundation
import PostbackStore
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--db postgres://…` from the command line: the main job gives SQLite's numbers, and a
/// database that cannot be used stops every command before it reads input, without ever
/// printing the password.
@Suite("postbackd on PostgreSQL", .timeLimit(.minutes(20)))
struct PostgresCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("postgres-cli")
    }

    private func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, directory: directory.path, environment: environment)
    }

    /// The README's main job into `database`, and what people read of it.
    private func mainJob(_ database: String) async throws -> [String] {
        let models = try FileManager.default.contentsOfDirectory(atPath: Repository.path("SamplePostbacks/models"))
            .sorted()
            .map { Repository.path("SamplePostbacks/models/" + $0) }
        var outputs: [String] = []
        func step(_ arguments: [String]) async throws {
            let run = try await run(arguments + ["--db", database])
            #expect(run.status == 0, "\(arguments): \(run.standardError)")
            outputs.append("$ \(arguments.joined(separator: " "))\n" + Self.withoutClockReadings(run.standardOutput))
        }
        try await step(["models", "add"] + models)
        let ingest = try await run([
            "ingest", "--db", database, "--format", "json", "--keys", Repository.path("Keys/apple"), "--keys",
            TestKeys.directory, Repository.path("SamplePostbacks/apple"), Repository.path("SamplePostbacks/generated"),
        ])
        #expect(ingest.status == 0, "\(ingest.standardError)")
        // The summary's seconds and rate differ from run to run; its counts must not.
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(ingest.standardOutput.utf8)) as? [String: Any]
        )
        for key in [
            "read", "accepted", "duplicates", "conflicts", "signed_conflicts", "quarantined", "test_mode",
            "development",
        ] {
            outputs.append("ingest \(key): \(summary[key].map { "\($0)" } ?? "missing")")
        }
        try await step(["aggregate", "--format", "json"])
        try await step(["aggregate"])
        try await step(["models", "list"])
        try await step(["models", "list", "--format", "json"])
        try await step(["models", "show", "1254734734"])
        for format in ["table", "csv", "json"] {
            try await step(["report", "--format", format])
            try await step(["report", "--by", "date,app_id", "--format", format])
            try await step(["report", "--by", "app_id", "--events", "--format", format])
        }
        for by in [
            "ad_network_id,source_identifier", "source_app_id,source_domain", "version,fidelity_type",
            "redownload,did_win,postback_sequence_index", "country_code,marketplace_id",
        ] {
            try await step(["report", "--by", by, "--format", "csv"])
        }
        try await step(["report", "--from", "2026-11-15", "--to", "2026-11-17", "--by", "date", "--format", "csv"])
        return outputs
    }

    /// The output with what differs from run to run (how long a step took, when a model was
    /// added) replaced by placeholders.
    static func withoutClockReadings(_ output: String) -> String {
        output.replacing(#/"seconds":[0-9.]+/#, with: "\"seconds\":_")
            .replacing(#/ in [0-9.]+ s /#, with: " in _ s ")
            .replacing(#/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/#, with: "<time>")
    }

    @Test(
        "the main job on PostgreSQL prints what it prints on SQLite, step by step",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func mainJobMatchesSQLite() async throws {
        let postgres = try await TestStore.make(.postgres, in: directory, name: "main")
        let sqlite = try await TestStore.make(.sqlite, in: directory, name: "main")
        let expected = try await mainJob(sqlite.argument)
        let actual = try await mainJob(postgres.argument)
        #expect(actual.count == expected.count)
        for (got, want) in zip(actual, expected) where got != want {
            Issue.record("PostgreSQL printed:\n\(got.prefix(2000))\nSQLite printed:\n\(want.prefix(2000))")
        }
        #expect(expected.contains { $0.hasPrefix("$ aggregate\naggregated 3,301 postbacks over 9 days") })
    }

    /// A TCP port on 127.0.0.1 that nothing listens on: bound, then closed.
    private func closedPort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EIO) }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Every command that takes --db, with good inputs: the database must be what stops it.
    private func everyCommand(_ database: String) async throws -> [[String]] {
        let input = try directory.write("good.jsonl", try await Postbackd.generated(count: 20, seed: 3, invalid: 0))
        let model = Repository.path("SamplePostbacks/models/app-1254734734-game.json")
        return [
            ["ingest", "--db", database, "--keys", TestKeys.directory, input],
            ["models", "add", "--db", database, model],
            ["models", "list", "--db", database],
            ["models", "show", "--db", database, "1254734734"],
            ["aggregate", "--db", database],
            ["report", "--db", database],
            ["check", "--db", database],
        ]
    }

    @Test("a server that cannot be reached: every command stops with exit 2 naming the host, never the password")
    func unreachable() async throws {
        let port = try closedPort()
        let password = "pw-unreachable-7Q2x"
        for arguments in try await everyCommand("postgres://postbackd:\(password)@127.0.0.1:\(port)/postbackd") {
            let run = try await run(arguments, environment: ["POSTBACKD_LOG_LEVEL": "trace"])
            #expect(run.status == 2, "\(arguments): \(run.standardError)")
            #expect(run.standardError.contains("127.0.0.1:\(port)"), "\(run.standardError)")
            #expect(run.standardOutput.isEmpty, "\(arguments) printed a result: \(run.standardOutput)")
            #expect(!(run.standardOutput + run.standardError).contains(password))
        }
        // The same through POSTBACKD_DB.
        let viaEnvironment = try await run(
            ["report"],
            environment: ["POSTBACKD_DB": "postgresql://postbackd:\(password)@127.0.0.1:\(port)/postbackd"]
        )
        #expect(viaEnvironment.status == 2)
        #expect(viaEnvironment.standardError.contains("127.0.0.1:\(port)"))
        #expect(!(viaEnvironment.standardOutput + viaEnvironment.standardError).contains(password))
    }

    @Test(
        "a user the server refuses, or a database it does not have: exit 2 saying which, never the password",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func refused() async throws {
        let server = try #require(TestEngine.postgresURL)
        let password = "pw-refused-9Kd3"
        let host = "\(server.host):\(server.port)"
        let cases: [(url: String, says: String)] = [
            ("postgres://no_such_role:\(password)@\(host)/\(server.database)", "no_such_role"),
            ("postgres://\(server.user):\(password)@\(host)/no_such_database_pbt", "no_such_database_pbt"),
        ]
        for (url, says) in cases {
            for arguments in try await everyCommand(url) {
                let run = try await run(arguments, environment: ["POSTBACKD_LOG_LEVEL": "trace"])
                #expect(run.status == 2, "\(arguments): \(run.standardError)")
                #expect(run.standardError.contains(says), "\(run.standardError)")
                #expect(run.standardError.contains(host), "\(run.standardError)")
                #expect(run.standardOutput.isEmpty, "\(arguments) printed a result: \(run.standardOutput)")
                #expect(!(run.standardOutput + run.standardError).contains(password))
            }
        }
    }

    @Test(
        "a password given to a server that does not ask for it appears in no output or log, even at trace level",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func passwordNeverLogged() async throws {
        let store = try await TestStore.make(.postgres, in: directory, name: "secret")
        guard case .postgres(var url) = store.location else { return }
        let password = "pw-logged-3Vb8"
        url.password = password
        let text = "postgres://\(url.user):\(password)@\(url.host):\(url.port)/\(url.database)"
        let input = try directory.write("day.jsonl", try await Postbackd.generated(count: 50, seed: 5))
        var everything = ""
        for arguments in [
            ["ingest", "--db", text, "--keys", TestKeys.directory, input], ["aggregate", "--db", text],
            ["report", "--db", text], ["models", "list", "--db", text],
        ] {
            let run = try await run(arguments, environment: ["POSTBACKD_LOG_LEVEL": "trace"])
            #expect(run.status == 0, "\(arguments): \(run.standardError)")
            everything += run.standardOutput + run.standardError
        }
        #expect(everything.contains(":***@"), "the URL is named, redacted")
        #expect(!everything.contains(password))
    }

    @Test(
        "password authentication: the right password works, a wrong one is refused with exit 2, neither is ever printed",
        .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set")
    )
    func passwordAuthentication() async throws {
        // scripts/postgres-dev.sh makes this role, which must authenticate with SCRAM.
        let (role, password) = ("postbackd_password", "postbackd-dev-password")
        let store = try await TestStore.make(.postgres, in: directory, name: "password")
        guard case .postgres(let url) = store.location else { return }
        try await store.execute("ALTER DATABASE \(url.database) OWNER TO \(role)")
        let host = "\(url.host):\(url.port)"
        let right = "postgres://\(role):\(password)@\(host)/\(url.database)"
        let input = try directory.write("day.jsonl", try await Postbackd.generated(count: 30, seed: 8))
        var everything = ""
        for arguments in [
            ["ingest", "--db", right, "--keys", TestKeys.directory, input], ["aggregate", "--db", right],
            ["report", "--db", right],
        ] {
            let run = try await run(arguments, environment: ["POSTBACKD_LOG_LEVEL": "trace"])
            #expect(run.status == 0, "\(arguments): \(run.standardError)")
            everything += run.standardOutput + run.standardError
        }
        #expect(try await store.count("postbacks") > 0)
        #expect(!everything.contains(password))

        let wrong = "pw-wrong-6Rz4"
        for arguments in try await everyCommand("postgres://\(role):\(wrong)@\(host)/\(url.database)") {
            let run = try await run(arguments, environment: ["POSTBACKD_LOG_LEVEL": "trace"])
            #expect(run.status == 2, "\(arguments): \(run.standardError)")
            #expect(run.standardError.contains("refused user \(role)"), "\(run.standardError)")
            #expect(run.standardError.contains("password authentication failed"), "\(run.standardError)")
            #expect(!(run.standardOutput + run.standardError).contains(wrong))
        }
    }

    @Test("a --db URL that is not a valid PostgreSQL URL: exit 2 saying what is wrong, the password redacted")
    func malformed() async throws {
        let password = "pw-malformed-5Tn1"
        let cases: [(url: String, says: String)] = [
            (
                "postgres://u:\(password)@127.0.0.1/x?sslmode=verify-full",
                "sslmode verify-full is not disable, prefer or require"
            ),
            ("postgres://u:\(password)@127.0.0.1/x?application_name=x", "unknown parameter application_name"),
            ("postgres://u:\(password)@127.0.0.1/x?target_session_attrs=master", "target_session_attrs master is not"),
            ("postgres://u:\(password)@127.0.0.1:99999/x", "the port is not a number from 1 to 65535"),
            ("postgres://u:\(password)@127.0.0.1", "no database name after the host"),
            ("postgresql://127.0.0.1/x", "no user before @"),
        ]
        for (url, says) in cases {
            let run = try await run(["report", "--db", url])
            #expect(run.status == 2, "\(url): \(run.standardError)")
            #expect(run.standardError.contains(says), "\(run.standardError)")
            #expect(!run.standardError.contains(password), "\(run.standardError)")
        }
    }
}

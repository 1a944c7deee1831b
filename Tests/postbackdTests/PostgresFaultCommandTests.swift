import Foundation
import PostbackStore
import PostbackTestSupport
import Testing

/// Read-only use and `check` on a real PostgreSQL server: a role with only SELECT runs the
/// commands that read and is refused, in words, by those that write; `check` finds rows
/// edited by hand; a newer schema stops every command.
@Suite(
    "storage faults and check (PostgreSQL)",
    .enabled(if: TestEngine.postgresURL != nil, "POSTBACKD_TEST_POSTGRES_URL is not set"),
    .timeLimit(.minutes(20))
)
struct PostgresFaultCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("postgres-faults")
    }

    private func run(_ arguments: [String]) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, directory: directory.path)
    }

    private static let model = Repository.path("SamplePostbacks/models/app-1254734734-game.json")

    /// A database with postbacks, sightings, quarantine, a model and aggregates.
    private func makeStore(_ name: String) async throws -> TestStore {
        let store = try await TestStore.make(.postgres, in: directory, name: name)
        let input = try directory.write(
            "\(name).jsonl",
            try await Postbackd.generated(count: 300, seed: 13, duplicates: 0.1)
        )
        for arguments in [
            ["ingest", "--db", store.argument, "--keys", TestKeys.directory, input],
            ["models", "add", "--db", store.argument, Self.model], ["aggregate", "--db", store.argument],
        ] {
            let result = try await run(arguments)
            try #require(result.status == 0, "\(arguments): \(result.standardError)")
        }
        return store
    }

    @Test(
        "a role with only SELECT: report, models and check work; ingest, aggregate and models add are refused in words"
    )
    func selectOnlyRole() async throws {
        let store = try await makeStore("readonly")
        guard case .postgres(let url) = store.location else { return }
        let role = "pbt_reader_" + UUID().uuidString.lowercased().prefix(8)
        let password = "pw-reader-4Hq2"
        try await store.execute(
            "CREATE ROLE \(role) LOGIN PASSWORD '\(password)'",
            "GRANT USAGE ON SCHEMA public TO \(role)",
            "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role)"
        )
        defer {
            Task { try? await store.execute("DROP OWNED BY \(role)", "DROP ROLE \(role)") }
        }
        let reader = "postgres://\(role):\(password)@\(url.host):\(url.port)/\(url.database)"
        let before = try await store.dump()
        for arguments in [
            ["report", "--format", "csv"], ["report", "--by", "app_id", "--events", "--format", "json"],
            ["models", "list"],
            ["models", "show", "1254734734"],
        ] {
            let owner = try await run(arguments + ["--db", store.argument])
            let result = try await run(arguments + ["--db", reader])
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            #expect(result.standardOutput == owner.standardOutput, "\(arguments)")
            #expect(!(result.standardOutput + result.standardError).contains(password))
        }
        let check = try await run(["check", "--db", reader])
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("sound: no finding"))
        #expect(check.standardOutput.contains("amcheck bt_index_check: "))

        let input = try directory.write("more.jsonl", try await Postbackd.generated(count: 10, seed: 77, invalid: 0))
        for arguments in [
            ["ingest", "--keys", TestKeys.directory, input], ["aggregate"], ["models", "add", Self.model],
        ] {
            let result = try await run(arguments + ["--db", reader])
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("postgres://\(role):***@"), "\(result.standardError)")
            #expect(
                result.standardError.contains("its user lacks a privilege this command needs"),
                "\(arguments): \(result.standardError)"
            )
            #expect(!(result.standardOutput + result.standardError).contains(password))
        }
        #expect(try await store.dump() == before, "a refused command wrote")
    }

    @Test(
        "a server that accepts no writes (read-only transactions, as on a standby): writers exit 2 saying so, readers work"
    )
    func readOnlyServer() async throws {
        let store = try await makeStore("standby")
        guard case .postgres(let url) = store.location else { return }
        try await store.execute("ALTER DATABASE \(url.database) SET default_transaction_read_only = on")
        let before = try await store.dump()
        let report = try await run(["report", "--db", store.argument])
        #expect(report.status == 0, "\(report.standardError)")
        #expect(try await run(["check", "--db", store.argument]).status == 0)
        for arguments in [["aggregate"], ["models", "add", Self.model]] {
            let result = try await run(arguments + ["--db", store.argument])
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains("the server accepts no writes"),
                "\(arguments): \(result.standardError)"
            )
        }
        #expect(try await store.dump() == before)
    }

    @Test("check on PostgreSQL: sound, then rows edited by hand are findings with table and row")
    func checkFindsEdits() async throws {
        let store = try await makeStore("edited")
        let sound = try await run(["check", "--db", store.argument])
        #expect(sound.status == 0, "\(sound.standardOutput)\(sound.standardError)")
        let postback = try #require(
            try await store.strings("SELECT MIN(id) FROM postbacks WHERE id NOT IN (SELECT postback_id FROM sightings)")
                .first??.description
        )
        let quarantined = try #require(try await store.strings("SELECT MIN(id) FROM quarantine").first??.description)
        let sighting = try #require(try await store.strings("SELECT MIN(id) FROM sightings").first??.description)
        let gone = try #require(
            try await store.strings("SELECT postback_id FROM sightings WHERE id = \(sighting)").first??.description
        )
        try await store.execute(
            "UPDATE postbacks SET transaction_id = 'edited-by-hand' WHERE id = \(postback)",
            "UPDATE quarantine SET raw = convert_to('edited', 'UTF8') WHERE id = \(quarantined)",
            // As a superuser editing by hand can: past the foreign keys.
            "SET session_replication_role = replica",
            "DELETE FROM postbacks WHERE id = \(gone)"
        )
        let edited = try await run(["check", "--db", store.argument])
        #expect(edited.status == 1, "\(edited.standardOutput)\(edited.standardError)")
        let lines = edited.outputLines
        #expect(lines.contains { $0.hasPrefix("finding: postbacks row \(postback): dedup_key ") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("finding: quarantine row \(quarantined): raw_sha256 ") }, "\(lines)")
        #expect(
            lines.contains { $0 == "finding: sightings row \(sighting): postback_id \(gone) is not a stored postback" },
            "\(lines)"
        )
        #expect(
            lines.contains { $0.hasPrefix("finding: aggregate_daily: date ") && $0.contains("the store holds") },
            "\(lines)"
        )
    }

    @Test("a newer postbackd's schema: every command exits 2 saying so")
    func newerSchema() async throws {
        let store = try await makeStore("newer")
        try await store.execute(
            "INSERT INTO postbackd_migrations (version, name) VALUES (999, 'from a later postbackd')"
        )
        let input = try directory.write(
            "newer-more.jsonl",
            try await Postbackd.generated(count: 10, seed: 78, invalid: 0)
        )
        for arguments in [
            ["report"], ["models", "list"], ["check"], ["aggregate"], ["ingest", "--keys", TestKeys.directory, input],
        ] {
            let result = try await run(arguments + ["--db", store.argument])
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains("was written by a newer postbackd (schema 999"),
                "\(arguments): \(result.standardError)"
            )
        }
    }
}

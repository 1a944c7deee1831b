import Foundation
import GRDB
import PostbackKit
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Storage faults on real SQLite files, from the command line: every command meets them with
/// exit 2 and one sentence naming the store and what to do; the commands that read need no
/// write permission and leave nothing behind; `check` finds damage and hand-edited rows.
@Suite("storage faults and check (SQLite)", .timeLimit(.minutes(20)))
struct StoreFaultCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("store-faults")
        // `nobody` must reach the folders the unprivileged runs use.
        chmod(directory.path, 0o755)
    }

    func run(
        _ arguments: [String],
        in folder: String? = nil,
        asUnprivilegedUser: Bool = false
    ) async throws
        -> Postbackd.Run
    {
        try await Postbackd.run(arguments, directory: folder ?? directory.path, asUnprivilegedUser: asUnprivilegedUser)
    }

    static let model = Repository.path("SamplePostbacks/models/app-1254734734-game.json")

    /// A store with postbacks, duplicates (sightings), quarantine, a model and aggregates.
    func makeStore(_ name: String, count: Int = 300, in folder: String? = nil) async throws -> String {
        let folder = folder ?? directory.path
        let input = try directory.write(
            "\(name)-input.jsonl",
            try await Postbackd.generated(count: count, seed: 11, duplicates: 0.1)
        )
        let path = folder + "/" + name
        for arguments in [
            ["ingest", "--db", path, "--keys", TestKeys.directory, input],
            ["models", "add", "--db", path, Self.model],
            ["aggregate", "--db", path],
        ] {
            let result = try await run(arguments)
            try #require(result.status == 0, "\(arguments): \(result.standardError)")
        }
        return path
    }

    /// Each file in `folder` with the SHA-256 of its bytes: what "nothing written" compares.
    func state(_ folder: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))) ?? Data()
            files[name] = SHA256Digest.hash(Array(data))
        }
        return files
    }

    /// Overwrites the root page of each table with bytes that are no page at all.
    func damage(_ path: String, tables: [String]) throws {
        let (pageSize, roots) = try DatabaseQueue(path: path).read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096,
                try tables.map {
                    try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [$0]) ?? 0
                }
            )
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        for root in roots where root > 1 {
            try handle.seek(toOffset: UInt64((root - 1) * pageSize))
            handle.write(Data(repeating: 0xA5, count: pageSize))
        }
    }

    /// Every command that opens a store, with good inputs: the store must be what stops it.
    func everyCommand(_ path: String) async throws -> (reading: [[String]], writing: [[String]]) {
        let input = try directory.write("more.jsonl", try await Postbackd.generated(count: 20, seed: 5, invalid: 0))
        return (
            [
                ["report", "--db", path], ["models", "list", "--db", path],
                ["models", "show", "--db", path, "1254734734"],
                ["check", "--db", path],
            ],
            [
                ["ingest", "--db", path, "--keys", TestKeys.directory, input], ["aggregate", "--db", path],
                ["models", "add", "--db", path, Self.model],
            ]
        )
    }

    @Test("damaged pages: each command exits 2 saying the store is damaged and to run check; check finds it")
    func damagedPages() async throws {
        let path = try await makeStore("damaged.sqlite")
        let tables = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND (name IN ('postbacks', 'conversion_models') OR name LIKE 'aggregate_%')"
            )
        }
        try damage(path, tables: tables)
        let commands = try await everyCommand(path)
        let before = try state(directory.path)
        for arguments in commands.reading where arguments[0] != "check" {
            let result = try await run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains("postbackd: \(path) is damaged ("),
                "\(arguments): \(result.standardError)"
            )
            #expect(result.standardError.contains("restore it from a backup, or run `postbackd check --db \(path)`"))
            #expect(result.standardOutput.isEmpty)
        }
        #expect(try state(directory.path) == before, "a command that reads wrote something")
        for arguments in commands.writing where arguments[0] != "models" {
            let result = try await run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("\(path) is damaged ("), "\(arguments): \(result.standardError)")
        }

        let check = try await run(["check", "--db", path])
        #expect(check.status == 1, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("integrity_check: "))
        #expect(check.standardOutput.contains("NOT SOUND"))
        let json = try await run(["check", "--db", path, "--format", "json"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        #expect(object["sound"] as? Bool == false)
        #expect((object["engine"] as? [String: Any])?["outcome"] as? String == "problems")
    }

    @Test("a truncated file: exit 2, damaged, from the commands that read and from check; nothing written")
    func truncated() async throws {
        let whole = try await makeStore("whole.sqlite")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        let folder = directory.path + "/truncated"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/truncated.sqlite"
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: path))
        let before = try state(folder)
        for arguments in try await everyCommand(path).reading + [["aggregate", "--db", path]] {
            let result = try await run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(result.standardError.contains("\(path) is damaged ("), "\(arguments): \(result.standardError)")
        }
        #expect(try state(folder).keys == before.keys)
        #expect(try state(folder)[path.split(separator: "/").last.map(String.init) ?? ""] == before["truncated.sqlite"])
    }

    @Test(
        "a text file, another program's SQLite file, a newer postbackd's store: every command exits 2 and touches nothing"
    )
    func notThisStore() async throws {
        let folder = directory.path + "/foreign"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let text = folder + "/notes.sqlite"
        try "these are notes, not postbacks\n".write(toFile: text, atomically: true, encoding: .utf8)
        let other = folder + "/crm.sqlite"
        try await DatabaseQueue(path: other).write { db in
            try db.execute(
                sql: "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'a')"
            )
        }
        let newer = try await makeStore("newer.sqlite", count: 30, in: folder)
        try await DatabaseQueue(path: newer).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from a later postbackd')")
        }
        let cases: [(path: String, says: String)] = [
            (text, "\(text) is not a postbackd store, nor an SQLite database at all"),
            (other, "\(other) is another program's SQLite database (it holds customers), not a postbackd store"),
            (newer, "\(newer) was written by a newer postbackd; use that version, or another --db"),
        ]
        let before = try state(folder)
        for (path, says) in cases {
            let commands = try await everyCommand(path)
            for arguments in commands.reading + commands.writing {
                let result = try await run(arguments)
                #expect(result.status == 2, "\(arguments): \(result.standardError)")
                #expect(result.standardError.contains(says), "\(arguments): \(result.standardError)")
                #expect(result.standardOutput.isEmpty, "\(arguments): \(result.standardOutput)")
            }
        }
        #expect(try state(folder) == before, "a refused store was changed")
    }

    @Test("an older schema: the commands that read do not migrate it, and say a writer must")
    func olderSchema() async throws {
        let folder = directory.path + "/older"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try await makeStore("older.sqlite", count: 30, in: folder)
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v12:%'")
        }
        let before = try state(folder)
        for arguments in try await everyCommand(path).reading {
            let result = try await run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains(
                    "\(path) was written by an older postbackd and this command does not migrate it"
                )
            )
        }
        #expect(try state(folder) == before)
    }

    @Test(
        "read-only: report, models and check as a user who may not write the file or its folder, in WAL mode, leave no file"
    )
    func readOnlyFileAndFolder() async throws {
        let folder = directory.path + "/shared"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try await makeStore("shared.sqlite", in: folder)
        let mode = try await DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode")
        }
        #expect(mode == "wal")
        let expected = try await run(["report", "--db", path, "--format", "csv"]).standardOutput
        let models = try await run(["models", "list", "--db", path]).standardOutput
        #expect(expected.contains("date,") && models.contains("1254734734"))

        chmod(path, 0o444)
        chmod(folder, 0o555)
        defer { chmod(folder, 0o755) }
        let before = try state(folder)
        #expect(!before.keys.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") })
        let report = try await run(["report", "--db", path, "--format", "csv"], asUnprivilegedUser: true)
        #expect(report.status == 0, "\(report.standardError)")
        #expect(report.standardOutput == expected)
        let list = try await run(["models", "list", "--db", path], asUnprivilegedUser: true)
        #expect(list.status == 0 && list.standardOutput == models, "\(list.standardError)")
        let show = try await run(["models", "show", "--db", path, "1254734734"], asUnprivilegedUser: true)
        #expect(show.status == 0, "\(show.standardError)")
        let check = try await run(["check", "--db", path], asUnprivilegedUser: true)
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("sound: no finding"))
        #expect(try state(folder) == before, "a command that reads left or changed a file")

        // The commands that write say the store is read-only here, and change nothing.
        let aggregate = try await run(["aggregate", "--db", path], asUnprivilegedUser: true)
        #expect(aggregate.status == 2)
        #expect(
            aggregate.standardError.contains("\(path) is read-only to this command")
                || aggregate.standardError.contains("cannot open the database \(path)"),
            "\(aggregate.standardError)"
        )
        #expect(
            !aggregate.standardError.contains("SQLite error"),
            "the driver's text alone: \(aggregate.standardError)"
        )
        #expect(try state(folder) == before)

        // A file the user may not write, in a folder they may: still nothing left beside it.
        chmod(folder, 0o777)
        let writableFolder = try await run(["report", "--db", path, "--format", "csv"], asUnprivilegedUser: true)
        #expect(
            writableFolder.status == 0 && writableFolder.standardOutput == expected,
            "\(writableFolder.standardError)"
        )
        #expect(try state(folder) == before)
    }

    @Test("read-only while a writer has the store open (its -wal and -shm exist): the report reads through them")
    func readOnlyBesideWriter() async throws {
        let path = try await makeStore("live.sqlite")
        let expected = try await run(["report", "--db", path, "--format", "csv"]).standardOutput
        // A writer's connection, as ingest or serve holds one: the log and shared memory exist.
        let writer = try DatabaseQueue(path: path)
        try await writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        try await writer.write { db in
            try db.execute(
                sql:
                    "INSERT INTO ingest_runs (started_at, status, inputs, postbackd_version) VALUES ('2026-11-24T00:00:00Z', 'running', '[]', 'test')"
            )
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        chmod(path, 0o444)
        let report = try await run(["report", "--db", path, "--format", "csv"], asUnprivilegedUser: true)
        #expect(report.status == 0, "\(report.standardError)")
        #expect(report.standardOutput == expected)
        // The run the writer left running (committed into the log) is a notice, not a fault.
        let check = try await run(["check", "--db", path], asUnprivilegedUser: true)
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("is still marked running"))
        _ = writer
    }

    @Test("a store locked by another writer past the 60 s wait: aggregate exits 2 saying so; report still reads")
    func lockedPastTheWait() async throws {
        let path = try await makeStore("locked.sqlite", count: 50)
        let expected = try await run(["report", "--db", path, "--format", "csv"]).standardOutput
        // Another process's write transaction, held open (as a stuck writer would).
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: path, configuration: configuration)
        try await holder.writeWithoutTransaction { db in
            try db.execute(
                sql:
                    "BEGIN IMMEDIATE; INSERT INTO ingest_runs (started_at, status, inputs, postbackd_version) VALUES ('2026-11-24T00:00:00Z', 'running', '[]', 'test')"
            )
        }
        defer { try? holder.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") } }
        let started = Date()
        let aggregate = try await run(["aggregate", "--db", path])
        #expect(aggregate.status == 2, "\(aggregate.standardError)")
        #expect(
            aggregate.standardError.contains("\(path) stayed locked by another process for 60 s"),
            "\(aggregate.standardError)"
        )
        #expect(Date().timeIntervalSince(started) >= 59, "it did not wait")
        // A reader is not blocked by a writer (WAL).
        let report = try await run(["report", "--db", path, "--format", "csv"])
        #expect(report.status == 0 && report.standardOutput == expected, "\(report.standardError)")
    }

    @Test(
        "a full disk (a small tmpfs): ingest and aggregate exit 2 saying so; what was committed is sound",
        .enabled(if: SmallDisk.available, "mounting a tmpfs needs root (CAP_SYS_ADMIN)")
    )
    func fullDisk() async throws {
        let mountPoint = directory.path + "/small"
        // A new store's 26 migrations need about 5 MiB at their peak on 16 KiB pages (1.5 MiB of
        // file, 3.4 MiB of write-ahead log), so the disk holds a new store and then fills with
        // the postbacks.
        try SmallDisk.mount(at: mountPoint, size: "8m")
        defer { SmallDisk.unmount(mountPoint) }
        let path = mountPoint + "/store.sqlite"
        let input = try directory.write("big.jsonl", try await Postbackd.generated(count: 12_000, seed: 21))
        let ingest = try await run(["ingest", "--db", path, "--keys", TestKeys.directory, input])
        #expect(ingest.status == 2, "\(ingest.standardError.suffix(400))")
        #expect(
            ingest.standardError.contains("\(path) cannot grow: the disk is full"),
            "\(ingest.standardError.suffix(400))"
        )
        #expect(ingest.standardError.contains("What was committed is kept; run the same command again to finish"))
        #expect(!ingest.standardError.contains("SQLite error"))
        let check = try await run(["check", "--db", path])
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")

        // A store with postbacks on the same disk, filled: aggregate cannot write its rows.
        let prepared = try await makeStore("to-aggregate.sqlite", count: 200)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: prepared, toPath: path)
        SmallDisk.fill(mountPoint)
        let aggregate = try await run(["aggregate", "--db", path])
        #expect(aggregate.status == 2, "\(aggregate.standardError)")
        #expect(aggregate.standardError.contains("\(path) cannot grow: the disk is full"), "\(aggregate.standardError)")
    }

    @Test("model files: not found, not permitted, over the 16 MiB limit, a folder, not JSON: each said, nothing stored")
    func modelFiles() async throws {
        let folder = directory.path + "/models"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let large = folder + "/large.json"
        _ = FileManager.default.createFile(atPath: large, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: large))
        try handle.truncate(atOffset: 41 << 20)
        try handle.close()
        let secret = folder + "/secret.json"
        try FileManager.default.copyItem(atPath: Self.model, toPath: secret)
        chmod(secret, 0o600)
        let notJSON = try directory.write("models/notes.json", "not a model")
        let store = folder + "/store.sqlite"
        let result = try await run(
            ["models", "add", "--db", store, large, folder + "/missing.json", secret, folder, notJSON],
            asUnprivilegedUser: true
        )
        #expect(result.status == 2, "\(result.standardError)")
        let errors = result.standardError
        #expect(errors.contains("no model was stored"))
        #expect(errors.contains("\(large) is larger (41 MiB) than the 16 MiB limit for a model file"), "\(errors)")
        #expect(errors.contains("\(folder)/missing.json: no such file"), "\(errors)")
        if Postbackd.changesUser || getuid() != 0 {
            #expect(errors.contains("\(secret): not permitted to read it"), "\(errors)")
        }
        #expect(errors.contains("\(folder): a folder, not a model file"), "\(errors)")
        #expect(errors.contains("\(notJSON):"), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: store), "a refused add created the store")
    }
}

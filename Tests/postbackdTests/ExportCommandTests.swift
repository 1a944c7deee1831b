import Foundation
import PostbackTestSupport
import Testing

/// `postbackd export` as a user runs it.
@Suite("postbackd export", .timeLimit(.minutes(20)))
struct ExportCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("export-command")
    }

    @Test("a consumer's cursor moves only after the output is written whole: a full disk exports the same rows again")
    func fullDisk() async throws {
        let database = directory.path + "/store.sqlite"
        #expect(try await Postbackd.run(["ingest", "--db", database, Repository.path("SamplePostbacks")]).status != 2)
        // Standard output on a full device: the write fails, the cursor stays.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = [
            "-c", "'\(Postbackd.executable)' export --db '\(database)' --consumer warehouse > /dev/full",
        ]
        let errors = Pipe()
        shell.standardError = errors
        try shell.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 2, "\(message)")
        #expect(message.contains("cannot write"), "\(message)")
        #expect(message.contains("cursor of warehouse is unchanged"))

        let output = directory.path + "/out.jsonl"
        let first = try await Postbackd.run(["export", "--db", database, "--consumer", "warehouse", "--output", output])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardError.contains("exported 8 postbacks to \(output)"), "\(first.standardError)")
        #expect(!FileManager.default.fileExists(atPath: output + ".partial"))
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 8)
        let again = try await Postbackd.run(["export", "--db", database, "--consumer", "warehouse"])
        #expect(again.status == 0 && again.standardOutput.isEmpty)

        // A folder that does not exist: exit 2, nothing recorded.
        let missing = try await Postbackd.run([
            "export", "--db", database, "--output", directory.path + "/no/such/out.jsonl",
        ])
        #expect(missing.status == 2 && missing.standardError.contains("cannot write"))
        let badDays = try await Postbackd.run([
            "export", "--db", database, "--from", "2026-11-20", "--to", "2026-11-19",
        ])
        #expect(badDays.status == 2)
    }
}

import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// Inputs compressed with gzip or zstd (issue 60): networks' daily forwards arrive so. Read as
/// a stream, in bounded memory, each entry named as in the plain file; a truncated or damaged
/// archive is an input that could not be read, named with its file, after the entries before it.
@Suite("Compressed inputs")
struct CompressedInputTests {
    let directory: TemporaryDirectory
    /// ``lines`` as JSON Lines.
    let plain: String

    /// The day's lines, signed once for every test: 2,500 postbacks (1.5 MB), so that the
    /// plain bytes cross the reader's 1 MiB chunk and the compressed ones its 256 KiB reads.
    static let lines: [String] = {
        var lines = (0..<2_500).map { index in
            (try? SamplePostback.signedJSON(
                .v4_0,
                transactionID: String(format: "00000000-0000-4000-8000-%012d", index),
                conversionValue: .fine(index % 64)
            )) ?? "unsigned"
        }
        lines[17] = "not a postback"
        return lines
    }()

    init() throws {
        directory = try TemporaryDirectory("compressed")
        plain = try directory.write("day.jsonl", Self.lines.joined(separator: "\n") + "\n")
    }

    /// Runs `command` in the test's folder (gzip and zstd are Debian's commands).
    func shell(_ command: String) async throws {
        let run = try await Shell.run("cd \(Shell.quoted(directory.path)) && " + command, in: directory.path)
        #expect(run.status == 0, "\(command): \(run.output)")
    }

    /// What the reader yields of each entry but its source: location, problem, bytes.
    func read(_ path: String) throws -> (entries: [String], diagnostics: [InputDiagnostic]) {
        let (entries, diagnostics) = try readAll([path])
        return (
            entries.map {
                "\($0.location.index) \($0.location.line) \($0.location.form) \($0.result.verdict) \($0.text)"
            },
            diagnostics
        )
    }

    @Test(
        "gzip and zstd archives, several members or frames too, read as the plain file: the same entries, lines and verdicts"
    )
    func sameAsPlain() async throws {
        let expected = try read(plain)
        #expect(expected.entries.count == 2_500 && expected.diagnostics.isEmpty)
        try await shell("gzip -k -c day.jsonl > day.jsonl.gz && zstd -q -c day.jsonl > day.jsonl.zst")
        // Two members (two frames) one after another: what `cat` of two daily archives gives.
        try await shell("head -n 1000 day.jsonl > a && tail -n +1001 day.jsonl > b")
        try await shell("gzip -c a > ab.jsonl.gz && gzip -c b >> ab.jsonl.gz")
        try await shell("zstd -q -c a > ab.jsonl.zst && zstd -q -c b >> ab.jsonl.zst")
        // Known by its bytes, not its name.
        try await shell("cp day.jsonl.gz archive.bin")
        for name in ["day.jsonl.gz", "day.jsonl.zst", "ab.jsonl.gz", "ab.jsonl.zst", "archive.bin"] {
            let read = try read(directory.path + "/" + name)
            #expect(read.diagnostics.isEmpty, "\(name): \(read.diagnostics)")
            #expect(read.entries == expected.entries, "\(name): \(read.entries.count) entries")
        }
        // One postback, and an array, compressed.
        let one = try directory.write("one.json", try SamplePostback.signedJSON(.v3_0))
        try await shell("gzip -k one.json && printf '[%s]' \"$(cat one.json)\" | zstd -q -o array.json.zst")
        let object = try readAll([one + ".gz"])
        #expect(object.entries.map(\.location.form) == [.object] && object.entries[0].result.verdict == .valid)
        let array = try readAll([directory.path + "/array.json.zst"])
        #expect(array.entries.map(\.location.form) == [.array] && array.entries[0].result.verdict == .valid)
    }

    @Test("a folder is walked for compressed postback files too, and not for other compressed files")
    func walked() async throws {
        try await shell(
            "mkdir -p in/sub && gzip -c day.jsonl > in/a.jsonl.gz && zstd -q -c day.jsonl -o in/sub/b.ndjson.zst && gzip -c day.jsonl > in/notes.txt.gz"
        )
        let (files, _) = try InputPaths.expand([directory.path + "/in"])
        #expect(files.map { URL(fileURLWithPath: $0.name).lastPathComponent } == ["a.jsonl.gz", "b.ndjson.zst"])
    }

    @Test("a truncated or damaged archive is named with its file and what is wrong; the entries before it are read")
    func truncatedAndDamaged() async throws {
        let expected = try read(plain).entries
        try await shell("gzip -c day.jsonl > day.jsonl.gz && zstd -q -c day.jsonl > day.jsonl.zst")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: plain + ".gz")[.size] as? Int)
        try await shell(
            "head -c \(size / 2) day.jsonl.gz > cut.jsonl.gz && head -c $(( $(stat -c %s day.jsonl.zst) / 2 )) day.jsonl.zst > cut.jsonl.zst"
        )
        for (name, format) in [("cut.jsonl.gz", "gzip"), ("cut.jsonl.zst", "zstd")] {
            let read = try read(directory.path + "/" + name)
            #expect(read.diagnostics.count == 1)
            let problem = try #require(read.diagnostics.first)
            #expect(problem.severity == .error && problem.source.hasSuffix(name))
            #expect(
                problem.message.contains("the \(format) archive is truncated: it ends inside its compressed data"),
                "\(problem.message)"
            )
            #expect(read.entries.count > 100 && read.entries.count < expected.count)
            #expect(Array(expected.prefix(read.entries.count)) == read.entries, "\(name): the entries before are whole")
        }
        // Bytes changed in the middle: gzip's check of its data finds it.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: plain + ".gz")))
        for index in stride(from: bytes.count / 2, to: bytes.count / 2 + 64, by: 1) { bytes[index] ^= 0x5A }
        let damaged = try directory.write("damaged.jsonl.gz", bytes: bytes)
        let read = try read(damaged)
        #expect(read.diagnostics.first?.message.contains("not a valid gzip archive") == true, "\(read.diagnostics)")
        #expect(read.entries.count < expected.count)
    }
}

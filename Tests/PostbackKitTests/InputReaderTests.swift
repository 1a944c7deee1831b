import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// Everything an ``EntryReader`` yields for `paths`, with the verdict of each entry.
struct ReadEntry {
    var location: EntryLocation
    var problem: EntryReadProblem?
    var bytes: [UInt8]
    var result: VerificationResult

    var text: String { String(decoding: bytes, as: UTF8.self) }
}

func readAll(
    _ paths: [String],
    entriesPerBatch: Int = 256
) throws -> (entries: [ReadEntry], diagnostics: [InputDiagnostic]) {
    let (files, walkDiagnostics) = try InputPaths.expand(paths)
    let reader = EntryReader(files: files, entriesPerBatch: entriesPerBatch)
    let verifier = PostbackVerifier(keyRing: try TestKeys.ring)
    var entries: [ReadEntry] = []
    var diagnostics = walkDiagnostics
    while let batch = reader.nextBatch() {
        for entry in batch.entries {
            let bytes = Array(batch.bytes(of: entry))
            let result = verifier.check(bytes, problem: entry.problem, line: entry.location.line)
            entries.append(ReadEntry(location: entry.location, problem: entry.problem, bytes: bytes, result: result))
        }
        diagnostics += batch.readerState.diagnostics
    }
    diagnostics += reader.takeDiagnostics()
    return (entries, diagnostics)
}

@Suite("Input forms")
struct InputReaderTests {
    let directory: TemporaryDirectory
    let postbacks: [String]

    init() throws {
        directory = try TemporaryDirectory()
        postbacks = try (0..<3).map { index in
            try SamplePostback.signedJSON(.v4_0, transactionID: "00000000-0000-4000-8000-00000000000\(index)")
        }
    }

    @Test("a file with one pretty-printed object is one postback at index 0")
    func singleObject() throws {
        let data = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(postbacks[0].utf8)),
            options: .prettyPrinted
        )
        let path = try directory.write("one.json", bytes: Array(data))
        let (entries, _) = try readAll([path])
        #expect(entries.count == 1)
        #expect(entries[0].location.form == .object)
        #expect(entries[0].location.index == 0)
        #expect(entries[0].result.verdict == .valid)
        #expect(entries[0].bytes == Array(data), "the raw bytes are kept exactly as read")
    }

    @Test("a JSON array gives one entry per element with its index and line")
    func array() throws {
        let path = try directory.write("array.json", "[\n  " + postbacks.joined(separator: ",\n  ") + "\n]\n")
        let (entries, _) = try readAll([path])
        #expect(entries.map(\.location.index) == [0, 1, 2])
        #expect(entries.map(\.location.line) == [2, 3, 4])
        #expect(entries.allSatisfy { $0.result.verdict == .valid && $0.location.form == .array })
        #expect(entries.map(\.text) == postbacks)
        #expect(entries[1].location.description == path + "[1]")
    }

    @Test("JSON Lines: blank lines are skipped and the index is the line number minus one")
    func jsonLines() throws {
        let path = try directory.write("lines.jsonl", postbacks[0] + "\n\n" + postbacks[1] + "\r\n   \n" + postbacks[2])
        let (entries, _) = try readAll([path])
        #expect(entries.map(\.location.index) == [0, 2, 4])
        #expect(entries.map(\.location.line) == [1, 3, 5])
        #expect(entries.allSatisfy { $0.result.verdict == .valid })
        #expect(entries[1].text == postbacks[1], "the carriage return is not part of the entry")
        #expect(entries[2].location.description == path + ":5")
    }

    @Test("a file of objects one per line is JSON Lines whatever its name")
    func linesByContent() throws {
        let path = try directory.write("day.json", postbacks.joined(separator: "\n") + "\n")
        let (entries, _) = try readAll([path])
        #expect(entries.count == 3)
        #expect(entries.allSatisfy { $0.location.form == .lines && $0.result.verdict == .valid })
    }

    @Test("in JSON Lines, a bad line is one malformed entry and the rest are read")
    func badLines() throws {
        let lines = [
            postbacks[0],
            "[1, 2]",
            "{\"version\": \"3.0\",",
            String(decoding: [UInt8]("{\"a\":\"".utf8) + [0xFE] + Array("\"}".utf8), as: UTF8.self),
            postbacks[1],
        ]
        var bytes = Array(lines[0...2].joined(separator: "\n").utf8) + [0x0A]
        bytes += [UInt8]("{\"a\":\"".utf8) + [0xFE] + Array("\"}\n".utf8)
        bytes += Array((lines[4] + "\n" + postbacks[2].prefix(40)).utf8)  // the last line is truncated
        let path = try directory.write("mixed.jsonl", bytes: bytes)
        let (entries, _) = try readAll([path])
        #expect(entries.map(\.result.verdict) == [.valid, .malformed, .malformed, .malformed, .valid, .malformed])
        #expect(entries[1].result.reason == "expected a JSON object, found an array")
        #expect(entries[2].result.reason?.contains("line 3") == true, "\(entries[2].result.reason ?? "")")
        #expect(entries[3].result.reason?.contains("invalid UTF-8 byte 0xFE") == true)
        #expect(entries[3].result.reason?.contains("line 4") == true)
        #expect(entries[5].location.line == 6)
        #expect(entries[5].result.reason?.contains("line 6") == true)
    }

    @Test("a broken array keeps what came before the break and quarantines the rest")
    func brokenArrays() throws {
        let cases: [(String, String, [Verdict])] = [
            ("trailing comma", "[" + postbacks[0] + ",]", [.valid, .malformed]),
            ("double comma", "[" + postbacks[0] + ",," + postbacks[1] + "]", [.valid, .malformed, .valid]),
            ("missing comma", "[" + postbacks[0] + " " + postbacks[1] + "]", [.malformed]),
            ("truncated", "[" + postbacks[0] + "," + postbacks[1].prefix(50), [.valid, .malformed]),
            ("content after", "[" + postbacks[0] + "] {}", [.valid, .malformed]),
            ("element not an object", "[" + postbacks[0] + ", 42]", [.valid, .malformed]),
            ("strings with brackets", "[{\"a\":\"],[\\\"\"}, " + postbacks[1] + "]", [.malformed, .valid]),
        ]
        for (name, text, expected) in cases {
            let path = try directory.write("\(name).json", text)
            let (entries, _) = try readAll([path])
            #expect(entries.map(\.result.verdict) == expected, "\(name): \(entries.map { $0.result.reason ?? "" })")
            #expect(entries.map(\.location.index) == Array(0..<expected.count), "\(name)")
        }
    }

    @Test("an empty array or empty file yields nothing and a warning")
    func empty() throws {
        for (name, text) in [("empty.json", ""), ("blank.json", "  \n"), ("none.json", "[ ]")] {
            let path = try directory.write(name, text)
            let (entries, diagnostics) = try readAll([path])
            #expect(entries.isEmpty, "\(name)")
            #expect(diagnostics.contains { $0.severity == .warning && $0.source == path }, "\(name)")
        }
    }

    @Test("a byte order mark is skipped")
    func byteOrderMark() throws {
        let path = try directory.write("bom.json", bytes: [0xEF, 0xBB, 0xBF] + Array(postbacks[0].utf8))
        let (entries, _) = try readAll([path])
        #expect(entries.map(\.result.verdict) == [.valid])
    }

    @Test("a broken pretty-printed object is one malformed entry")
    func brokenSingleObject() throws {
        let path = try directory.write("broken.json", "{\n  \"version\": \"3.0\",\n  \"app-id\": 5\n")
        let (entries, _) = try readAll([path])
        #expect(entries.count == 1)
        #expect(entries[0].result.verdict == .malformed)
        #expect(entries[0].result.reason?.contains("unexpected end of input") == true)
    }

    @Test("postbacks over 64 KiB and lines over 1 MiB are refused and reading goes on")
    func sizeLimits() throws {
        let padding = String(repeating: "x", count: 70 * 1024)
        let big = postbacks[0].dropLast() + ",\"pad\":\"\(padding)\"}"
        let huge = "{\"pad\":\"" + String(repeating: "y", count: 2 * 1024 * 1024) + "\"}"
        let path = try directory.write(
            "big.jsonl",
            [postbacks[0], String(big), huge, postbacks[1]].joined(separator: "\n") + "\n"
        )
        let (entries, _) = try readAll([path])
        #expect(entries.map(\.result.verdict) == [.valid, .malformed, .malformed, .valid])
        #expect(entries[1].result.reason?.contains("refuses postbacks over 65536 bytes") == true)
        #expect(entries[2].result.reason?.contains("over 1048576 bytes") == true)
        #expect(entries[1].bytes.count == InputLimits.maximumPostbackBytes, "the first 64 KiB are kept for quarantine")
        #expect(entries[2].bytes.count == InputLimits.maximumPostbackBytes)
        #expect(entries.map(\.location.line) == [1, 2, 3, 4])

        let array = try directory.write(
            "big-array.json",
            "[" + [postbacks[0], String(big), postbacks[2]].joined(separator: ",") + "]"
        )
        let (arrayEntries, _) = try readAll([array])
        #expect(arrayEntries.map(\.result.verdict) == [.valid, .malformed, .valid])
    }

    @Test(
        "arrays and lines larger than the read buffer stream across chunk boundaries",
        arguments: [InputForm.array, .lines]
    )
    func largeFiles(_ form: InputForm) throws {
        let signer = try TestKeys.signer
        let count = 4_000  // about 1.5 MiB: more than one read chunk
        let lines = try (0..<count).map { index in
            try signer.signed(
                SamplePostback.make(.v3_0, transactionID: String(format: "00000000-0000-4000-8000-%012d", index))
            ).jsonText()
        }
        let path =
            form == .array
            ? try directory.write("large.json", "[\n" + lines.joined(separator: ",\n") + "\n]")
            : try directory.write("large.jsonl", lines.joined(separator: "\n"))
        let (entries, _) = try readAll([path], entriesPerBatch: 97)
        #expect(entries.count == count)
        #expect(entries.map(\.text) == lines)
        #expect(entries.map(\.location.index) == Array(0..<count))
        #expect(entries.allSatisfy { $0.result.verdict == .valid })
        #expect(entries.last?.location.line == count + (form == .array ? 1 : 0))
    }

    @Test("folders are walked recursively in path order, hidden files and other extensions skipped")
    func folders() throws {
        try directory.write("b/z.json", postbacks[2])
        try directory.write("b/a.jsonl", postbacks[1])
        try directory.write("b.json", postbacks[0])
        try directory.write("a/c.NDJSON", postbacks[0])
        try directory.write("a/.hidden.json", postbacks[0])
        try directory.write(".git/x.json", postbacks[0])
        try directory.write("a/readme.md", "not a postback")
        let (entries, _) = try readAll([directory.path])
        let names = entries.map { $0.location.source.dropFirst(directory.path.count + 1) }
        #expect(names == ["a/c.NDJSON", "b.json", "b/a.jsonl", "b/z.json"])
    }

    @Test("paths are read in the order given; a missing path is an error before anything is read")
    func pathOrder() throws {
        let first = try directory.write("2.json", postbacks[1])
        let second = try directory.write("1.json", postbacks[0])
        let (entries, _) = try readAll([first, second])
        #expect(entries.map(\.location.source) == [first, second])
        #expect(throws: PostbackKitError.self) { try readAll([first, directory.path + "/missing.json"]) }
    }
}

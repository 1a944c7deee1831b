import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// `postbackd verify`, run as a user runs it: the built binary, real files, exit statuses.
@Suite("postbackd verify", .timeLimit(.minutes(20)))
struct VerifyCommandTests {
    @Test("every vector gives its expected verdict through the CLI, as JSON Lines")
    func vectors() async throws {
        let run = try await Postbackd.run(["verify", "--format", "json", Repository.vectors])
        #expect(run.status == 1, "two vectors are invalid")
        let objects = try run.outputLines.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.count == 12)
        let index = try String(contentsOfFile: Repository.vectors + "/INDEX.md", encoding: .utf8)
        for object in objects {
            let file = try #require((object["source"] as? String)?.split(separator: "/").last.map(String.init))
            let row = try #require(index.split(separator: "\n").first { $0.contains("| \(file) |") })
            let expected = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }[3]
            let verdict = try #require(object["verdict"] as? String)
            #expect(expected.hasPrefix(verdict), "\(file): \(verdict), expected \(expected)")
            #expect((object["development"] as? Bool) == expected.contains("development"), "\(file)")
            for key in [
                "source", "index", "verdict", "version", "transaction_id", "ad_network_id", "reason", "test_mode",
                "key", "kind",
            ] {
                #expect(object.keys.contains(key), "\(file) has \(key)")
            }
            if verdict == "valid" {
                #expect(object["key"] is String)
            } else {
                #expect((object["reason"] as? String)?.isEmpty == false)
            }
        }
        #expect(run.standardError.contains("12 postbacks in 12 files: 10 valid (1 development), 2 invalid"))
    }

    @Test("text output: one line per postback and a summary; exit 0 when all are valid")
    func textAllValid() async throws {
        let files = ["apple-4.0-web-fine-win.json", "real-1.0-su67r6k2v3.json"].map { Repository.vectors + "/" + $0 }
        let run = try await Postbackd.run(["verify"] + files)
        #expect(run.status == 0)
        #expect(run.outputLines.count == 3)
        #expect(
            run.outputLines[0] == files[0] + ": valid 4.0 com.example 6aafb7a5-0170-41b5-bbe4-fe71dedf1e30 (apple-p256)"
        )
        #expect(run.outputLines[2] == "2 postbacks in 2 files: 2 valid, 0 invalid, 0 malformed, 0 unsupported")
    }

    @Test("standard input: - and no path at all, for each input form", arguments: ["object", "array", "lines"])
    func standardInput(_ form: String) async throws {
        let postbacks = try (0..<3).map {
            try SamplePostback.signedJSON(.v3_0, transactionID: "00000000-0000-4000-8000-00000000000\($0)")
        }
        let text: String
        switch form {
        case "object": text = postbacks[0]
        case "array": text = "[" + postbacks.joined(separator: ",") + "]"
        default: text = postbacks.joined(separator: "\n")
        }
        for arguments in [
            ["verify", "--keys", TestKeys.directory, "--format", "json", "-"],
            ["verify", "--keys", TestKeys.directory, "--format", "json"],
        ] {
            let run = try await Postbackd.run(arguments, input: Array(text.utf8))
            #expect(run.status == 0, "\(run.standardError)")
            let lines = run.outputLines
            #expect(lines.count == (form == "object" ? 1 : 3))
            #expect(lines.allSatisfy { $0.contains("\"source\":\"-\"") && $0.contains("\"verdict\":\"valid\"") })
            if form != "object" { #expect(lines[2].contains("\"index\":2")) }
        }
    }

    @Test("--keys replaces Apple's keys")
    func keysOption() async throws {
        let signed = try SamplePostback.signedJSON(.v2_0)
        #expect(try await Postbackd.run(["verify", "-"], input: Array(signed.utf8)).status == 1)
        let run = try await Postbackd.run(["verify", "--keys", TestKeys.directory, "-"], input: Array(signed.utf8))
        #expect(run.status == 0)
        #expect(run.standardOutput.contains("(test-p192)"))
        let apple = try await Postbackd.run([
            "verify", "--keys", TestKeys.directory, Repository.vectors + "/apple-2.1-win.json",
        ])
        #expect(apple.status == 1)
        #expect(apple.standardOutput.contains("does not verify with test-p256"))
    }

    @Test("a --keys folder without p192.pem says 1.0 and 2.0 cannot be verified")
    func missingCurve() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("p256.pem", try String(contentsOfFile: TestKeys.directory + "/p256.pem", encoding: .utf8))
        let run = try await Postbackd.run([
            "verify", "--keys", directory.path, Repository.vectors + "/real-1.0-su67r6k2v3.json",
        ])
        #expect(run.status == 1)
        #expect(run.standardOutput.contains("no P-192 key is loaded, so version 1.0 cannot be verified"))
    }

    @Test("exit status 2 for usage and input errors, with a message")
    func usageErrors() async throws {
        let missing = try await Postbackd.run(["verify", "/nonexistent/postbacks.json"])
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("/nonexistent/postbacks.json"))
        let badFormat = try await Postbackd.run(["verify", "--format", "xml", Repository.vectors])
        #expect(badFormat.status == 2)
        #expect(badFormat.standardError.contains("xml"))
        let badKeys = try await Postbackd.run(["verify", "--keys", "/nonexistent", Repository.vectors])
        #expect(badKeys.status == 2)
        #expect(badKeys.standardError.contains("no such folder"))
        let unknown = try await Postbackd.run(["frobnicate"])
        #expect(unknown.status == 2)
    }

    @Test("a file that fails while being read: results for the rest, exit status 2")
    func unreadableFile() async throws {
        // /proc/self/mem opens for anyone (root included) and its first read fails with EIO.
        let run = try await Postbackd.run(["verify", "/proc/self/mem", Repository.vectors + "/apple-3.0-win.json"])
        #expect(run.status == 2)
        #expect(run.standardError.contains("/proc/self/mem: error: read failed"), "\(run.standardError)")
        #expect(run.standardOutput.contains("apple-3.0-win.json: valid"))
    }

    @Test("a file that cannot be opened is reported and the rest is read")
    func unopenableFile() async throws {
        guard getuid() != 0 else { return }  // root opens everything; the /proc/self/mem test covers root
        let directory = try TemporaryDirectory()
        let locked = try directory.write("locked.json", try SamplePostback.signedJSON(.v3_0))
        chmod(locked, 0)
        let run = try await Postbackd.run(["verify", locked, Repository.vectors + "/apple-3.0-win.json"])
        #expect(run.status == 2)
        #expect(run.standardError.contains("locked.json: error: cannot open"))
        #expect(run.standardOutput.contains("apple-3.0-win.json: valid"))
    }

    @Test("--explain shows the signed message with visible separators and its SHA-256")
    func explain() async throws {
        let file = Repository.vectors + "/apple-4.0-web-fine-win.json"
        let text = try await Postbackd.run(["verify", "--explain", file])
        #expect(
            text.standardOutput.contains(
                "4.0\\u2063com.example\\u20635239\\u2063525463029\\u20636aafb7a5-0170-41b5-bbe4-fe71dedf1e30\\u2063false\\u2063example.com\\u20631\\u2063true\\u20630"
            )
        )
        #expect(text.standardOutput.contains("sha256 e5efd5b424697d4eac347fb678f79ea33d0d03488ac7a44901130991697b6a32"))
        #expect(text.standardOutput.contains("(112 bytes)"))
        let json = try await Postbackd.run(["verify", "--explain", "--format", "json", file])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        let explain = try #require(object["explain"] as? [String: Any])
        let message = try #require((explain["messages"] as? [[String: Any]])?.first)
        #expect(message["sha256"] as? String == "e5efd5b424697d4eac347fb678f79ea33d0d03488ac7a44901130991697b6a32")
        #expect((message["message"] as? String)?.contains("\u{2063}") == true)
        #expect(json.standardOutput.contains("\\u2063"), "the separator is escaped in the JSON text")
    }

    @Test("--explain on a failing test-mode postback shows both messages tried")
    func explainTestModeRetry() async throws {
        var postback = SamplePostback.make(.v3_0, withOptional: false)
        postback.sourceAppID = 0
        var signed = try TestKeys.signer.signed(postback, asTestDevice: true)
        signed.appID += 1
        let run = try await Postbackd.run(
            ["verify", "--explain", "--keys", TestKeys.directory, "-"],
            input: Array(signed.jsonText().utf8)
        )
        #expect(run.status == 1)
        #expect(run.standardOutput.contains("signed message, as received"))
        #expect(run.standardOutput.contains("test-mode retry: without source-app-id 0"))
    }

    @Test("help carries examples and exit statuses; --version works")
    func help() async throws {
        let root = try await Postbackd.run(["--help"])
        #expect(root.status == 0)
        #expect(root.standardOutput.contains("postbackd verify SamplePostbacks/apple"))
        #expect(root.standardOutput.contains("Exit status"))
        let verify = try await Postbackd.run(["verify", "--help"])
        #expect(verify.status == 0)
        #expect(verify.standardOutput.contains("Examples:"))
        #expect(verify.standardOutput.contains("2 usage error"))
        let version = try await Postbackd.run(["--version"])
        #expect(version.status == 0)
        #expect(version.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == PostbackdVersion.current)
    }

    @Test("malformed entries name their file and line, and the run goes on")
    func malformedLocations() async throws {
        let directory = try TemporaryDirectory()
        let good = try SamplePostback.signedJSON(.v4_0)
        let path = try directory.write(
            "day.jsonl",
            good + "\n{\"version\":\"4.0\"\n"
                + good.replacingOccurrences(of: "\"app-id\":525463029", with: "\"app-id\":\"x\"") + "\n"
        )
        let run = try await Postbackd.run(["verify", "--keys", TestKeys.directory, path])
        #expect(run.status == 1)
        #expect(run.outputLines[1].hasPrefix(path + ":2: malformed"))
        #expect(run.outputLines[2].hasPrefix(path + ":3: malformed 4.0 example123.skadnetwork"))
        #expect(run.outputLines[2].hasSuffix("app-id: expected an integer, found a string (\"x\")"))
        #expect(run.outputLines[3] == "3 postbacks in 1 file: 1 valid, 0 invalid, 2 malformed, 0 unsupported")
    }

    @Test("generate writes the same file for the same seed, and verify accepts it with --keys")
    func generate() async throws {
        let arguments = [
            "generate", "--key", TestKeys.directory + "/p192-private.pem", "--key",
            TestKeys.directory + "/p256-private.pem",
            "--versions", "1.0,2.0,2.1,2.2,3.0,4.0", "--count", "300", "--seed", "7", "--invalid", "0", "--duplicates",
            "0.1",
        ]
        let first = try await Postbackd.run(arguments)
        let second = try await Postbackd.run(arguments)
        #expect(first.status == 0)
        #expect(first.outputLines.count == 300)
        #expect(first.standardOutput == second.standardOutput)
        let verify = try await Postbackd.run(
            ["verify", "--keys", TestKeys.directory, "--format", "json"],
            input: Array(first.standardOutput.utf8)
        )
        #expect(
            verify.status == 0,
            "\(verify.standardOutput.split(separator: "\n").filter { !$0.contains("\"valid\"") }.prefix(3))"
        )
        let versions = Set(
            verify.outputLines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["version"] as? String
            }
        )
        #expect(versions == ["1.0", "2.0", "2.1", "2.2", "3.0", "4.0"])
    }
}

import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `postbackd reconcile`, run as the built binary on a store filled by `ingest --channel`.
@Suite("postbackd reconcile")
struct ReconcileCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("reconcile-cli")
    }

    @Test(
        "the corpus ingested from compressed files on its channels, as a table, CSV and JSON; bad options and a truncated archive exit 2",
        arguments: TestEngine.available
    )
    func reconcile(_ engine: TestEngine) async throws {
        let corpus = try ReconcileCorpus(repeats: 1)
        let store = try await TestStore.make(engine, in: directory)
        for old in [true, false] {
            let time = old ? "2026-11-01T06:00:00Z" : "2026-11-20T06:00:00Z"
            let copies = try directory.write("copies-\(old).jsonl", corpus.copies(old: old).joined(separator: "\n"))
            let forwards = try directory.write(
                "forwards-\(old).jsonl",
                corpus.forwards(old: old).joined(separator: "\n")
            )
            // Forwards arrive as daily compressed files.
            #expect(try await Shell.run("gzip -kf \(Shell.quoted(forwards))", in: directory.path).status == 0)
            for (path, channel) in [(forwards + ".gz", ReconcileCorpus.channel), (copies, "device")] {
                let run = try await Postbackd.run(
                    [
                        "ingest", "--db", store.argument, "--keys", TestKeys.directory, "--received-at", time,
                        "--channel", channel, path,
                    ]
                )
                #expect(run.status == 0 || run.status == 1, "\(run.standardError)")
            }
        }
        // No campaign mappings here: nothing is early.
        var expected = corpus.expected()
        expected.early = 0
        let base = ["reconcile", "--db", store.argument, "--as-of", "2026-11-25", "--by", ""]
        // Before aggregate: nothing counted, and a warning that says to run it; --live reads the
        // postbacks themselves.
        let unaggregated = try await Postbackd.run(base + ["--format", "json"])
        #expect(
            unaggregated.status == 0 && unaggregated.standardError.contains("aggregate"),
            "\(unaggregated.standardError)"
        )
        let live = try await Postbackd.run(base + ["--format", "json", "--live"])
        #expect(live.status == 0 && live.standardError.isEmpty, "\(live.standardError)")
        #expect(try await Postbackd.run(["aggregate", "--db", store.argument]).status == 0)

        let json = try await Postbackd.run(base + ["--format", "json"])
        #expect(json.status == 0, "\(json.standardError)")
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]]
        )
        #expect(rows.count == 1)
        for metric in ReconcileCounts.metrics {
            #expect(rows.first?[metric.name] as? Int == expected[keyPath: metric.value], "\(metric.name)")
        }
        #expect(json.standardOutput == live.standardOutput)
        #expect(json.standardError.isEmpty, "\(json.standardError)")
        let copyCoverage = try #require(rows.first?["copy_coverage"] as? Double)
        #expect(abs(copyCoverage - Double(expected.matched) / Double(expected.forwardedWon)) < 0.0001)

        let csv = try await Postbackd.run(base + ["--format", "csv"])
        let lines = csv.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("copies,forwarded_won,forwarded_nonwon,matched,matched_identical,") == true)
        #expect(lines.first?.hasSuffix(",copy_coverage,forward_coverage,values_changed") == true)

        let table = try await Postbackd.run(["reconcile", "--db", store.argument, "--as-of", "2026-11-25"])
        #expect(table.status == 0, "\(table.standardError)")
        #expect(table.standardOutput.contains("copy cov") && table.standardOutput.contains("2026-11-01"))
        #expect(table.standardOutput.contains(ReconcileCorpus.network))

        for (arguments, option) in [
            (["--grace-days", "ten"], "--grace-days"), (["--by", "date,nope"], "--by"),
            (["--as-of", "soon"], "--as-of"), (["--from", "2026-11-31"], "--from"),
        ] {
            let run = try await Postbackd.run(["reconcile", "--db", store.argument] + arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.standardError.contains(option), "\(run.standardError)")
            #expect(run.standardOutput.isEmpty)
        }

        // A truncated archive: its file named, nothing of it stored, the store unchanged.
        let whole = try Data(contentsOf: URL(fileURLWithPath: directory.path + "/forwards-true.jsonl.gz"))
        let truncated = directory.path + "/truncated.jsonl.gz"
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: truncated))
        let broken = try await Postbackd.run(
            [
                "ingest", "--db", store.argument, "--keys", TestKeys.directory, "--channel", ReconcileCorpus.channel,
                truncated,
            ]
        )
        #expect(broken.status == 2, "\(broken.standardError)")
        #expect(broken.standardError.contains("truncated.jsonl.gz"))
        let after = try await Postbackd.run(base + ["--format", "json"])
        #expect(after.standardOutput == json.standardOutput)
    }
}

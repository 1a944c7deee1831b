import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// The calling thread's name, as `top -H` and a profile see it.
private func threadName() -> String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
}

private struct Stop: Error {}

@Suite("Named threads and the verification pipeline's threads")
struct NamedThreadsTests {
    @Test("a task that prefers the executor runs on its named thread")
    func oneThread() async {
        let threads = NamedThreads(name: "pbd-test")
        let name = await NamedThreads.run(on: threads) { threadName() }
        #expect(name == "pbd-test")
        #expect(threads.count == 0, "shut down: its thread ended")
    }

    @Test("several threads are numbered from 1, and child tasks spread over them")
    func several() async throws {
        let threads = NamedThreads(name: "pbd-pool", count: 3)
        defer { threads.shutdown() }
        let names = await withTaskGroup(of: String.self) { group in
            for _ in 0..<60 {
                group.addTask(executorPreference: threads) {
                    // Long enough that one thread cannot take every task.
                    usleep(2_000)
                    return threadName()
                }
            }
            var names = Set<String>()
            for await name in group { names.insert(name) }
            return names
        }
        #expect(names.isSubset(of: ["pbd-pool-1", "pbd-pool-2", "pbd-pool-3"]))
        #expect(names.count >= 2)
    }

    @Test("a name over Linux's 15 bytes is cut, not refused")
    func longName() async {
        let name = await NamedThreads.run(on: NamedThreads(name: "postbackd-reader-thread")) { threadName() }
        #expect(name == "postbackd-reade")
    }

    @Test("verify prepares on pbd-verify-N, reads on pbd-reader, and hands over in input order")
    func pipelineThreads() async throws {
        let directory = try TemporaryDirectory()
        var lines: [String] = []
        for index in 0..<2_000 {
            let transactionID = String(format: "00000000-0000-4000-8000-%012d", index)
            lines.append(
                try TestKeys.signer.signed(SamplePostback.make(.v4_0, transactionID: transactionID)).jsonText()
            )
        }
        let path = try directory.write("corpus.jsonl", lines.joined(separator: "\n"))
        let (files, _) = try InputPaths.expand([path])
        var sequences: [Int] = []
        var lineNumbers: [Int] = []
        var consumerNames = Set<String>()
        var preparerNames = Set<String>()
        try await VerificationPipeline(keyRing: try TestKeys.ring, width: 3, consumerName: "pbd-test-out").run(
            EntryReader(files: files, entriesPerBatch: 16),
            prepare: { verified in
                (verified.batch.sequence, verified.batch.entries.map(\.location.line), threadName(), verified.results)
            },
            consume: { sequence, lines, preparer, results in
                sequences.append(sequence)
                lineNumbers += lines
                preparerNames.insert(preparer)
                consumerNames.insert(threadName())
                #expect(results.allSatisfy { $0.verdict == .valid })
            }
        )
        #expect(sequences == Array(0..<125))
        #expect(lineNumbers == Array(1...2_000))
        #expect(consumerNames == ["pbd-test-out"])
        #expect(preparerNames.isSubset(of: ["pbd-verify-1", "pbd-verify-2", "pbd-verify-3"]))
    }

    @Test("a consumer that throws stops the reader, and its error comes back")
    func consumerThrows() async throws {
        let directory = try TemporaryDirectory()
        let lines = (0..<400_000).map { "not a postback \($0)" }
        let path = try directory.write("corpus.jsonl", lines.joined(separator: "\n"))
        let (files, _) = try InputPaths.expand([path])
        let reader = EntryReader(files: files, entriesPerBatch: 8)
        var consumed = 0
        await #expect(throws: Stop.self) {
            try await VerificationPipeline(keyRing: try TestKeys.ring, width: 2).run(reader) { _ in
                consumed += 1
                if consumed == 3 { throw Stop() }
            }
        }
        #expect(consumed == 3)
        #expect(reader.bytesRead <= 2 << 20, "the reader stopped well before the end of 9 MB")
    }
}

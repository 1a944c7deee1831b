import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// ``PostbackVerifier/check(_:in:)`` verifies a batch's signatures together; every result must
/// be the one checking each entry alone gives.
@Suite("Batch verification")
struct BatchVerificationTests {
    /// What a report or the store reads of a result.
    private struct Outcome: Equatable, CustomStringConvertible {
        var verdict: Verdict
        var field: String?
        var reason: String?
        var keyName: String?
        var testMode: Bool
        var verifiedWithoutSourceAppID: Bool
        var development: Bool
        var warnings: [String]

        init(_ result: VerificationResult) {
            verdict = result.verdict
            field = result.field
            reason = result.reason
            keyName = result.keyName
            testMode = result.testMode
            verifiedWithoutSourceAppID = result.verifiedWithoutSourceAppID
            development = result.development
            warnings = result.warnings
        }

        var description: String { "\(verdict) \(keyName ?? "-") \(reason ?? "")" }
    }

    @Test(
        "every sample postback gets the result it gets alone, through OpenSSL's verify and fixed-base tables",
        arguments: [Int.max, 0]
    )
    func samples(fixedBaseThreshold: Int) throws {
        let ring = try KeyRing(directories: [Repository.path("Keys/apple"), TestKeys.directory])
        // Entries that are not valid, between valid ones in one batch.
        let directory = try TemporaryDirectory()
        let lines = try String(
            contentsOfFile: Repository.path("SamplePostbacks/generated/network-a.jsonl"),
            encoding: .utf8
        )
        .split(separator: "\n").prefix(6).map(String.init)
        let mixed = try directory.write(
            "mixed.jsonl",
            [
                lines[0], "{\"bad\":1}", lines[1], "not json",
                lines[2].replacingOccurrences(of: "\"version\":\"", with: "\"version\":\"9"),
                lines[3].replacingOccurrences(of: "-", with: "+"), lines[4], "[1]", lines[5],
            ].joined(separator: "\n")
        )
        let (files, _) = try InputPaths.expand([
            Repository.path("SamplePostbacks/apple"), Repository.path("SamplePostbacks/generated"), mixed,
        ])
        let reader = EntryReader(files: files)
        let batched = PostbackVerifier(keyRing: ring, fixedBaseThreshold: fixedBaseThreshold)
        let alone = PostbackVerifier(keyRing: ring, fixedBaseThreshold: .max)
        var verdicts: [Verdict: Int] = [:]
        var testMode = 0
        var development = 0
        while let batch = reader.nextBatch() {
            let results = batch.bytes.withUnsafeBufferPointer { batched.check(batch.entries, in: $0) }
            #expect(results.count == batch.entries.count)
            for (entry, result) in zip(batch.entries, results) {
                let single = alone.check(
                    Array(batch.bytes(of: entry)),
                    problem: entry.problem,
                    line: entry.location.line
                )
                #expect(Outcome(result) == Outcome(single), "\(entry.location)")
                verdicts[result.verdict, default: 0] += 1
                if result.testMode { testMode += 1 }
                if result.development { development += 1 }
            }
        }
        // The samples hold every outcome the batch path must get right.
        #expect(verdicts[.valid, default: 0] > 2_900)
        #expect(verdicts[.invalid, default: 0] > 10)
        #expect(verdicts[.malformed, default: 0] >= 3)
        #expect(verdicts[.unsupported, default: 0] >= 1)
        #expect(testMode > 5)
        #expect(development >= 1)
    }
}

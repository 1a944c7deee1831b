import PostbackKit
import PostbackStore

#if canImport(Glibc)
import Glibc
#endif

/// How many postbacks per second a storage engine absorbs from the write path alone: the
/// corpus is read and verified first (not timed), then the verified batches are written into
/// the store exactly as `postbackd ingest` writes them (one run, commits every N postbacks),
/// and only that is timed.
///
///     postbackd-store-bench --db FILE|URL --keys DIR [--commit-every N] CORPUS
///
/// Prints one JSON line: postbacks, seconds, rate, accepted, duplicates, quarantined.
@main
struct StoreBenchmark {
    static func main() async throws {
        try await run(Array(CommandLine.arguments.dropFirst()))
    }

    /// Off the main actor: the store and the batches stay in this one task.
    nonisolated static func run(_ commandLine: [String]) async throws {
        var arguments = commandLine
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            let value = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
            return value
        }
        guard let database = option("--db"), let keys = option("--keys"), arguments.count == 1 else {
            let errors = TextOutput.standardError()
            errors.line("usage: postbackd-store-bench --db FILE|URL --keys DIR [--commit-every N] CORPUS")
            errors.flush()
            exit(2)
        }
        let commitEvery = option("--commit-every").flatMap(Int.init) ?? IngestJob.defaultEntriesPerTransaction
        let location = try StoreLocation(database)
        let keyRing = try KeyRing(directories: [keys])

        let (files, _) = try InputPaths.expand(arguments)
        var batches: [VerifiedBatch] = []
        try await VerificationPipeline(keyRing: keyRing, width: ActiveProcessors.count, hashingRaw: true)
            .run(EntryReader(files: files)) { batches.append($0) }

        let summary = try await PostbackStores.with(location, access: .ingest) { store in
            try await store.withIngestSession { session in
                let context = BatchContext(runID: 0, rule: ReceivedTimeRule(fixed: nil), storedSource: { $0 })
                let started = UTCInstant.now()
                var summary = IngestSummary()
                var sinceCommit = 0
                for batch in batches {
                    _ = try await session.write(batch, context: context)
                    sinceCommit += batch.batch.entries.count
                    if sinceCommit >= commitEvery {
                        summary.add(try await session.commit())
                        sinceCommit = 0
                    }
                }
                summary.add(try await session.commit())
                summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
                return summary
            }
        }
        print(
            "{\"postbacks\":\(summary.read),\"seconds\":\(summary.seconds),\"rate\":\(Int(summary.rate)),\"accepted\":\(summary.accepted),\"duplicates\":\(summary.duplicates),\"quarantined\":\(summary.quarantined)}"
        )
    }
}

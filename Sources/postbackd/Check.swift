import ArgumentParser
import PostbackKit
import PostbackStore

#if canImport(Glibc)
import Glibc
#endif

extension Postbackd {
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a store: the engine's own check, then postbackd's invariants. Reads only.",
            discussion: """
                Runs SQLite's integrity_check (quick_check with --quick) or, on PostgreSQL, \
                amcheck's bt_index_check where the extension is installed and this user may run \
                it (else says it skipped it). Then reads every row and checks that each \
                postback's dedup_key is the digest of its key columns, that raw_sha256 is the \
                SHA-256 of raw (postbacks, sightings, quarantine where raw is whole), that every \
                sighting, conflict and delivery points at a stored postback, and that each \
                aggregated day's rows add up (aggregate_daily, its totals and the dashboard's \
                sums, and no more postbacks than the store holds for the day). Each finding names \
                the table, the row id and what is wrong. Ingest runs left running and days with \
                postbacks not yet aggregated are notices, not findings.

                Needs no write permission: an SQLite file is opened read-only (also in a folder \
                the user cannot write), PostgreSQL needs only SELECT. Nothing is written.

                Check a backup: sqlite3 postbackd.sqlite ".backup copy.sqlite" && postbackd check --db copy.sqlite

                Exit status: 0 sound; 1 findings (or the engine's check found problems); 2 the \
                store cannot be opened (one sentence says why).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "SQLite: quick_check instead of integrity_check (does not compare indexes with their tables).")
        var quick = false

        @Option(help: "text or json.")
        var format: ResultFormat = .text

        func run() async throws {
            let errors = TextOutput.standardError()
            let showProgress = errors.isTerminal
            let report: CheckReport
            if showProgress {
                // The engine's check comes first, and says nothing until it ends.
                errors.write("checking the store's pages and indexes…")
                errors.flush()
            }
            do {
                report = try await CheckJob.run(
                    database.location,
                    options: CheckJob.Options(quick: quick),
                    progress: showProgress ? Self.progressLine : nil
                )
            } catch {
                if showProgress { Self.clearProgress() }
                throw failStore(error, database.location)
            }
            if showProgress { Self.clearProgress() }
            let output = TextOutput.standardOutput()
            output.write(format == .json ? report.json : report.text)
            output.flush()
            if !report.sound { throw ExitCode(1) }
        }

        /// `checking postbacks: 120000 of 1000000` on standard error, over itself.
        @Sendable private static func progressLine(_ progress: CheckProgress) {
            let errors = TextOutput.standardError()
            errors.write("\r\u{1B}[Kchecking \(progress.table.rawValue): \(progress.checked) of \(progress.total)")
            errors.flush()
        }

        private static func clearProgress() {
            let errors = TextOutput.standardError()
            errors.write("\r\u{1B}[K")
            errors.flush()
        }
    }
}

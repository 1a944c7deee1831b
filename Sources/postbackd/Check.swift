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
                Runs SQLite's integrity_check, with a check that its two levels of dedup keys \
                hold each postback's key once, or, on PostgreSQL, amcheck's bt_index_check where \
                the extension is installed and this user may run it (else says it skipped it). \
                Then reads every row and checks that each postback's dedup_key is the digest of \
                its key columns, that raw_sha256 is the SHA-256 of raw (postbacks, sightings, \
                quarantine where raw is whole), that every sighting, conflict and delivery points \
                at a stored postback, and that each aggregated day's rows add up \
                (aggregate_daily, its totals and the dashboard's sums, and no more postbacks than \
                the store holds for the day). Each finding names the table, the row id and what \
                is wrong. Ingest runs left running and days with postbacks not yet aggregated \
                are notices, not findings.

                --quick checks what is recent, the nightly check: the rows received from a day \
                on (--since, by default the day before the newest day received) and every row \
                stored after them, their references, and the aggregated days from that day; not \
                the engine's check of every page. It reads a day's rows however large the \
                store; run the whole check weekly, and after a crash of the machine.

                Needs no write permission: an SQLite file is opened read-only (also in a folder \
                the user cannot write), PostgreSQL needs only SELECT. Nothing is written.

                Check a backup: sqlite3 postbackd.sqlite ".backup copy.sqlite" && postbackd check --db copy.sqlite

                Exit status: 0 sound; 1 findings (or the engine's check found problems); 2 the \
                store cannot be opened (one sentence says why).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Only the recent rows and days (from --since), not the engine's check of every page.")
        var quick = false

        @Option(
            help: ArgumentHelp(
                "With --quick: the first day received checked (default: the day before the newest).",
                valueName: "YYYY-MM-DD"
            )
        )
        var since: String?

        @Option(help: "text or json.")
        var format: ResultFormat = .text

        func validate() throws {
            _ = try sinceDay()
        }

        func run() async throws {
            let sinceDay = try sinceDay()
            let errors = TextOutput.standardError()
            let showProgress = errors.isTerminal
            let report: CheckReport
            if showProgress && !quick {
                // The engine's check comes first, and says nothing until it ends.
                errors.write("checking the store's pages and indexes…")
                errors.flush()
            }
            do {
                report = try await CheckJob.run(
                    database.location,
                    options: CheckJob.Options(quick: quick, since: sinceDay),
                    progress: showProgress ? Self.progressLine : nil
                )
            } catch {
                if showProgress { Self.clearProgress() }
                throw failStore(error, database.location)
            }
            if showProgress { Self.clearProgress() }
            standardOutput(write: format == .json ? report.json : report.text)
            if !report.sound { throw ExitCode(1) }
        }

        /// `--since` as a day; refused without `--quick` or when it is not a day.
        private func sinceDay() throws -> UTCDay? {
            guard let since else { return nil }
            guard quick else { throw ValidationError("--since needs --quick (a whole check reads every day)") }
            guard let day = UTCDay(since) else { throw ValidationError("--since \(since): not a day (YYYY-MM-DD)") }
            return day
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

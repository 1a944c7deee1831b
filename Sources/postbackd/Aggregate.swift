import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Aggregate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recompute the daily aggregate rows from the stored postbacks and the apps' models.",
            discussion: """
                Groups each UTC day's postbacks (by received_at) by date, app, ad network, source \
                identifier, source app, source domain, version, fidelity type, redownload, did-win, \
                sequence index and country, and counts postbacks, installs, redownloads, non-winning, \
                test-mode, null conversion values, unmapped, unmodelled and model-ambiguous \
                postbacks, revenue per currency and events, each postback decoded through its app's \
                model in force when its value was set (received_at minus 24 hours; docs/models.md). \
                The days' rows are replaced in one transaction: re-running gives identical rows, and \
                a model added later changes only the days it can reach (models add names them).

                Nightly use: ingest the day's files, then aggregate that day:
                  postbackd ingest --received-at 2026-11-21 /data/2026-11-21/
                  postbackd aggregate --date 2026-11-21

                Each row also holds the install date, crowd-anonymity tier and source identifier \
                digits of its postbacks and, through the campaign mappings (postbackd campaigns \
                add), their campaign, ad group and creative. With --date-basis install, --date, \
                --from and --to are install dates: the days received that can hold them (a day \
                after the first to 39 days after the last) are recomputed.

                Examples:
                  postbackd aggregate
                  postbackd aggregate --from 2026-11-01 --to 2026-11-21 --revenue-estimate lower
                  postbackd aggregate --date-basis install --date 2026-11-16

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("Recompute this UTC day only.", valueName: "YYYY-MM-DD"))
        var date: String?

        @Option(help: ArgumentHelp("First day to recompute (with --to).", valueName: "YYYY-MM-DD"))
        var from: String?

        @Option(help: ArgumentHelp("Last day to recompute (with --from).", valueName: "YYYY-MM-DD"))
        var to: String?

        @OptionGroup var basis: DateBasisOption

        @Option(help: "The point estimate of revenue ranges: midpoint, lower or upper.")
        var revenueEstimate: RevenueEstimatePolicy = .midpoint

        @Option(help: "text or json (one line).")
        var format: ResultFormat = .text

        func validate() throws {
            if date != nil && (from != nil || to != nil) {
                throw ValidationError("give --date or --from and --to, not both")
            }
            if (from == nil) != (to == nil) { throw ValidationError("--from and --to go together") }
            _ = try selection()
        }

        private func selection() throws -> DaySelection {
            var days: (first: UTCDay, last: UTCDay)
            if let date {
                let day = try day(date, option: "--date")
                days = (day, day)
            } else if let from, let to {
                days = (try day(from, option: "--from"), try day(to, option: "--to"))
                guard days.first <= days.last else { throw ValidationError("--from \(from) is after --to \(to)") }
            } else {
                return .all
            }
            if basis.dateBasis == .install {
                let received = PostbackInference.receivedDays(forInstallDays: days.first, days.last)
                days = (received.from, received.to)
            }
            return .range(from: days.first, to: days.last)
        }

        func run() async throws {
            let summary: AggregateSummary
            let selection = try selection()
            do {
                summary = try await AggregateJob.run(database.location, selection, policy: revenueEstimate)
            } catch {
                throw failStore(error, database.location)
            }
            standardOutput(line: format == .json ? summary.json : summary.text)
        }
    }
}

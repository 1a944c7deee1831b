import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Reconcile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Audit the networks: the devices' copies against what each network forwarded.",
            discussion: """
                Reads the stored production postbacks (test and development key spaces apart) and \
                tells, per group, how the copies devices sent (channel device: what serve receives \
                at Apple's paths, or ingest --channel device) compare with the forwards networks \
                sent (every other channel: ingest --channel NAME, POST /v1/forwards/NAME, or file). \
                A postback is one row of the store whatever the order its sides were read in; its \
                first copy is compared with its first forward. See docs/auditing.md.

                The counts come from postbackd aggregate, which recounts the days it recomputes \
                (and the days of postbacks whose other side arrived on them); run it after ingest, \
                as for report: a warning says when postbacks arrived since. The day the grace \
                period ends on is read from the postbacks themselves, and with --live every day.

                Dimensions: date (the UTC day the postback was first received, on whichever channel), \
                ad_network_id, app_id, kind, postback_sequence_index, channel (that of its first \
                forward; empty for a copy alone) and campaign (postbackd campaigns add; empty when \
                unmapped). Default: date,ad_network_id.

                Metrics (JSON and CSV names): copies; forwarded_won, forwarded_nonwon; matched \
                (winning postbacks with both), matched_identical; fine_higher, fine_lower, \
                coarse_higher, coarse_lower, value_dropped, value_added, country_differs, \
                interaction_differs (each matched postback whose forward differs from its copy \
                so); copy_only, forward_only (unmatched winning postbacks first received more than \
                --grace-days before --as-of), pending (younger ones); forward_quarantined; \
                impossible (a shape Apple never sends); early (received sooner after its \
                campaign's start than its window allows); and the rates copy_coverage \
                (matched/forwarded_won), forward_coverage (matched/copies) and values_changed. \
                The same on SQLite and PostgreSQL, and at GET /api/v1/reconcile.

                Examples:
                  postbackd reconcile
                  postbackd reconcile --from 2026-11-01 --to 2026-11-30 --by ad_network_id,channel
                  postbackd reconcile --by date,ad_network_id --format csv > reconcile.csv
                  postbackd reconcile --as-of 2026-12-01 --grace-days 10 --format json

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var period: PeriodOptions

        @Option(
            help: ArgumentHelp(
                "Dimensions to group by, comma-separated (default: date,ad_network_id; empty: one row of totals).",
                valueName: "dim,dim"
            )
        )
        var by: String?

        @Option(
            name: .customLong("as-of"),
            help: ArgumentHelp(
                "When unmatched postbacks are judged (default: now).",
                valueName: "YYYY-MM-DD[THH:MM:SSZ]"
            )
        )
        var asOf: String?

        @Option(
            name: .customLong("grace-days"),
            help: ArgumentHelp(
                "Days an unmatched winning postback waits for its other side before it counts as copy_only or forward_only (default: 10; Apple retries a copy for up to 9 days).",
                valueName: "n"
            )
        )
        var graceDays: String?

        @OptionGroup var filters: FilterOptions

        @Flag(
            help:
                "Read every day from the stored postbacks, not from aggregate's rows: no postbackd aggregate needed, as slow as the period is long."
        )
        var live = false

        @Option(help: "table (aligned, 100 columns), csv, or json.")
        var format: Format = .table

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case table, csv, json
        }

        /// The options as `GET /api/v1/reconcile` takes them too.
        private var options: ReportRequest.Options {
            var options = ReportRequest.Options()
            options.from = period.from
            options.to = period.to
            options.by = by
            options.asOf = asOf
            options.graceDays = graceDays
            options.appIDs = filters.appIDs
            options.adNetworkIDs = filters.adNetworkIDs
            return options
        }

        func validate() throws {
            do {
                _ = try ReconcileRequest.parse(options)
            } catch {
                throw ValidationError(error.description)
            }
        }

        func run() async throws {
            var request = try ReconcileRequest.parse(options)
            request.live = live
            let (reconciliation, warning) = try await database.perform { try await ReconcileJob.run($0, request) }
            if let warning {
                let errors = TextOutput.standardError()
                errors.line("postbackd: warning: \(warning)")
                errors.flush()
            }
            standardOutput(write: reconciliation.formatted(ReportFormat(rawValue: format.rawValue) ?? .table))
        }
    }
}

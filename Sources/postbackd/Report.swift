import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sum the daily aggregate rows over a period, grouped by the dimensions you choose.",
            discussion: """
                Dimensions: date, app_id, ad_network_id, source_identifier, source_app_id, \
                source_domain, version, fidelity_type, redownload, did_win, postback_sequence_index, \
                country_code, marketplace_id. Metrics: postbacks, installs, redownloads, \
                reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, \
                unmodelled, and revenue per currency (min, max, estimate). --events gives one row \
                per group and event instead. The same on SQLite and PostgreSQL.

                Examples:
                  postbackd report
                  postbackd report --from 2026-11-15 --to 2026-11-21 --by app_id,ad_network_id
                  postbackd report --by date --events --format csv > events.csv

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("First day (UTC) to include.", valueName: "YYYY-MM-DD"))
        var from: String?

        @Option(help: ArgumentHelp("Last day (UTC) to include.", valueName: "YYYY-MM-DD"))
        var to: String?

        @Option(help: ArgumentHelp("Dimensions to group by, comma-separated.", valueName: "dim,dim"))
        var by: String = "date,ad_network_id"

        @Flag(help: "One row per group and event name: occurrences, postbacks with the event, revenue.")
        var events = false

        @Option(help: "table (aligned, 100 columns), csv or json.")
        var format: ReportFormat = .table

        func validate() throws {
            do {
                _ = try AggregateDimension.list(by)
            } catch {
                throw ValidationError("--by: \(error)")
            }
            if let from { _ = try day(from, option: "--from") }
            if let to { _ = try day(to, option: "--to") }
        }

        func run() async throws {
            let result: (report: PostbackStore.Report, warning: String?)
            let query = ReportQuery(
                from: try from.map { try day($0, option: "--from") },
                to: try to.map { try day($0, option: "--to") },
                by: try AggregateDimension.list(by),
                events: events
            )
            do {
                result = try await PostbackStore.Report.read(database.location, query)
            } catch {
                throw failStore(error, database.location)
            }
            if let warning = result.warning {
                let errors = TextOutput.standardError()
                errors.line("postbackd: warning: \(warning)")
                errors.flush()
            }
            let output = TextOutput.standardOutput()
            output.write(result.report.formatted(format))
            output.flush()
        }
    }
}

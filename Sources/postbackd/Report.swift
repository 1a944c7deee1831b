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
                country_code, marketplace_id, placement (Apple Ads' App Store placement of a \
                postback from com.apple.ads: campaign id 10 Search results, 20 Search tab, 30 Today \
                tab, 40 Product pages; empty for other networks). Metrics: postbacks, installs, redownloads, \
                reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, \
                unmodelled, and revenue per currency (min, max, estimate). --events gives one row \
                per group and event instead. --with-apple-ads (by date and/or app_id) adds \
                apple_ads_skan_installs (the SKAN installs from com.apple.ads), and \
                apple_ads_installs and apple_ads_redownloads (from AdServices tokens, `apple-ads \
                fetch`): two measurements of Apple Ads, beside each other, never added together. The same on SQLite and PostgreSQL.

                Examples:
                  postbackd report
                  postbackd report --from 2026-11-15 --to 2026-11-21 --by app_id,ad_network_id
                  postbackd report --by date --events --format csv > events.csv
                  postbackd report --by date,app_id --with-apple-ads

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var period: PeriodOptions

        @Option(help: ArgumentHelp("Dimensions to group by, comma-separated.", valueName: "dim,dim"))
        var by: String = "date,ad_network_id"

        @Flag(help: "One row per group and event name: occurrences, postbacks with the event, revenue.")
        var events = false

        @Flag(help: "Add Apple Ads' SKAN installs and its AdServices installs and redownloads beside each row (--by date,app_id at most).")
        var withAppleAds = false

        @Option(help: "table (aligned, 100 columns), csv or json.")
        var format: ReportFormat = .table

        func validate() throws {
            do {
                _ = try AggregateDimension.list(by)
            } catch {
                throw ValidationError("--by: \(error)")
            }
            if withAppleAds {
                let dimensions = (try? AggregateDimension.list(by)) ?? []
                guard !events, dimensions.allSatisfy(PostbackStore.Report.sideBySideDimensions.contains) else {
                    throw ValidationError("--with-apple-ads groups by date and app_id only (and not with --events)")
                }
            }
        }

        func run() async throws {
            let result: (report: PostbackStore.Report, warning: String?)
            let query = ReportQuery(
                from: period.first,
                to: period.last,
                by: try AggregateDimension.list(by),
                events: events
            )
            do {
                result =
                    withAppleAds
                    ? try await PostbackStore.Report.readSideBySide(database.location, query)
                    : try await PostbackStore.Report.read(database.location, query)
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

import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sum the daily aggregate rows over a period, grouped by the dimensions you choose.",
            discussion: """
                Dimensions: date (the day received), app_id, ad_network_id, source_identifier, \
                source_app_id, source_domain, version, fidelity_type, redownload, did_win, \
                postback_sequence_index, country_code, marketplace_id, placement (Apple Ads' App Store \
                placement of a postback from com.apple.ads: campaign id 10 Search results, 20 Search \
                tab, 30 Today tab, 40 Product pages; empty for other networks), install_date (the day \
                of the estimated install: received_at minus 84, 252 or 924 hours for postbacks 0, 1 \
                and 2 of SKAdNetwork 4.0 and AdAttributionKit, 36 hours before 4.0), \
                crowd_anonymity_tier (0-3, for postback 0 of a winning 4.0 or AdAttributionKit \
                attribution; empty otherwise), source_identifier_digits (2-4; empty before 4.0), and \
                campaign, ad_group and creative (from postbackd campaigns add; empty when unmapped), \
                conversion_type. \
                Metrics: postbacks, installs, redownloads, reengagements, non_winning, test_mode, \
                development, null_conversion_values, unmapped, unmodelled, model_ambiguous (postbacks \
                whose app's model changed within the span their value could have been set in), null_rate \
                (null_conversion_values over winning postbacks), revenue per currency (min, max, \
                estimate), and, by crowd_anonymity_tier, tier_share (each tier's share of the \
                production postbacks that have a tier, among rows alike in their other dimensions). \
                Revenue is that of downloads and redownloads; reengagement_revenue, that of \
                AdAttributionKit re-engagements, decoded by the app's re-engagement model, and the \
                conversion_type dimension (download, redownload, re-engagement) splits rows by it. \
                --modeled adds revenue_modeled (the observed revenue plus each null value given the \
                mean revenue of its reference group: the same day, app, network and postback; else \
                that week; else the app's over every network that week; at least 30 postbacks with a \
                value) and modeled_basis (day, week, app_week, none); --format json always has them. \
                --events gives one row per group and event instead. \
                With costs stored (postbackd costs add), a report by date (install_date with \
                --date-basis install), app_id, ad_network_id, campaign and country_code adds spend, \
                cpi (spend over installs) and roas (revenue over spend: min, estimate, max; \
                roas_modeled with --modeled), per currency; ROAS only where revenue and spend share \
                it. --currency CODE converts each day's revenue and spend by that day's rate \
                (postbackd rates add; the latest of the 7 days before when the day has none). \
                See docs/costs.md. --with-apple-ads (by date and/or \
                app_id) adds apple_ads_skan_installs (the SKAN installs from com.apple.ads), and \
                apple_ads_installs and apple_ads_redownloads (from AdServices tokens, `apple-ads \
                fetch`): two measurements of Apple Ads, beside each other, never added together. The \
                same on SQLite and PostgreSQL.

                --date-basis install makes --from and --to install dates, and the default grouping \
                install_date,ad_network_id. Installs of a day are complete once its postbacks 0 have \
                arrived (up to 4 days later); its later postbacks take up to 41 days.

                Examples:
                  postbackd report
                  postbackd report --from 2026-11-15 --to 2026-11-21 --by app_id,ad_network_id
                  postbackd report --date-basis install --from 2026-11-16 --to 2026-11-16
                  postbackd report --by ad_network_id,crowd_anonymity_tier
                  postbackd report --by campaign,ad_group,creative --date-basis install --from 2026-11-01
                  postbackd report --by date --events --format csv > events.csv
                  postbackd report --by date,app_id --with-apple-ads
                  postbackd report --by date,conversion_type --modeled
                  postbackd report --app-id 1234567890 --ad-network-id example.skadnetwork
                  postbackd report --by ad_network_id,campaign --date-basis install --currency USD
                  postbackd report --format html --output dashboard.html --from 2026-11-01

                --format html writes the dashboard `serve` shows at /dashboard as one \
                self-contained file (no script, nothing fetched from elsewhere): installs and \
                redownloads per day by network, revenue with its range, the fine-value histogram and \
                null rate, crowd-anonymity tiers, quarantined/duplicates/conflicts, and Apple Ads \
                beside SKAN, each chart with its numbers as a table.

                Exit status: 0 done; 2 usage error, a database that cannot be used, or an output \
                file that cannot be written.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var period: PeriodOptions

        @OptionGroup var basis: DateBasisOption

        @Option(
            help: ArgumentHelp(
                "Dimensions to group by, comma-separated (default: date,ad_network_id; with --date-basis install, install_date,ad_network_id).",
                valueName: "dim,dim"
            )
        )
        var by: String?

        @OptionGroup var filters: FilterOptions

        @Flag(help: "One row per group and event name: occurrences, postbacks with the event, revenue.")
        var events = false

        @Flag(
            help:
                "Add Apple Ads' SKAN installs and its AdServices installs and redownloads beside each row (--by date,app_id at most)."
        )
        var withAppleAds = false

        @Flag(
            help:
                "Add the modeled revenue (observed plus each null value given its reference group's mean revenue) and its basis to the table and CSV; JSON always has them."
        )
        var modeled = false

        @Flag(
            help:
                "Add the installs each network claims (postbackd claims add), the gap to the verified installs and their coverage; by install date unless --date-basis says otherwise."
        )
        var withClaims = false

        @Flag(
            help:
                "Cohorts by install date: installs, the postbacks of each conversion window (d0-2, d3-7, d8-35) and their rates, each window's revenue, and whether each window is final (--by install_date[,…])."
        )
        var cohorts = false

        @Option(
            name: .customLong("as-of"),
            help: ArgumentHelp(
                "When the rows of a report by install date are judged final, their installs and values no longer growing (default: now).",
                valueName: "YYYY-MM-DD[THH:MM:SSZ]"
            )
        )
        var asOf: String?

        @Option(
            help: ArgumentHelp(
                "Convert revenue and spend into this currency (ISO 4217) by each day's rate (postbackd rates add).",
                valueName: "code"
            )
        )
        var currency: String?

        @Option(
            help:
                "table (aligned, 100 columns), csv, json, or html (the dashboard as one self-contained page: charts of the filtered period)."
        )
        var format: OutputFormat = .table

        @Option(
            help: ArgumentHelp(
                "Write to this file (whole, or not at all: under FILE.partial, then renamed) instead of standard output.",
                valueName: "file"
            )
        )
        var output: String?

        /// `--format`: a report's formats and the dashboard page.
        enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
            case table, csv, json, html
        }

        /// The options as `GET /api/v1/report` takes them too.
        private var options: ReportRequest.Options {
            var options = ReportRequest.Options()
            options.from = period.from
            options.to = period.to
            options.by = by
            options.events = events
            options.dateBasis = basis.dateBasis?.rawValue
            options.appIDs = filters.appIDs
            options.adNetworkIDs = filters.adNetworkIDs
            options.withAppleAds = withAppleAds
            options.modeled = modeled
            options.withClaims = withClaims
            options.cohorts = cohorts
            options.asOf = asOf
            options.currency = currency
            return options
        }

        func validate() throws {
            if format == .html, by != nil || events || withAppleAds || modeled || withClaims || cohorts || asOf != nil {
                throw ValidationError(
                    "--format html draws the dashboard's own charts: give only --from, --to, --date-basis, --app-id, --ad-network-id and --currency (the spend panel's)"
                )
            }
            if output?.isEmpty == true { throw ValidationError("--output needs a file name") }
            do {
                _ = try ReportRequest.parse(options)
            } catch {
                throw ValidationError(error.description)
            }
        }

        func run() async throws {
            if format == .html {
                try await writePage()
                return
            }
            let result: (report: PostbackStore.Report, warning: String?)
            let request = try ReportRequest.parse(options)
            do {
                result = try await ReportJob.run(database.location, request)
            } catch {
                throw failStore(error, database.location)
            }
            if let warning = result.warning {
                let errors = TextOutput.standardError()
                errors.line("postbackd: warning: \(warning)")
                errors.flush()
            }
            let text = result.report.formatted(ReportFormat(rawValue: format.rawValue) ?? .table)
            try write(text)
        }

        /// `--format html`: the dashboard page for the filters.
        private func writePage() async throws {
            let dashboard: Dashboard = try await database.perform {
                try await ReportJob.dashboard($0, try Dashboard.query(options))
            }
            if let warning = dashboard.warning {
                let errors = TextOutput.standardError()
                errors.line("postbackd: warning: \(warning)")
                errors.flush()
            }
            try write(DashboardPage(dashboard, mode: .file).html)
        }

        private func write(_ text: String) throws {
            guard let output else {
                standardOutput(write: text)
                return
            }
            do {
                try OutputFile.write(text, to: output)
            } catch {
                throw failInput("\(error)")
            }
        }
    }
}

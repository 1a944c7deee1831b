import ArgumentParser
import Logging
import PostbackKit
import PostbackServer
import PostbackStore

extension Postbackd {
    struct AppleAds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apple-ads",
            abstract:
                "Apple Ads attribution through AdServices: collect the apps' tokens, exchange them with Apple, report.",
            discussion: """
                The app calls AAAttribution.attributionToken() and sends {"app_id": …, "token": "…", \
                "obtained_at": "ISO 8601"} to `serve` (POST /v1/apple-ads/token), or a batch job \
                collects the same objects as JSON Lines for `apple-ads add`. `apple-ads fetch` (or \
                `serve --apple-ads`) posts each token to Apple's attribution API and stores the \
                record. Apple Ads installs counted this way are a different measurement from SKAN \
                postbacks: reports show them beside SKAN installs, never added to them.

                Examples:
                  postbackd apple-ads add tokens.jsonl
                  postbackd apple-ads fetch --once
                  postbackd apple-ads status
                  postbackd apple-ads report --by date,campaign_id --format csv
                """,
            subcommands: [Add.self, Fetch.self, Status.self, AppleAdsReport.self]
        )
    }
}

extension Postbackd.AppleAds {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store AdServices tokens from JSON Lines ({\"app_id\", \"token\", \"obtained_at\"} per line).",
            discussion: """
                A token stored before (even one exchanged and deleted since: its SHA-256 is kept) \
                is left as it is; one obtained more than 24 hours ago is stored as expired and \
                never sent. A line that cannot be used is named on standard error (file:line: \
                field: reason) and the rest goes on.

                Exit status: 0 every line stored; 1 some line refused; 2 usage error, an input \
                that cannot be read, or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: ArgumentHelp("The JSON Lines file, or - for standard input.", valueName: "file|-"))
        var input: String

        func run() async throws {
            let errors = TextOutput.standardError()
            let summary: AppleAdsAddJob.Summary
            do {
                summary = try await AppleAdsAddJob.run(location: database.location, input: input) { problem in
                    errors.line("postbackd apple-ads add: \(problem)")
                }
            } catch let error as PostbackKitError {
                errors.flush()
                throw failInput(error.description)
            } catch {
                errors.flush()
                throw failStore(error, database.location, whileWriting: true)
            }
            errors.line(
                "tokens: \(formatCount(summary.read)) read, \(formatCount(summary.added)) added, \(formatCount(summary.known)) already stored, \(formatCount(summary.expired)) expired on arrival, \(formatCount(summary.refused)) refused"
            )
            errors.flush()
            if summary.refused > 0 { throw ExitCode.notAllValid }
        }
    }

    struct Fetch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange pending tokens with Apple's attribution API and store the records.",
            discussion: """
                Each token is POSTed as text/plain. 200: the record is stored (attribution false: \
                not_attributed). 400: invalid, never sent again. 404 (not ready): retried 5 seconds \
                later three times, then after 1 minute, doubling up to an hour, while the token \
                is valid. 5xx, timeouts, other statuses: retried after --retry-after. A token is \
                never sent after 24 hours from when the app obtained it: it becomes expired. A \
                resolved or expired token is deleted (its SHA-256 is kept). State lives in the \
                database: a kill loses nothing, and several fetch processes share the tokens.

                Examples:
                  postbackd apple-ads fetch --once
                  postbackd apple-ads fetch --follow --db postgres://postbackd@db/postbackd

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "One pass over the due tokens (with the 5-second retries of a 404), then exit.")
        var once = false

        @Flag(help: "Exchange until SIGTERM or SIGINT, picking up new tokens within a second.")
        var follow = false

        @OptionGroup var exchange: AppleAdsExchangeOptions

        func validate() throws {
            if once == follow { throw ValidationError("give one of --once and --follow") }
        }

        func run() async throws {
            let summary: AppleAdsFetchSummary = try await database.perform {
                try await exchange.job($0).run(once ? .once : .follow)
            }
            let errors = TextOutput.standardError()
            errors.line(
                "apple-ads: \(formatCount(summary.requests)) requests: \(formatCount(summary.attributed)) attributed, \(formatCount(summary.notAttributed)) not attributed, \(formatCount(summary.invalid)) invalid, \(formatCount(summary.retrying)) to retry; \(formatCount(summary.expired)) expired unsent"
            )
            errors.flush()
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Tokens by state (pending, attributed, not_attributed, invalid, expired), the oldest pending, developer-mode test records, and undocumented values seen."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "text or json.")
        var format: StatusFormat = .text

        enum StatusFormat: String, ExpressibleByArgument, CaseIterable {
            case text, json
        }

        func run() async throws {
            let status: AppleAdsStatus = try await database.perform { try await AppleAdsReportJob.status($0) }
            let output = TextOutput.standardOutput()
            let now = UTCInstant.now().milliseconds
            output.write(format == .json ? status.json(nowMs: now) : status.text(nowMs: now))
            output.flush()
        }
    }

    struct AppleAdsReport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "Count the exchanged tokens' attribution records over a period.",
            discussion: """
                Dimensions: \(AppleAdsDimension.allCases.map(\.rawValue).joined(separator: ", ")). \
                Metrics, each install counted in one (the tokens of one app and install_id are one \
                install): installs (attribution true, Download), \
                redownloads (Redownload), preorders (PreOrder or preorder, any case), \
                other_conversions (another or no conversionType), not_attributed (attribution \
                false: not credited to Apple Ads, whatever the cause), test (the developer-mode \
                test record: org, campaign and ad group 1234567890, ad 542317136). date is the \
                click's or impression's UTC day when the record has one, else the day the app \
                obtained the token.

                Examples:
                  postbackd apple-ads report
                  postbackd apple-ads report --from 2026-11-01 --to 2026-11-30 --by campaign_id,ad_group_id
                  postbackd apple-ads report --by date,app_id --format csv

                Exit status: 0 done; 2 usage error or a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var period: PeriodOptions

        @Option(help: ArgumentHelp("Dimensions to group by, comma-separated.", valueName: "dim,dim"))
        var by: String = "date,app_id"

        @Option(help: "table, csv or json.")
        var format: ReportFormat = .table

        func validate() throws {
            do {
                _ = try AppleAdsDimension.list(by)
            } catch {
                throw ValidationError("--by: \(error)")
            }
        }

        func run() async throws {
            let query = AppleAdsReportQuery(
                from: period.first,
                to: period.last,
                by: try AppleAdsDimension.list(by)
            )
            let report: PostbackStore.AppleAdsReport = try await database.perform {
                try await AppleAdsReportJob.report($0, query)
            }
            standardOutput(write: report.formatted(format))
        }
    }
}

/// The exchange's options, for `apple-ads fetch`.
struct AppleAdsExchangeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Apple's attribution endpoint (a local stand-in in tests).", valueName: "url"))
    var endpoint: String = AppleAdsFetchJob.appleEndpoint

    @Option(
        help: ArgumentHelp(
            "Seconds before retrying after a 5xx, a timeout or a connection error.",
            valueName: "seconds"
        )
    )
    var retryAfter: Int = 60

    @Option(
        help: ArgumentHelp(
            "Seconds a request may take (Apple holds one up to about a second before a 404).",
            valueName: "seconds"
        )
    )
    var timeout: Int = 10

    @Option(help: ArgumentHelp("Requests in flight at most.", valueName: "n"))
    var concurrency: Int = AppleAdsFetchJob.defaultConcurrency

    func validate() throws {
        try Self.check(endpoint: endpoint, option: "--endpoint")
        guard retryAfter >= 1 else { throw ValidationError("--retry-after must be at least 1") }
        guard (2...120).contains(timeout) else { throw ValidationError("--timeout must be 2 to 120 seconds") }
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 256") }
    }

    static func check(endpoint: String, option: String) throws {
        let lower = endpoint.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), endpoint.count > 8 else {
            throw ValidationError("\(option) \(endpoint) is not an http(s) URL")
        }
    }

    func job(_ location: StoreLocation) -> AppleAdsFetchJob {
        AppleAdsFetchJob(
            location: location,
            endpoint: endpoint,
            rules: AppleAdsExchangeRules(retryAfterMs: Int64(retryAfter) * 1000),
            timeout: .seconds(timeout),
            concurrency: concurrency,
            logger: Logger(label: "postbackd.apple-ads")
        )
    }
}

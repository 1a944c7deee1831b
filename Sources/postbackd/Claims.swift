import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Claims: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store what each network claims it delivered, to compare with what Apple signed.",
            discussion: """
                A claims file is CSV with a header. postbackd's own shape names its columns, in any \
                order: date (the UTC day, YYYY-MM-DD), ad_network_id and installs (a whole number) \
                are required; app_id, campaign (the campaign name of postbackd campaigns add), \
                country_code (ISO 3166 alpha-2), redownloads, conversions, date_basis (install, the \
                default, or postback: the day the network counts by) and modeled (true when the \
                network's figures include values it modeled) may be given, or left empty.

                A network's own export is read as it is, known by its installs column, its other \
                columns left aside: a Google Ads API report (segments.date, campaign.name, \
                metrics.sk_ad_network_installs, metrics.sk_ad_network_total_conversions), Meta \
                Insights (date_start, campaign_name, total_postbacks, country), TikTok \
                (stat_time_day, campaign_name, skan_app_install) and Apple Ads reports (date, \
                campaignName, totalInstalls, adamId, countryOrRegion; the network com.apple.ads). \
                --ad-network-id, --app-id, --date-basis and --modeled give what a file does not say.

                A row is keyed by its date, date_basis, ad_network_id, app_id, campaign and \
                country_code: a key already stored is replaced, so re-adding a corrected export \
                changes only what changed. Each file is one transaction: a file with any problem \
                stores nothing, and every problem is named FILE:LINE: column: what. \
                report --with-claims then shows each row's claimed installs beside the verified \
                ones; docs/claims.md says how to pull each network's export.

                Examples:
                  postbackd claims add claims/2026-11.csv
                  postbackd claims add --ad-network-id v9wttpbfk9.skadnetwork --app-id 1234567890 meta-insights.csv
                  postbackd claims list --from 2026-11-01 --format csv

                Exit status: 0 done; 2 a file has problems (nothing of it is stored; the other \
                files are), or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self]
        )

        typealias List = ListRows<Self>

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check claims files and store their rows, each file in one transaction."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "The network of rows that name none (an export carries no network id).")
            var adNetworkID: String?

            @Option(help: "The app of rows that name none.")
            var appID: Int64?

            @Option(help: "install or postback: the day of rows that say none (default install).")
            var dateBasis: String?

            @Option(help: "true or false: whether the figures of rows that say none include modeled values.")
            var modeled: String?

            @Option(help: "text or json (JSON Lines, one object per file stored).")
            var format: ResultFormat = .text

            @Argument(help: "Claims files (CSV); - reads standard input.")
            var files: [String]

            func validate() throws {
                if let adNetworkID {
                    guard !adNetworkID.isEmpty, adNetworkID.utf8.count <= 255,
                        !adNetworkID.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value > 0x7E })
                    else {
                        throw ValidationError("--ad-network-id: expected the network's id, e.g. example123.skadnetwork")
                    }
                }
                if let appID, appID <= 0 {
                    throw ValidationError("--app-id: expected the app's id, a positive integer")
                }
                if let dateBasis, ClaimDateBasis(rawValue: dateBasis) == nil {
                    throw ValidationError("--date-basis: \"\(dateBasis.prefix(64))\" is not install or postback")
                }
                if let modeled, !["true", "false"].contains(modeled) {
                    throw ValidationError("--modeled: \"\(modeled.prefix(64))\" is not true or false")
                }
            }

            func run() async throws {
                let defaults = ClaimFile.Defaults(
                    adNetworkID: adNetworkID,
                    appID: appID,
                    dateBasis: dateBasis.flatMap(ClaimDateBasis.init(rawValue:)),
                    modeled: modeled.map { $0 == "true" }
                )
                let outcome = try await database.perform(whileWriting: true) {
                    try await ClaimsJob.add($0, files: files, defaults: defaults)
                }
                let output = TextOutput.standardOutput()
                for change in outcome.changes { output.line(format == .json ? change.json : change.text) }
                output.flush()
                guard outcome.refused.isEmpty else {
                    throw failInput(
                        outcome.refused.map { "nothing of \($0.file ?? "") was stored:\n" + $0.reason }
                            .joined(separator: "\n")
                    )
                }
            }
        }
    }
}

extension Postbackd.Claims: StoredRowsCommand {
    static let addAbstract = Add.configuration.abstract
    static let filesHelp = "Claims files (CSV); - reads standard input."
    static let listAbstract = "Show the stored claim rows."
    static let csvHelp = "a claims file claims add reads back"
    static func add(_ location: StoreLocation, files: [String]) async throws -> CostsJob.Outcome {
        try await ClaimsJob.add(location, files: files, defaults: ClaimFile.Defaults())
    }
    static func rows(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredClaim] {
        try await ClaimsJob.claims(location, from: from, to: to)
    }
    static func table(_ rows: [StoredClaim]) -> String { ClaimsJob.table(rows) }
    static func csv(_ rows: [StoredClaim]) -> String { ClaimsJob.csv(rows) }
    static func json(_ rows: [StoredClaim]) -> String { ClaimsJob.json(rows) }
}

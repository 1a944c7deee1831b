import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Costs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store what was spent with each network, for spend, CPI and ROAS in reports.",
            discussion: """
                A spend file is CSV with a header naming its columns, in any order: date (the UTC \
                day, YYYY-MM-DD), ad_network_id, spend (a decimal such as 1234.56, 0 or more, at \
                most six decimals) and currency (ISO 4217) are required; app_id, campaign (the \
                campaign name of postbackd campaigns add) and country_code (ISO 3166 alpha-2) may be \
                given, or left empty. A row is keyed by its date, ad_network_id, app_id, campaign \
                and country_code: a key already stored has its spend replaced, so re-adding a \
                corrected export changes only what changed. Each file is one transaction: a file \
                with any problem stores nothing, and every problem is named FILE:LINE: column: what. \
                docs/costs.md shows how to turn Apple Ads, Google Ads and Meta exports into this file.

                Reports then show spend, cpi (spend over installs) and roas (revenue over spend) \
                when grouped by date (install_date with --date-basis install), app_id, \
                ad_network_id, campaign and country_code; finer cost rows sum into coarser reports.

                Examples:
                  postbackd costs add spend/2026-11.csv
                  postbackd costs list --from 2026-11-01 --to 2026-11-30
                  postbackd costs list --format csv > spend.csv

                Exit status: 0 done; 2 a file has problems (nothing of it is stored; the other \
                files are), or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check spend files and store their rows, each file in one transaction."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "text or json (JSON Lines, one object per file stored).")
            var format: ResultFormat = .text

            @Argument(help: "Spend files (CSV); - reads standard input.")
            var files: [String]

            func run() async throws {
                try await addFiles(files, database: database, format: format, what: "cost row") {
                    try await CostsJob.addCosts($0, files: $1)
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the stored cost rows.")

            @OptionGroup var database: DatabaseOptions

            @OptionGroup var period: PeriodOptions

            @Option(help: "table, csv (a spend file costs add reads back) or json (JSON Lines).")
            var format: ListFormat = .table

            func run() async throws {
                let costs = try await database.perform {
                    try await CostsJob.costs($0, from: period.first, to: period.last)
                }
                format.write(costs, table: CostsJob.table, csv: CostsJob.csv, json: CostsJob.json)
            }
        }
    }

    struct Rates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store exchange rates, for reports in one currency (report --currency).",
            discussion: """
                A rates file is CSV with the header date,base,quote,rate: on date (UTC, \
                YYYY-MM-DD), 1 base is rate quote (ISO 4217 codes; a positive decimal). A rate is \
                keyed by its date and pair: a stored one is replaced. report --currency CODE \
                converts each day's revenue and spend by that day's rate, or the latest of the 7 \
                days before (a rate given the other way round is inverted); without one, that day's \
                converted amounts are empty and a warning names the day and pair.

                Examples:
                  postbackd rates add rates/2026-11.csv
                  postbackd rates list --from 2026-11-01
                  postbackd report --by ad_network_id --currency EUR

                Exit status: 0 done; 2 a file has problems (nothing of it is stored; the other \
                files are), or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check exchange-rate files and store their rates, each file in one transaction."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "text or json (JSON Lines, one object per file stored).")
            var format: ResultFormat = .text

            @Argument(help: "Exchange-rate files (CSV: date,base,quote,rate); - reads standard input.")
            var files: [String]

            func run() async throws {
                try await addFiles(files, database: database, format: format, what: "rate") {
                    try await CostsJob.addRates($0, files: $1)
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the stored exchange rates.")

            @OptionGroup var database: DatabaseOptions

            @OptionGroup var period: PeriodOptions

            @Option(help: "table, csv (a rates file rates add reads back) or json (JSON Lines).")
            var format: ListFormat = .table

            func run() async throws {
                let rates = try await database.perform {
                    try await CostsJob.rates($0, from: period.first, to: period.last)
                }
                format.write(rates, table: CostsJob.ratesTable, csv: CostsJob.ratesCSV, json: CostsJob.ratesJSON)
            }
        }
    }

    /// `--format` of `costs list` and `rates list`.
    enum ListFormat: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json

        /// `rows` on standard output, by the writer of this format.
        func write<Row>(
            _ rows: [Row],
            table: ([Row]) -> String,
            csv: ([Row]) -> String,
            json: ([Row]) -> String
        ) {
            let output = TextOutput.standardOutput()
            switch self {
            case .table: output.write(table(rows))
            case .csv: output.write(csv(rows))
            case .json: output.write(json(rows))
            }
            output.flush()
        }
    }
}

/// `costs add` and `rates add`: stores the files without problems, prints what each changed,
/// then every problem of the others (exit status 2).
private func addFiles(
    _ files: [String],
    database: DatabaseOptions,
    format: ResultFormat,
    what: String,
    add: (StoreLocation, [String]) async throws -> CostsJob.Outcome
) async throws {
    let outcome: CostsJob.Outcome = try await database.perform(whileWriting: true) { try await add($0, files) }
    let output = TextOutput.standardOutput()
    for change in outcome.changes { output.line(format == .json ? change.json : change.text) }
    output.flush()
    guard outcome.refused.isEmpty else {
        throw failInput(
            outcome.refused.map { "nothing of \($0.file ?? "") was stored:\n" + $0.reason }.joined(separator: "\n")
        )
    }
}

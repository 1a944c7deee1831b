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

        typealias Add = AddRowFiles<Self>
        typealias List = ListRows<Self>
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

        typealias Add = AddRowFiles<Self>
        typealias List = ListRows<Self>
    }
}

/// What `costs` and `rates` differ in: their help and their jobs. Both store CSV files, each in one
/// transaction (`add`), and show the stored rows as a table, CSV or JSON Lines (`list`).
protocol StoredRowsCommand {
    associatedtype Row
    /// `add`'s abstract.
    static var addAbstract: String { get }
    /// The help of `add`'s files.
    static var filesHelp: String { get }
    /// `list`'s abstract.
    static var listAbstract: String { get }
    /// What `list --format csv` writes.
    static var csvHelp: String { get }
    static func add(_ location: StoreLocation, files: [String]) async throws -> CostsJob.Outcome
    static func rows(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [Row]
    static func table(_ rows: [Row]) -> String
    static func csv(_ rows: [Row]) -> String
    static func json(_ rows: [Row]) -> String
}

extension Postbackd.Costs: StoredRowsCommand {
    static let addAbstract = "Check spend files and store their rows, each file in one transaction."
    static let filesHelp = "Spend files (CSV); - reads standard input."
    static let listAbstract = "Show the stored cost rows."
    static let csvHelp = "a spend file costs add reads back"
    static func add(_ location: StoreLocation, files: [String]) async throws -> CostsJob.Outcome {
        try await CostsJob.addCosts(location, files: files)
    }
    static func rows(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredCost] {
        try await CostsJob.costs(location, from: from, to: to)
    }
    static func table(_ rows: [StoredCost]) -> String { CostsJob.table(rows) }
    static func csv(_ rows: [StoredCost]) -> String { CostsJob.csv(rows) }
    static func json(_ rows: [StoredCost]) -> String { CostsJob.json(rows) }
}

extension Postbackd.Rates: StoredRowsCommand {
    static let addAbstract = "Check exchange-rate files and store their rates, each file in one transaction."
    static let filesHelp = "Exchange-rate files (CSV: date,base,quote,rate); - reads standard input."
    static let listAbstract = "Show the stored exchange rates."
    static let csvHelp = "a rates file rates add reads back"
    static func add(_ location: StoreLocation, files: [String]) async throws -> CostsJob.Outcome {
        try await CostsJob.addRates(location, files: files)
    }
    static func rows(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredRate] {
        try await CostsJob.rates(location, from: from, to: to)
    }
    static func table(_ rows: [StoredRate]) -> String { CostsJob.ratesTable(rows) }
    static func csv(_ rows: [StoredRate]) -> String { CostsJob.ratesCSV(rows) }
    static func json(_ rows: [StoredRate]) -> String { CostsJob.ratesJSON(rows) }
}

/// `costs add` and `rates add`: stores the files without problems, prints what each changed,
/// then every problem of the others (exit status 2).
struct AddRowFiles<Kind: StoredRowsCommand>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "add", abstract: Kind.addAbstract)
    }

    @OptionGroup var database: DatabaseOptions

    @Option(help: "text or json (JSON Lines, one object per file stored).")
    var format: ResultFormat = .text

    @Argument(help: ArgumentHelp(Kind.filesHelp))
    var files: [String]

    func run() async throws {
        let outcome = try await database.perform(whileWriting: true) { try await Kind.add($0, files: files) }
        let output = TextOutput.standardOutput()
        for change in outcome.changes { output.line(format == .json ? change.json : change.text) }
        output.flush()
        guard outcome.refused.isEmpty else {
            throw failInput(
                outcome.refused.map { "nothing of \($0.file ?? "") was stored:\n" + $0.reason }.joined(separator: "\n")
            )
        }
    }
}

/// `costs list` and `rates list`.
struct ListRows<Kind: StoredRowsCommand>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "list", abstract: Kind.listAbstract)
    }

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var period: PeriodOptions

    @Option(help: ArgumentHelp("table, csv (\(Kind.csvHelp)) or json (JSON Lines)."))
    var format: ListFormat = .table

    func run() async throws {
        let rows = try await database.perform { try await Kind.rows($0, from: period.first, to: period.last) }
        format.write(rows, table: Kind.table, csv: Kind.csv, json: Kind.json)
    }
}

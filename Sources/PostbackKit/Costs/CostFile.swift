/// One row of a spend file (`postbackd costs add`): what was spent with `adNetworkID` on `date`
/// (a UTC day), in `currency`, for the app, campaign and country when the row names them.
///
/// A row is keyed by its date and its dimensions (``key``): adding a row whose key is stored
/// replaces that row's spend and currency.
package struct CostRow: Sendable, Hashable {
    package var date: UTCDay
    package var adNetworkID: String
    package var appID: Int64?
    /// The campaign name, as the campaign mappings name it (`postbackd campaigns add`).
    package var campaign: String?
    /// ISO 3166 alpha-2, as postbacks carry it.
    package var countryCode: String?
    /// ISO 4217.
    package var currency: String
    /// The spend in millionths of the currency unit: sums are exact.
    package var spendMicros: Int64
    /// Where the row was read: the file, and its line.
    package var source: String
    package var line: Int

    package init(
        date: UTCDay,
        adNetworkID: String,
        appID: Int64? = nil,
        campaign: String? = nil,
        countryCode: String? = nil,
        currency: String,
        spendMicros: Int64,
        source: String = "",
        line: Int = 0
    ) {
        self.date = date
        self.adNetworkID = adNetworkID
        self.appID = appID
        self.campaign = campaign
        self.countryCode = countryCode
        self.currency = currency
        self.spendMicros = spendMicros
        self.source = source
        self.line = line
    }

    /// The date and dimensions that identify the row.
    package var key: [String] {
        [date.description, adNetworkID, appID.map(String.init) ?? "", campaign ?? "", countryCode ?? ""]
    }

    /// `source:line`.
    package var place: String { "\(source):\(line)" }

    /// The columns of a spend file, required ones first, in the order `costs list` writes them.
    package static let columns = ["date", "ad_network_id", "app_id", "campaign", "country_code", "spend", "currency"]
    /// The columns every spend file has.
    package static let requiredColumns = ["date", "ad_network_id", "spend", "currency"]
}

/// An exchange rate (`postbackd rates add`): on `date`, 1 `base` is `rate` `quote`.
package struct ExchangeRate: Sendable, Hashable {
    package var date: UTCDay
    package var base: String
    package var quote: String
    package var rate: Double
    package var source: String
    package var line: Int

    package init(date: UTCDay, base: String, quote: String, rate: Double, source: String = "", line: Int = 0) {
        self.date = date
        self.base = base
        self.quote = quote
        self.rate = rate
        self.source = source
        self.line = line
    }

    /// `source:line`.
    package var place: String { "\(source):\(line)" }

    /// The columns of a rates file, in order.
    package static let columns = ["date", "base", "quote", "rate"]
}

/// Spend and exchange-rate files: CSV with a header naming its columns (any order), read and
/// checked. Every problem is named `FILE:LINE: column: what`; a file with any problem gives no
/// row.
package enum CostFile {
    /// The largest file read.
    package static let maximumBytes = 256 << 20
    /// The most problems listed (the count of the rest follows).
    static let maximumProblems = 200
    /// The longest campaign name (as campaign mappings allow).
    static let maximumCampaignBytes = 1_024
    /// The largest spend of one row: 10^12 currency units, so that micros sum well within 64 bits.
    static let maximumSpendMicros: Int64 = 1_000_000_000_000 * 1_000_000

    /// Reads and checks a spend file (`-`: standard input).
    package static func readCosts(_ path: String) -> Result<[CostRow], FileProblemsError> {
        read(path, what: "a spend file") { parseCosts($0, source: $1) }
    }

    /// Reads and checks an exchange-rate file (`-`: standard input).
    package static func readRates(_ path: String) -> Result<[ExchangeRate], FileProblemsError> {
        read(path, what: "an exchange-rate file") { parseRates($0, source: $1) }
    }

    static func read<Row>(
        _ path: String,
        what: String,
        _ parse: ([UInt8], String) -> (rows: [Row], problems: [String])
    ) -> Result<[Row], FileProblemsError> {
        let name = path == "-" ? "standard input" : path
        let bytes: [UInt8]
        do {
            bytes = try WholeFile.read(path, limit: maximumBytes, what: what)
        } catch {
            return .failure(FileProblemsError(.invalid, file: name, problems: [error.reason]))
        }
        var (rows, problems) = parse(bytes, name)
        if problems.isEmpty && rows.isEmpty {
            return .failure(FileProblemsError(.empty, file: name, problems: ["\(name): no rows (only a header)"]))
        }
        guard problems.isEmpty else {
            if problems.count > maximumProblems {
                let more = problems.count - maximumProblems
                problems = Array(problems.prefix(maximumProblems)) + ["… and \(more) more problems"]
            }
            rows = []
            return .failure(FileProblemsError(.invalid, file: name, problems: problems))
        }
        return .success(rows)
    }

    /// Parses a spend file's bytes; `source` names it. Returns the rows that can be read and a
    /// problem for each cell that cannot, and for each row whose key an earlier row has.
    package static func parseCosts(_ bytes: [UInt8], source: String) -> (rows: [CostRow], problems: [String]) {
        var rows: [CostRow] = []
        var firstLine: [[String]: Int] = [:]
        let problems = parseTable(
            bytes,
            source: source,
            known: CostRow.columns,
            required: CostRow.requiredColumns
        ) { cells, line, problem in
            let date = day(cells["date"], problem)
            let network = networkID(cells["ad_network_id"], problem)
            let appID = appID(cells["app_id"], problem)
            let campaign = campaign(cells["campaign"], problem)
            let country = countryCode(cells["country_code"], problem)
            let spend = amount(cells["spend"] ?? "", column: "spend", problem)
            let currency = currencyCode(cells["currency"], column: "currency", problem)
            guard let date, let network, let spend, let currency else { return }
            let row = CostRow(
                date: date,
                adNetworkID: network,
                appID: appID,
                campaign: campaign,
                countryCode: country,
                currency: currency,
                spendMicros: spend,
                source: source,
                line: line
            )
            if let earlier = firstLine[row.key] {
                problem(
                    "key",
                    "the same date, ad_network_id, app_id, campaign and country_code as line \(earlier); give each once"
                )
                return
            }
            firstLine[row.key] = line
            rows.append(row)
        }
        return (problems.isEmpty ? rows : [], problems)
    }

    /// Parses an exchange-rate file's bytes (`date,base,quote,rate`).
    package static func parseRates(_ bytes: [UInt8], source: String) -> (rows: [ExchangeRate], problems: [String]) {
        var rows: [ExchangeRate] = []
        var firstLine: [[String]: Int] = [:]
        let problems = parseTable(
            bytes,
            source: source,
            known: ExchangeRate.columns,
            required: ExchangeRate.columns
        ) { cells, line, problem in
            let date = day(cells["date"], problem)
            let base = currencyCode(cells["base"], column: "base", problem)
            let quote = currencyCode(cells["quote"], column: "quote", problem)
            if let base, let quote, base == quote { problem("quote", "the same currency as base (\(base))") }
            var rate: Double?
            let text = cells["rate"] ?? ""
            if isPlainDecimal(text), let value = Double(text), value > 0, value.isFinite {
                rate = value
            } else {
                problem("rate", "expected a positive decimal number such as 1.0842, found \"\(text.prefix(64))\"")
            }
            guard let date, let base, let quote, let rate, base != quote else { return }
            let key = [date.description, base, quote]
            if let earlier = firstLine[key] {
                problem("key", "the same date, base and quote as line \(earlier); give each once")
                return
            }
            firstLine[key] = line
            rows.append(ExchangeRate(date: date, base: base, quote: quote, rate: rate, source: source, line: line))
        }
        return (problems.isEmpty ? rows : [], problems)
    }

    // MARK: - Cells

    /// An app's id, or nil for an empty cell (a problem for anything else).
    static func appID(_ text: String?, _ problem: (String, String) -> Void) -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        guard let id = Int64(text), id > 0 else {
            problem("app_id", "expected the app's id (a positive integer) or empty, found \"\(text.prefix(64))\"")
            return nil
        }
        return id
    }

    /// A campaign name, or nil for an empty cell.
    static func campaign(_ text: String?, _ problem: (String, String) -> Void) -> String? {
        guard let text, !text.isEmpty else { return nil }
        guard text.utf8.count <= maximumCampaignBytes else {
            problem("campaign", "longer than \(maximumCampaignBytes) bytes")
            return nil
        }
        return text
    }

    /// An ISO 3166 alpha-2 code, or nil for an empty cell.
    static func countryCode(_ text: String?, _ problem: (String, String) -> Void) -> String? {
        guard let text, !text.isEmpty else { return nil }
        guard text.utf8.count == 2, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            problem(
                "country_code",
                "expected two capital letters (ISO 3166 alpha-2, as postbacks carry it, e.g. US) or empty, found \"\(text.prefix(64))\""
            )
            return nil
        }
        return text
    }

    static func day(_ text: String?, _ problem: (String, String) -> Void) -> UTCDay? {
        let text = text ?? ""
        guard text.utf8.count == 10, let day = UTCDay(text) else {
            problem("date", "expected a day as YYYY-MM-DD (UTC), found \"\(text.prefix(64))\"")
            return nil
        }
        return day
    }

    static func networkID(_ text: String?, _ problem: (String, String) -> Void) -> String? {
        let text = text ?? ""
        guard !text.isEmpty, text.utf8.count <= 255,
            !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value > 0x7E })
        else {
            problem(
                "ad_network_id",
                "expected the network's id, e.g. example123.skadnetwork, found \"\(text.prefix(64))\""
            )
            return nil
        }
        return text
    }

    private static func currencyCode(_ text: String?, column: String, _ problem: (String, String) -> Void) -> String? {
        let text = text ?? ""
        guard isCurrencyCode(text) else {
            problem(column, "expected a three-letter ISO 4217 code such as USD, found \"\(text.prefix(64))\"")
            return nil
        }
        return text
    }

    /// Digits, then optionally a point and more digits: no sign, exponent or separators.
    private static func isPlainDecimal(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts.allSatisfy({ $0.allSatisfy(isDigit) }) else {
            return false
        }
        return parts.count == 1 || !parts[1].isEmpty
    }

    /// A non-negative decimal amount with at most six decimals, in micros.
    private static func amount(_ text: String, column: String, _ problem: (String, String) -> Void) -> Int64? {
        if text.hasPrefix("-") {
            problem(column, "negative (\(text.prefix(64))); spend is 0 or more")
            return nil
        }
        guard isPlainDecimal(text) else {
            problem(
                column,
                "expected a decimal number such as 1234.56 (a point, no sign, currency symbol or thousands separator), found \"\(text.prefix(64))\""
            )
            return nil
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= 6 else {
            problem(column, "more than six decimals (\(text.prefix(64)))")
            return nil
        }
        let whole = parts[0].drop { $0 == "0" }
        guard whole.count <= 13, let units = Int64(whole.isEmpty ? "0" : String(whole)),
            let micros = Int64(fraction + String(repeating: "0", count: 6 - fraction.count)),
            units <= maximumSpendMicros / 1_000_000
        else {
            problem(column, "more than \(maximumSpendMicros / 1_000_000) (\(text.prefix(64)))")
            return nil
        }
        let total = units * 1_000_000 + micros
        guard total <= maximumSpendMicros else {
            problem(column, "more than \(maximumSpendMicros / 1_000_000) (\(text.prefix(64)))")
            return nil
        }
        return total
    }

    // MARK: - Table

    /// Reads the header, then calls `row` with each data record's cells by column name (absent
    /// optional columns are missing), its line, and a function taking a problem's column and
    /// what is wrong. Returns every problem, each as `FILE:LINE: column: what`.
    ///
    /// `shape`, given the header's names, says how to read them when they are not postbackd's
    /// own (``TableShape``).
    static func parseTable(
        _ bytes: [UInt8],
        source: String,
        known: [String],
        required: [String],
        shape: ([String]) -> TableShape? = { _ in nil },
        row: (_ cells: [String: String], _ line: Int, _ problem: (String, String) -> Void) -> Void
    ) -> [String] {
        var records = CSVRecords(bytes)
        guard let first = records.next() else {
            return ["\(source): empty; expected a header naming the columns \(required.joined(separator: ", "))"]
        }
        if let problem = first.problem { return ["\(source):\(first.line): header: \(problem)"] }
        var problems: [String] = []
        let shape = shape(first.fields) ?? TableShape(aliases: [:], ignoresUnknown: false, required: required)
        let (aliases, ignoresUnknown, required) = (shape.aliases, shape.ignoresUnknown, shape.required)
        let header = first.fields.map { aliases[$0] ?? $0 }
        for (index, name) in header.enumerated() {
            if !known.contains(name) {
                if ignoresUnknown { continue }
                problems.append(
                    "\(source):\(first.line): header: unknown column \"\(name.prefix(64))\"; the columns are \(known.joined(separator: ", "))"
                )
            } else if header[..<index].contains(name) {
                problems.append("\(source):\(first.line): header: the column \(name) is given twice")
            }
        }
        for name in required where !header.contains(name) {
            problems.append("\(source):\(first.line): header: the column \(name) is missing")
        }
        // Without a required column every row would repeat it; otherwise the rows are checked
        // too, the unknown columns left aside, so that one pass names every problem.
        guard required.allSatisfy(header.contains) else { return problems }
        let headerText = first.fields.joined(separator: ",")
        problems += records.rows(source: source, header: header, headerText: headerText) { fields, line in
            var cells: [String: String] = [:]
            for (name, value) in zip(header, fields) where known.contains(name) && cells[name] == nil {
                cells[name] = value
            }
            var rowProblems: [String] = []
            row(cells, line) { column, what in rowProblems.append("\(source):\(line): \(column): \(what)") }
            return rowProblems
        }
        return problems
    }
}

/// How a CSV file's header is read when it is not postbackd's own shape: a network's export.
struct TableShape {
    /// Each of the export's names with its column among postbackd's (`segments.date`: `date`).
    var aliases: [String: String]
    /// Whether a name that is none of postbackd's columns is left aside rather than refused (an
    /// export carries columns postbackd does not keep).
    var ignoresUnknown: Bool
    /// The columns (postbackd's names) the file must have.
    var required: [String]
}

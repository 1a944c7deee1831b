import PostbackKit

/// Spend beside a report: the cost rows (`postbackd costs add`) summed by the report's
/// dimensions, and CPI and ROAS from them.
///
/// A cost row carries a day and, optionally, an app, a campaign and a country: it joins a
/// report whose dimensions are all among those (the day being the report's basis: `date`
/// received, or `install_date`). Finer rows sum into coarser reports; a row without a
/// dimension the report groups by joins the report's row where that dimension is empty (as
/// spend not broken down by campaign joins the unmapped postbacks).
enum SpendSQL {
    /// Each of the query's dimensions as a cost row's expression, or why spend cannot join the
    /// report.
    static func expressions(_ query: ReportQuery) -> Result<[SQLQuery], SpendUnavailable> {
        if query.events { return .failure(SpendUnavailable("spend is not shown with --events")) }
        return rowExpressions(query, shown: "spend is", row: "cost row")
    }

    /// Each of the query's dimensions as an expression of a table keyed as `costs` is (a day,
    /// `ad_network_id`, `app_id` 0 for none, `campaign` and `country_code` '' for none: costs and
    /// claims), or why its rows cannot join the report (`shown`: "spend is"; `row`: "cost row").
    static func rowExpressions(_ query: ReportQuery, shown: String, row: String) -> Result<[SQLQuery], SpendUnavailable>
    {
        var expressions: [SQLQuery] = []
        for dimension in query.dimensions {
            switch dimension {
            case .date where query.dateBasis == .received, .installDate where query.dateBasis == .install:
                expressions.append(SQLQuery.dayText("date"))
            case .appID: expressions.append("NULLIF(app_id, 0)")
            case .adNetworkID: expressions.append("ad_network_id")
            case .campaign: expressions.append("NULLIF(campaign, '')")
            case .countryCode: expressions.append("NULLIF(country_code, '')")
            case .date, .installDate:
                return .failure(
                    SpendUnavailable(
                        "\(shown) not shown: a \(row)'s date is the day of the report's basis (by \(query.dateBasis == .install ? "install_date with --date-basis install" : "date"))"
                    )
                )
            default:
                return .failure(
                    SpendUnavailable(
                        "\(shown) not shown: \(row)s carry date, app_id, ad_network_id, campaign and country_code, not \(dimension.column)"
                    )
                )
            }
        }
        return .success(expressions)
    }

    /// One row when the query's period has cost rows of its apps and networks, none otherwise.
    static func anyRow(_ query: ReportQuery) -> SQLQuery {
        "SELECT 1 FROM costs \(CostsSQL.whereClause(conditions(query))) LIMIT 1"
    }

    /// The conditions of the query's period, apps and networks on cost rows (a row without an
    /// app is left out of a report of some apps).
    static func conditions(_ query: ReportQuery) -> [SQLQuery] {
        var conditions = CostsSQL.period(from: query.from, to: query.to)
        if !query.appIDs.isEmpty { conditions.append("app_id IN (\(list: query.appIDs.map { "\($0)" }))") }
        if !query.adNetworkIDs.isEmpty {
            conditions.append("ad_network_id IN (\(list: query.adNetworkIDs.map { "\($0)" }))")
        }
        return conditions
    }
}

/// Why a report shows no spend although the period has cost rows.
struct SpendUnavailable: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The spend of one group of a report, in one currency.
struct SpendSum {
    var key: [DimensionValue]
    var currency: String
    var micros: Int64
}

extension PostbackStorage {
    /// The spend of the query's period per group of its dimensions and currency, or why the
    /// report cannot show it (nil: the period has no cost rows).
    func spend(_ query: ReportQuery) async throws -> Result<[SpendSum], SpendUnavailable>? {
        let conditions = SpendSQL.conditions(query)
        return try await withSQL("read spend", .read) { sql in
            switch SpendSQL.expressions(query) {
            case .failure(let reason):
                return try await sql.row(SpendSQL.anyRow(query)) == nil ? nil : .failure(reason)
            case .success(let expressions):
                let groups = expressions.count
                let positions = (1...groups + 1).map(String.init).joined(separator: ", ")
                var sums: [SpendSum] = []
                try await sql.forEachRow(
                    """
                    SELECT \(list: expressions + ["currency"]), \(ReportSQL.integerSum("spend_micros"))
                    FROM costs \(CostsSQL.whereClause(conditions)) GROUP BY \(raw: positions)
                    """
                ) { row in
                    sums.append(
                        SpendSum(
                            key: (0..<groups).map { DimensionValue(row.values[$0]) },
                            currency: try row.string(groups),
                            micros: try row.int64(groups + 1)
                        )
                    )
                }
                return sums.isEmpty ? nil : .success(sums)
            }
        }
    }
}

extension PostbackStorage {
    /// Whether the query's period has cost rows of its apps and networks.
    func hasCosts(_ query: ReportQuery) async throws -> Bool {
        try await withSQL("read spend", .read) { sql in try await sql.row(SpendSQL.anyRow(query)) != nil }
    }
}

extension Report {
    /// Adds the spend to its rows (a group with spend and no postbacks gets a row of zero
    /// counts), or returns why the report cannot show the period's spend.
    mutating func addSpend(_ store: any PostbackStorage, _ query: ReportQuery) async throws -> String? {
        switch try await store.spend(query) {
        case nil: return nil
        case .failure(let unavailable)?: return unavailable.reason
        case .success(let sums)?:
            var currencies = Set<String>()
            joinRows(sums.map(\.key)) { row, index in
                currencies.insert(sums[index].currency)
                row.spend[sums[index].currency, default: 0] += Double(sums[index].micros) / 1_000_000
            }
            showsSpend = true
            spendCurrencies = currencies.sorted()
            return nil
        }
    }

    /// Calls `add` with the row of each of `keys` (a group of the report's dimensions) and the
    /// key's index: a group without a row gets one of zero counts, in order.
    mutating func joinRows(_ keys: [[DimensionValue]], _ add: (inout ReportRow, Int) -> Void) {
        var positions: [[DimensionValue]: Int] = [:]
        for (position, row) in rows.enumerated() { positions[row.dimensions] = position }
        var added = false
        for (index, key) in keys.enumerated() {
            let position: Int
            if let found = positions[key] {
                position = found
            } else {
                var row = ReportRow(dimensions: key)
                for metric in ReportMetric.allCases { row.counts[metric] = 0 }
                rows.append(row)
                position = rows.count - 1
                positions[key] = position
                added = true
            }
            add(&rows[position], index)
        }
        if added { rows.sort { $0.dimensions.lexicographicallyPrecedes($1.dimensions) } }
    }

    /// Converts every amount of each row into `currency` by its day's exchange rate (the day
    /// at `dayPosition` among the dimensions). A row with a day and currency without a rate is
    /// left ``ReportRow/unconverted``; returns a warning naming those days and pairs.
    mutating func convert(to currency: String, dayPosition: Int, rates: ExchangeRates) -> String? {
        var missing: [String: Set<UTCDay>] = [:]
        let kinds = ReportRow.revenueKinds
        for index in rows.indices {
            var row = rows[index]
            let day: UTCDay? =
                if case .text(let text) = row.dimensions[dayPosition] { UTCDay(text) } else { nil }
            func rate(_ from: String) -> Double? {
                if from == currency { return 1 }
                guard let day else { return nil }
                guard let found = rates.rate(on: day, from: from, to: currency) else {
                    missing["\(from)→\(currency)", default: []].insert(day)
                    return nil
                }
                return found
            }
            var complete = true
            for kind in kinds {
                var total: RevenueTotal?
                for (code, amount) in row[keyPath: kind] {
                    guard let factor = rate(code) else {
                        complete = false
                        continue
                    }
                    var sum = total ?? RevenueTotal(min: 0, max: 0, estimate: 0)
                    sum.min += amount.min * factor
                    sum.max += amount.max * factor
                    sum.estimate += amount.estimate * factor
                    total = sum
                }
                row[keyPath: kind] = total.map { [currency: $0] } ?? [:]
            }
            var spend: Double?
            for (code, amount) in row.spend {
                guard let factor = rate(code) else {
                    complete = false
                    continue
                }
                spend = (spend ?? 0) + amount * factor
            }
            row.spend = spend.map { [currency: $0] } ?? [:]
            if !complete {
                row.unconverted = true
                for kind in kinds { row[keyPath: kind] = [:] }
                row.spend = [:]
            }
            rows[index] = row
        }
        self.currency = currency
        if !currencies.isEmpty { currencies = [currency] }
        if !reengagementCurrencies.isEmpty { reengagementCurrencies = [currency] }
        if !spendCurrencies.isEmpty { spendCurrencies = [currency] }
        guard !missing.isEmpty else { return nil }
        return missing.keys.sorted().map { pair in
            let days = (missing[pair] ?? []).sorted()
            let shown = days.prefix(10).map(\.description).joined(separator: ", ")
            let more = days.count > 10 ? " and \(days.count - 10) more days" : ""
            return
                "no \(pair) exchange rate on \(shown)\(more) or in the \(ExchangeRates.maximumAge) days before (postbackd rates add): the converted amounts of rows of those days are empty"
        }.joined(separator: "\n")
    }
}

/// Exchange rates by pair and day, for ``Report/convert(to:dayPosition:rates:)``.
struct ExchangeRates {
    /// The oldest rate used, in days before the day converted.
    static let maximumAge = 7

    /// Per pair (`base`, `quote`): days since the epoch and rates, by day.
    private var byPair: [[String]: [(day: Int64, rate: Double)]] = [:]

    init(_ rates: [ExchangeRate]) {
        for rate in rates {
            byPair[[rate.base, rate.quote], default: []].append((rate.date.daysSinceEpoch, rate.rate))
        }
        for key in byPair.keys { byPair[key]?.sort { $0.day < $1.day } }
    }

    /// The rate from `from` to `to` on `day`: the latest of the day and the
    /// ``maximumAge`` days before, given as `from`→`to` or as its inverse (the direct one
    /// when both are of that day).
    func rate(on day: UTCDay, from: String, to: String) -> Double? {
        func latest(_ pair: [String]) -> (day: Int64, rate: Double)? {
            byPair[pair]?.last { $0.day <= day.daysSinceEpoch && $0.day >= day.daysSinceEpoch - Int64(Self.maximumAge) }
        }
        let direct = latest([from, to])
        let inverse = latest([to, from])
        switch (direct, inverse) {
        case (let direct?, let inverse?): return inverse.day > direct.day ? 1 / inverse.rate : direct.rate
        case (let direct?, nil): return direct.rate
        case (nil, let inverse?): return 1 / inverse.rate
        case (nil, nil): return nil
        }
    }
}

extension ReportRow {
    /// Spend per install in `currency`: nil without spend in it or without installs.
    package func cpi(_ currency: String) -> Double? {
        guard !unconverted, let spend = spend[currency], let installs = counts[.installs], installs > 0 else {
            return nil
        }
        return spend / Double(installs)
    }

    /// Revenue over spend in `currency` (`modeled`: the modeled revenue): nil without spend in
    /// it, or when the row's revenue is in another currency (a ratio of two currencies means
    /// nothing; `--currency` converts them into one).
    package func roas(_ currency: String, modeled: Bool = false) -> RevenueTotal? {
        guard !unconverted, let spend = spend[currency], spend > 0 else { return nil }
        let revenue = modeled ? modeledRevenue : self.revenue
        guard revenue.allSatisfy({ $0.key == currency || $0.value.max == 0 }) else { return nil }
        let total = revenue[currency] ?? RevenueTotal(min: 0, max: 0, estimate: 0)
        return RevenueTotal(min: total.min / spend, max: total.max / spend, estimate: total.estimate / spend)
    }
}

extension Report {
    /// The currencies with a ROAS column: those of both revenue and spend.
    package var roasCurrencies: [String] { spendCurrencies.filter(currencies.contains) }
}

import PostbackKit

/// How `postbackd report` prints.
package enum ReportFormat: String, Sendable, CaseIterable {
    /// Aligned columns for a terminal, fitted to 100 columns.
    case table
    /// RFC 4180 CSV with a header row, revenue flattened to `revenue_<CUR>_min`,
    /// `revenue_<CUR>_max`, `revenue_<CUR>` (the estimate).
    case csv
    /// A JSON array of row objects, revenue as `{"USD": {"min": …, "max": …, "estimate": …}}`.
    case json
}

extension Report {
    /// The report in `format`.
    package func formatted(_ format: ReportFormat, width: Int = 100) -> String {
        if let cohortRows { return cohortsFormatted(cohortRows, format, width: width) }
        return switch format {
        case .table: table(width: width)
        case .csv: csv()
        case .json: json()
        }
    }

    // MARK: - JSON

    package func json() -> String {
        let objects = rows.map { row -> String in
            var object = JSONObjectWriter()
            addDimensions(row, to: &object)
            if events {
                object.add("event", row.event)
                object.add("model_type", row.eventModel)
                object.add("occurrences_min", row.occurrencesMin)
                object.add("occurrences_max", row.occurrencesMax)
                object.add("postbacks", row.eventPostbacks)
            } else {
                for metric in ReportMetric.shown { object.add(metric.rawValue, row.counts[metric] ?? 0) }
                for (name, ratio) in ratios(row) {
                    object.addRaw(name, json: ratio.map { formatJSONNumber(roundedRatio($0)) } ?? "null")
                }
                for column in extraColumns { object.add(column, row.extras[column] ?? 0) }
                if maturityAsOf != nil {
                    let maturity = maturity(row)
                    object.add("installs_final", maturity?.installs)
                    object.add("values_final", maturity?.values)
                }
                if showsClaims {
                    object.add("claimed_installs", row.claimedInstalls)
                    object.add("claim_gap", row.claimGap)
                    object.addRaw(
                        "claim_coverage",
                        json: row.claimCoverage.map { formatJSONNumber(roundedRatio($0)) } ?? "null"
                    )
                }
            }
            // Unconverted (`--currency` without a rate): unknown, not none.
            func money(_ text: String) -> String { row.unconverted ? "null" : text }
            object.addRaw("revenue", json: money(revenueObjectJSON(row.revenue)))
            if !events {
                object.addRaw("reengagement_revenue", json: money(revenueObjectJSON(row.reengagementRevenue)))
                object.addRaw("revenue_modeled", json: money(revenueObjectJSON(row.modeledRevenue)))
                object.addRaw(
                    "reengagement_revenue_modeled",
                    json: money(revenueObjectJSON(row.reengagementModeledRevenue))
                )
                if showsSpend {
                    object.addRaw("spend", json: money(amountsJSON(row.spend)))
                    object.addRaw(
                        "cpi",
                        json: money(amountsJSON(row.spend.keys.reduce(into: [:]) { $0[$1] = row.cpi($1) }))
                    )
                    object.addRaw(
                        "roas",
                        json: money(revenueObjectJSON(row.spend.keys.reduce(into: [:]) { $0[$1] = row.roas($1) }))
                    )
                    object.addRaw(
                        "roas_modeled",
                        json: money(
                            revenueObjectJSON(row.spend.keys.reduce(into: [:]) { $0[$1] = row.roas($1, modeled: true) })
                        )
                    )
                }
                object.add("modeled_basis", row.modeledBasis)
                var nulls = JSONObjectWriter()
                for metric in ReportMetric.allCases {
                    if let basis = metric.basis { nulls.add(basis.rawValue, row.counts[metric] ?? 0) }
                }
                object.addRaw("modeled_nulls", json: nulls.text)
            }
            return object.text
        }
        return objects.isEmpty ? "[]" : "[\n" + objects.joined(separator: ",\n") + "\n]"
    }

    /// The revenue columns of the CSV and table formats beyond the observed revenue: its name
    /// prefix, and each row's amounts by currency.
    private var moreRevenue:
        [(prefix: String, label: String, currencies: [String], amounts: (ReportRow) -> [String: RevenueTotal])]
    {
        guard !events else { return [] }
        var kinds: [(String, String, [String], (ReportRow) -> [String: RevenueTotal])] = []
        if showsModeled { kinds.append(("revenue_modeled", "modeled", currencies, \.modeledRevenue)) }
        if !reengagementCurrencies.isEmpty {
            kinds.append(("reengagement_revenue", "re-eng.", reengagementCurrencies, \.reengagementRevenue))
            if showsModeled {
                kinds.append(
                    (
                        "reengagement_revenue_modeled", "re-eng. modeled", reengagementCurrencies,
                        \.reengagementModeledRevenue
                    )
                )
            }
        }
        return kinds
    }

    func addDimensions(_ row: ReportRow, to object: inout JSONObjectWriter) {
        for (dimension, value) in zip(dimensions, row.dimensions) {
            switch (dimension, value) {
            case (_, .null): object.addRaw(dimension.column, json: "null")
            case (.redownload, .integer(let number)), (.didWin, .integer(let number)):
                object.add(dimension.column, number != 0)
            case (_, .integer(let number)): object.add(dimension.column, number)
            case (_, .text(let text)): object.add(dimension.column, text)
            }
        }
    }

    // MARK: - CSV

    package func csv() -> String {
        var header = dimensions.map(\.column)
        header +=
            events
            ? ["event", "model_type", "occurrences_min", "occurrences_max", "postbacks"]
            : ReportMetric.shown.map(\.rawValue)
        if !events { header += ratioColumns }
        header += extraColumns
        if maturityAsOf != nil && !events { header += ["installs_final", "values_final"] }
        if showsClaims && !events { header += ["claimed_installs", "claim_gap", "claim_coverage"] }
        for currency in currencies {
            header += ["revenue_\(currency)_min", "revenue_\(currency)_max", "revenue_\(currency)"]
        }
        for kind in moreRevenue {
            for currency in kind.currencies {
                header += [
                    "\(kind.prefix)_\(currency)_min", "\(kind.prefix)_\(currency)_max", "\(kind.prefix)_\(currency)",
                ]
            }
        }
        for currency in spendCurrencies where showsSpend && !events {
            header += ["spend_\(currency)", "cpi_\(currency)"]
        }
        for currency in roasCurrencies where showsSpend && !events {
            header += ["roas_\(currency)_min", "roas_\(currency)_estimate", "roas_\(currency)_max"]
            if showsModeled {
                header += [
                    "roas_modeled_\(currency)_min", "roas_modeled_\(currency)_estimate", "roas_modeled_\(currency)_max",
                ]
            }
        }
        let modeledCounts = ReportMetric.allCases.filter { $0.basis != nil }
        if showsModeled && !events { header += ["modeled_basis"] + modeledCounts.map(\.rawValue) }
        var lines = [header.map(csvField).joined(separator: ",")]
        for row in rows {
            var fields = zip(dimensions, row.dimensions).map { dimension, value in plain(dimension, value) }
            if events {
                fields += [
                    row.event ?? "", row.eventModel ?? "", String(row.occurrencesMin), String(row.occurrencesMax),
                    String(row.eventPostbacks),
                ]
            } else {
                fields += ReportMetric.shown.map { String(row.counts[$0] ?? 0) }
                fields += ratios(row).map { $0.1.map { formatJSONNumber(roundedRatio($0)) } ?? "" }
                fields += extraColumns.map { String(row.extras[$0] ?? 0) }
                if maturityAsOf != nil {
                    let maturity = maturity(row)
                    fields += [maturity.map { String($0.installs) } ?? "", maturity.map { String($0.values) } ?? ""]
                }
                if showsClaims {
                    fields += [
                        row.claimedInstalls.map(String.init) ?? "", row.claimGap.map(String.init) ?? "",
                        row.claimCoverage.map { formatJSONNumber(roundedRatio($0)) } ?? "",
                    ]
                }
            }
            // Unconverted (`--currency` without a rate): unknown, so empty rather than 0.
            func money(_ total: RevenueTotal?) -> [String] {
                guard !row.unconverted else { return ["", "", ""] }
                let total = total ?? RevenueTotal(min: 0, max: 0, estimate: 0)
                return [total.min, total.max, total.estimate].map { formatJSONNumber(roundedMoney($0)) }
            }
            for currency in currencies { fields += money(row.revenue[currency]) }
            for kind in moreRevenue {
                let amounts = kind.amounts(row)
                for currency in kind.currencies { fields += money(amounts[currency]) }
            }
            for currency in spendCurrencies where showsSpend && !events {
                fields += [
                    row.spend[currency].map { formatJSONNumber(roundedMoney($0)) } ?? "",
                    row.cpi(currency).map { formatJSONNumber(roundedMoney($0)) } ?? "",
                ]
            }
            for currency in roasCurrencies where showsSpend && !events {
                for modeled in showsModeled ? [false, true] : [false] {
                    let roas = row.roas(currency, modeled: modeled)
                    fields += [roas?.min, roas?.estimate, roas?.max].map {
                        $0.map { formatJSONNumber(roundedMoney($0)) } ?? ""
                    }
                }
            }
            if showsModeled && !events {
                fields += [row.modeledBasis ?? ""] + modeledCounts.map { String(row.counts[$0] ?? 0) }
            }
            lines.append(fields.map(csvField).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func plain(_ dimension: AggregateDimension, _ value: DimensionValue) -> String {
        render(dimension, value, null: "", yes: "true", no: "false")
    }

    /// A dimension value as text: NULL and the booleans (`redownload`, `did_win`) as given.
    private func render(
        _ dimension: AggregateDimension,
        _ value: DimensionValue,
        null: String,
        yes: String,
        no: String
    )
        -> String
    {
        switch (dimension, value) {
        case (_, .null): null
        case (.redownload, .integer(let number)), (.didWin, .integer(let number)): number != 0 ? yes : no
        case (_, .integer(let number)): String(number)
        case (_, .text(let text)): text
        }
    }

    // MARK: - Table

    package func table(width: Int) -> String {
        guard !rows.isEmpty else {
            return "no aggregate rows for this period (run postbackd aggregate after ingesting)\n"
        }
        var columns: [TableColumn] = dimensions.map { dimension in
            TableColumn(
                header: dimension.column,
                rightAligned: dimension.sqlType == "INTEGER" && dimension != .redownload && dimension != .didWin,
                cells: rows.map { human(dimension, $0.dimensions[dimensions.firstIndex(of: dimension) ?? 0]) },
                priority: 100,
                truncatable: dimension == .adNetworkID || dimension == .sourceDomain
            )
        }
        if events {
            columns.append(
                TableColumn(
                    header: "event",
                    rightAligned: false,
                    cells: rows.map { $0.event ?? "" },
                    priority: 100,
                    truncatable: true
                )
            )
            columns.append(
                TableColumn(
                    header: "model",
                    rightAligned: false,
                    cells: rows.map { $0.eventModel ?? "" },
                    priority: 92
                )
            )
            columns.append(
                TableColumn(
                    header: "occurrences",
                    rightAligned: true,
                    cells: rows.map { range($0.occurrencesMin, $0.occurrencesMax) },
                    priority: 90
                )
            )
            columns.append(
                TableColumn(
                    header: "postbacks",
                    rightAligned: true,
                    cells: rows.map { formatCount($0.eventPostbacks) },
                    priority: 95
                )
            )
        } else {
            let priorities: [ReportMetric: Int] = [
                .postbacks: 95, .installs: 99, .redownloads: 80, .reengagements: 70, .nonWinning: 60, .testMode: 50,
                .development: 45, .nullConversionValues: 40, .unmapped: 30, .unmodelled: 20, .modelAmbiguous: 15,
            ]
            for metric in ReportMetric.shown {
                columns.append(
                    .counts(metric.shortName, of: rows, priority: priorities[metric] ?? 10) { $0.counts[metric] ?? 0 }
                )
            }
        }
        if !events {
            let totals = ReportRow(
                dimensions: [],
                counts: ReportCounts(
                    ReportMetric.allCases.map { metric in rows.reduce(0) { $0 + ($1.counts[metric] ?? 0) } }
                )
            )
            for (index, name) in ratioColumns.enumerated() {
                columns.append(
                    TableColumn(
                        header: name == "null_rate" ? "null rate" : "tier share",
                        rightAligned: true,
                        cells: rows.map { row in ratios(row)[index].1.map(formatPercent) ?? "–" },
                        total: rows.count > 1 && name == "null_rate" ? totals.nullRate.map(formatPercent) ?? "–" : nil,
                        priority: name == "null_rate" ? 85 : 96
                    )
                )
            }
        }
        for column in extraColumns {
            columns.append(.counts(column, of: rows, priority: 97) { $0.extras[column] ?? 0 })
        }
        if maturityAsOf != nil && !events {
            columns.append(
                TableColumn(
                    header: "final",
                    rightAligned: false,
                    cells: rows.map { maturity($0)?.word ?? "–" },
                    priority: 99
                )
            )
        }
        if showsClaims && !events { columns += claimColumns() }
        for currency in currencies {
            let total = rows.reduce(0.0) { $0 + ($1.revenue[currency]?.estimate ?? 0) }
            columns.append(
                TableColumn(
                    header: "\(currency) est.",
                    rightAligned: true,
                    cells: rows.map { $0.revenue[currency].map { formatMoney($0.estimate) } ?? "" },
                    total: rows.count > 1 && !events ? formatMoney(total) : nil,
                    // A report with claims is about installs: its revenue gives way first.
                    priority: showsClaims ? 89 : 98
                )
            )
        }
        for kind in moreRevenue {
            for currency in kind.currencies {
                let total = rows.reduce(0.0) { $0 + (kind.amounts($1)[currency]?.estimate ?? 0) }
                columns.append(
                    TableColumn(
                        header: "\(currency) \(kind.label)",
                        rightAligned: true,
                        cells: rows.map { kind.amounts($0)[currency].map { formatMoney($0.estimate) } ?? "" },
                        total: rows.count > 1 ? formatMoney(total) : nil,
                        priority: 97
                    )
                )
            }
        }
        for currency in spendCurrencies where showsSpend && !events {
            let total = rows.reduce(0.0) { $0 + ($1.spend[currency] ?? 0) }
            columns.append(
                TableColumn(
                    header: "\(currency) spend",
                    rightAligned: true,
                    cells: rows.map { $0.unconverted ? "–" : $0.spend[currency].map(formatMoney) ?? "" },
                    total: rows.count > 1 && !rows.contains(where: \.unconverted) ? formatMoney(total) : nil,
                    priority: 98
                )
            )
            columns.append(
                TableColumn(
                    header: "\(currency) CPI",
                    rightAligned: true,
                    cells: rows.map { $0.cpi(currency).map(formatMoney) ?? "–" },
                    priority: 96
                )
            )
        }
        for currency in roasCurrencies where showsSpend && !events {
            columns.append(
                TableColumn(
                    header: "\(currency) ROAS",
                    rightAligned: true,
                    cells: rows.map { $0.roas(currency).map { formatPercent($0.estimate) } ?? "–" },
                    priority: 97
                )
            )
            if showsModeled {
                columns.append(
                    TableColumn(
                        header: "\(currency) ROAS mod.",
                        rightAligned: true,
                        cells: rows.map { $0.roas(currency, modeled: true).map { formatPercent($0.estimate) } ?? "–" },
                        priority: 93
                    )
                )
            }
        }
        if showsModeled && !events {
            columns.append(
                TableColumn(
                    header: "basis",
                    rightAligned: false,
                    cells: rows.map { $0.modeledBasis ?? "–" },
                    priority: 91
                )
            )
        }
        if !events && rows.count > 1 && !columns.isEmpty && !dimensions.isEmpty {
            columns[0].total = "total"
        }
        // Too wide: first hide the least important metrics, then shorten long names.
        var hidden: [String] = []
        while TableColumn.width(of: columns) > width,
            let drop = columns.indices.filter({ columns[$0].priority < 90 }).min(by: {
                columns[$0].priority < columns[$1].priority
            })
        {
            hidden.append(columns[drop].header)
            columns.remove(at: drop)
        }
        while TableColumn.width(of: columns) > width,
            let widest = columns.indices.filter({ columns[$0].truncatable && columns[$0].width > 14 }).max(by: {
                columns[$0].width < columns[$1].width
            })
        {
            columns[widest].limit = max(14, columns[widest].width - (TableColumn.width(of: columns) - width))
        }
        let lines = TableColumn.lines(columns, rows: rows.count)
        var notes: [String] = []
        if !currencies.isEmpty {
            notes.append("revenue: \(policy ?? "midpoint") estimate; --format csv or json gives min and max")
        }
        if let asOf = maturityAsOf, !events {
            notes.append(
                "final as of \(asOf.iso8601): yes, every postback of the install date can have arrived (postbacks 1 and 2 by \(Maturity.valuesFinalDays) days after it, Apple's retries included); installs, every postback 0 (by \(Maturity.installsFinalDays) days); no, its installs are still growing (--as-of sets the time)"
            )
        }
        if showsClaims && !events {
            notes.append(
                "claimed: installs the networks claim (postbackd claims add); gap: claimed minus installs; coverage: installs over claimed; –: no claim"
            )
        }
        if showsSpend && !events {
            notes.append(
                "spend: postbackd costs add; CPI: spend over installs; ROAS: revenue estimate over spend, where both are in one currency (--format csv or json gives its min and max)"
            )
        }
        if let currency {
            notes.append("amounts in \(currency), converted by each day's rate (postbackd rates add); –: no rate")
        }
        if showsModeled && !events {
            notes.append(
                "modeled: observed revenue plus each null value given the mean revenue of its reference group (basis: day, week, app_week, mixed; none: not modeled); see docs/reports.md"
            )
        }
        if !hidden.isEmpty {
            notes.append("not shown at this width: \(hidden.joined(separator: ", ")) (--format csv shows every column)")
        }
        return (lines + notes.flatMap { wrap($0, width: width) }).map { $0.trailingSpacesRemoved }.joined(
            separator: "\n"
        ) + "\n"
    }

    /// The table's columns of `--with-claims`, with the totals of the rows.
    private func claimColumns() -> [TableColumn] {
        let claimed = rows.compactMap(\.claimedInstalls)
        let total = claimed.isEmpty ? nil : claimed.reduce(0, +)
        let installs = rows.filter { $0.claimedInstalls != nil }.reduce(0) { $0 + ($1.counts[.installs] ?? 0) }
        let many = rows.count > 1
        return [
            TableColumn(
                header: "claimed",
                rightAligned: true,
                cells: rows.map { $0.claimedInstalls.map(formatCount) ?? "–" },
                total: many ? total.map(formatCount) ?? "–" : nil,
                priority: 99
            ),
            TableColumn(
                header: "gap",
                rightAligned: true,
                cells: rows.map { $0.claimGap.map(formatCount) ?? "–" },
                total: many ? total.map { formatCount($0 - installs) } ?? "–" : nil,
                priority: 98
            ),
            TableColumn(
                header: "coverage",
                rightAligned: true,
                cells: rows.map { $0.claimCoverage.map(formatPercent) ?? "–" },
                total: many
                    ? total.flatMap { $0 > 0 ? formatPercent(Double(installs) / Double($0)) : nil } ?? "–" : nil,
                priority: 99
            ),
        ]
    }

    /// The ratio columns after the count metrics: `null_rate`, and `tier_share` when grouped
    /// by tier.
    var ratioColumns: [String] {
        ["null_rate"] + (dimensions.contains(.crowdAnonymityTier) ? ["tier_share"] : [])
    }

    private func ratios(_ row: ReportRow) -> [(String, Double?)] {
        ratioColumns.map { ($0, $0 == "null_rate" ? row.nullRate : row.tierShare) }
    }

    func human(_ dimension: AggregateDimension, _ value: DimensionValue) -> String {
        render(dimension, value, null: "–", yes: "yes", no: "no")
    }

    private func range(_ min: Int, _ max: Int) -> String {
        min == max ? formatCount(min) : "\(formatCount(min))–\(formatCount(max))"
    }
}

func revenueObjectJSON(_ revenue: [String: RevenueTotal]) -> String {
    // Written as text directly: a report of a year writes four of these per row.
    guard !revenue.isEmpty else { return "{}" }
    var text = "{"
    for (currency, total) in revenue.count == 1 ? Array(revenue) : revenue.sorted(by: { $0.key < $1.key }) {
        if text.utf8.count > 1 { text += "," }
        text += jsonQuoted(currency)
        text += ":{\"min\":" + formatJSONNumber(roundedMoney(total.min))
        text += ",\"max\":" + formatJSONNumber(roundedMoney(total.max))
        text += ",\"estimate\":" + formatJSONNumber(roundedMoney(total.estimate)) + "}"
    }
    return text + "}"
}

/// Amounts per currency as `{"USD": 12.5}`.
func amountsJSON(_ amounts: [String: Double]) -> String {
    let members = amounts.sorted { $0.key < $1.key }
    return "{"
        + members.map { jsonQuoted($0.key) + ":" + formatJSONNumber(roundedMoney($0.value)) }.joined(separator: ",")
        + "}"
}

/// Money rounded to millionths, as stored sums of micros are exact to that.
package func roundedMoney(_ value: Double) -> Double {
    (value * 1_000_000).rounded() / 1_000_000
}

extension String {
    var trailingSpacesRemoved: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

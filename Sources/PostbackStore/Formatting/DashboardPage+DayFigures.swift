import PostbackKit

// The figures drawn by day: installs and redownloads by network, revenue, spend.
extension DashboardPage {
    // MARK: - Figures

    var dayLabels: [String] {
        days.map { day in
            let text = day.description
            return days.count > 1 && days.first?.description.prefix(4) == days.last?.description.prefix(4)
                ? String(text.dropFirst(5)) : text
        }
    }

    var dayAxisTitle: String {
        dashboard.query.dateBasis == .install ? "Install date (UTC)" : "Day received (UTC)"
    }

    /// By install date, the days whose installs are not final now (``Maturity``); none by day
    /// received.
    var growingDays: Set<UTCDay> {
        guard dashboard.query.dateBasis == .install else { return [] }
        return Set(days.filter { !Maturity(day: $0, asOf: dashboard.generatedAt).installs })
    }

    func dayIndex() -> [UTCDay: Int] {
        Dictionary(uniqueKeysWithValues: days.enumerated().map { ($1, $0) })
    }

    func installsFigure(metric: ReportMetric, id: String, title: String) -> String {
        let index = dayIndex()
        var byNetwork: [String: [Double]] = [:]
        var totals: [String: Int] = [:]
        for row in dashboard.byDayAndNetwork.rows {
            guard let day = row.day, let position = index[day] else { continue }
            let network = row.network
            byNetwork[network, default: Array(repeating: 0, count: days.count)][position] += Double(
                row.counts[metric] ?? 0
            )
            totals[network, default: 0] += row.counts[metric] ?? 0
        }
        // The networks in one order (and colour) for both charts: by installs and redownloads.
        let order = networkOrder
        let rank = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        let shown = order.filter { (totals[$0] ?? 0) > 0 }
        let drawn = shown.filter { (rank[$0] ?? .max) < Self.maximumNetworks }
        var series: [SVGChart.Series] = drawn.map { network in
            .init(name: network, color: SVGChart.palette[rank[network] ?? 0], values: byNetwork[network] ?? [])
        }
        let rest = shown.filter { !drawn.contains($0) }
        if !rest.isEmpty {
            var other = Array(repeating: 0.0, count: days.count)
            for network in rest {
                for (position, value) in (byNetwork[network] ?? []).enumerated() { other[position] += value }
            }
            series.append(
                .init(
                    name: rest.count == 1 ? "other (1 network)" : "other (\(rest.count) networks)",
                    color: SVGChart.palette[7],
                    values: other
                )
            )
        }
        let ranked = shown
        let noun = metric == .installs ? "installs" : "redownloads"
        let sum = totals.values.reduce(0, +)
        var description = "\(count(sum)) \(noun) over \(days.count) days"
        if let peak = peakDay(series) { description += "; the most on \(peak.day) (\(count(Int(peak.value))))" }
        let networks = ranked.isEmpty ? "." : "; networks: " + series.map(\.name).joined(separator: ", ") + "."
        var chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: noun.capitalizedFirst)
        // By install date, the days whose postbacks 0 are still arriving are drawn lighter.
        let growing = growingDays
        chart.faded = Set(days.indices.filter { growing.contains(days[$0]) })
        var caption = "Stacked by ad network. " + description + "."
        if !chart.faded.isEmpty {
            caption +=
                " Lighter: the \(chart.faded.count) install date\(chart.faded.count == 1 ? "" : "s") not final yet, whose postbacks 0 can still arrive (up to \(Maturity.installsFinalDays) days after the day, Apple's retries included)."
        }
        let final = dashboard.query.dateBasis == .install
        return figure(
            id: id,
            title: title,
            caption: caption,
            svg: chart.stackedBars(series, id: id, title: title, description: description + networks),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle] + series.map(\.name) + ["total"] + (final ? ["final"] : []),
                rows: days.indices.map { position in
                    let values = series.map { Int($0.values[safe: position] ?? 0) }
                    return [days[position].description] + values.map(count) + [count(values.reduce(0, +))]
                        + (final ? [growing.contains(days[position]) ? "no" : "yes"] : [])
                }
            )
        )
    }

    /// The networks by installs plus redownloads over the period, most first.
    var networkOrder: [String] {
        var totals: [String: Int] = [:]
        for row in dashboard.byDayAndNetwork.rows {
            totals[row.network, default: 0] += (row.counts[.installs] ?? 0) + (row.counts[.redownloads] ?? 0)
        }
        return totals.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map(\.key)
    }

    func peakDay(_ series: [SVGChart.Series]) -> (day: UTCDay, value: Double)? {
        var best: (UTCDay, Double)?
        for position in days.indices {
            let value = series.reduce(0) { $0 + ($1.values[safe: position] ?? 0) }
            if value > (best?.1 ?? 0) { best = (days[position], value) }
        }
        return best
    }

    var revenueFigures: String {
        let index = dayIndex()
        let currencies = dashboard.byDay.currencies
        guard !currencies.isEmpty else {
            return figure(
                id: "revenue",
                title: "Revenue estimate per day",
                caption:
                    "No revenue: no conversion model decodes these postbacks (postbackd models add), or none carries a value.",
                svg: "",
                legend: [],
                table: ""
            )
        }
        var out = ""
        for (number, currency) in currencies.enumerated() {
            var low = Array(repeating: 0.0, count: days.count)
            var high = low
            var estimate = low
            var modeled = low
            for row in dashboard.byDay.rows {
                guard let day = row.day, let position = index[day], let revenue = row.revenue[currency] else {
                    continue
                }
                low[position] = revenue.min
                high[position] = revenue.max
                estimate[position] = revenue.estimate
                modeled[position] = row.modeledRevenue[currency]?.estimate ?? revenue.estimate
            }
            let modeledTotal = dashboard.total.modeledRevenue[currency]?.estimate ?? 0
            let id = "revenue-\(number)"
            let title = "Revenue estimate per day (\(currency))"
            let total = dashboard.total.revenue[currency]
            let description =
                "\(currency) \(decimal(total?.estimate ?? 0, fractionDigits: 2)) estimated over \(days.count) days, between \(decimal(total?.min ?? 0, fractionDigits: 2)) and \(decimal(total?.max ?? 0, fractionDigits: 2))."
            var chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "Revenue (\(currency))")
            chart.yFormat = compactNumber
            out += figure(
                id: id,
                title: title,
                caption:
                    "The line is the estimate of downloads and redownloads; the band spans the minimum and maximum the conversion values allow. The dashed line adds the postbacks Apple sent without a value, each given the mean revenue of those with one of the same app, network and day (else week): it assumes they behave alike, which is optimistic for small campaigns. "
                    + description + " Modeled: \(currency) \(decimal(modeledTotal, fractionDigits: 2)).",
                svg: chart.lines(
                    [
                        .init(name: "estimate", color: SVGChart.palette[2], values: estimate),
                        .init(name: "modeled", color: SVGChart.palette[2], values: modeled, dashed: true),
                    ],
                    band: (low, high),
                    id: id,
                    title: title,
                    description: description
                ),
                legend: [
                    ("estimate", SVGChart.palette[2]), ("minimum to maximum", SVGChart.palette[2] + "40"),
                    ("modeled, with nulls (dashed)", SVGChart.palette[2]),
                ],
                table: table(
                    caption: title,
                    headers: [dayAxisTitle, "minimum", "estimate", "maximum", "modeled"],
                    rows: days.indices.map { position in
                        [days[position].description]
                            + [low[position], estimate[position], high[position], modeled[position]].map {
                                decimal($0, fractionDigits: 2)
                            }
                    }
                )
            )
        }
        return out
    }

    /// Spend and return on it, when the period has cost rows: per currency of spend, the ROAS
    /// per day (the estimate's line, the minimum-to-maximum band, a gap on a day without spend
    /// or with revenue in another currency), and tables by network and by campaign.
    var spendFigures: String {
        guard let spend = dashboard.spend else { return "" }
        let index = dayIndex()
        var out = ""
        for (number, currency) in spend.byNetwork.spendCurrencies.enumerated() {
            var low = Array(repeating: Double.nan, count: days.count)
            var high = low
            var estimate = low
            var daily = Array(repeating: 0.0, count: days.count)
            for row in spend.byDay.rows {
                guard let day = row.day, let position = index[day] else { continue }
                daily[position] = row.spend[currency] ?? 0
                guard let roas = row.roas(currency) else { continue }
                low[position] = roas.min * 100
                high[position] = roas.max * 100
                estimate[position] = roas.estimate * 100
            }
            var total = ReportRow(dimensions: [])
            // The networks' revenue: converted with a currency, as the rows are.
            for row in spend.byNetwork.rows {
                for (code, revenue) in row.revenue {
                    var sum = total.revenue[code] ?? RevenueTotal(min: 0, max: 0, estimate: 0)
                    sum.min += revenue.min
                    sum.max += revenue.max
                    sum.estimate += revenue.estimate
                    total.revenue[code] = sum
                }
            }
            total.spend[currency] = spend.byNetwork.rows.reduce(0) { $0 + ($1.spend[currency] ?? 0) }
            total.counts[.installs] = spend.byNetwork.rows.reduce(0) { $0 + ($1.counts[.installs] ?? 0) }
            let id = "spend-\(number)"
            let title = "Return on ad spend per day (\(currency))"
            var description =
                "\(currency) \(decimal(total.spend[currency] ?? 0, fractionDigits: 2)) spent over \(days.count) days"
            if let roas = total.roas(currency) {
                description +=
                    "; ROAS \(percent(roas.estimate)) (between \(percent(roas.min)) and \(percent(roas.max)))"
            }
            if let cpi = total.cpi(currency) { description += "; CPI \(currency) \(decimal(cpi, fractionDigits: 2))" }
            description += "."
            var chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "ROAS (%)")
            chart.yFormat = { decimal($0, fractionDigits: 0) + "%" }
            func tableRows(_ report: Report, name: (ReportRow) -> String) -> [[String]] {
                report.rows.filter { $0.spend[currency] != nil || $0.unconverted }
                    .sorted { ($0.spend[currency] ?? 0, name($1)) > ($1.spend[currency] ?? 0, name($0)) }
                    .map { row in
                        let roas = row.roas(currency)
                        return [
                            name(row),
                            row.unconverted ? "– (no rate)" : decimal(row.spend[currency] ?? 0, fractionDigits: 2),
                            count(row.counts[.installs] ?? 0),
                            row.cpi(currency).map { decimal($0, fractionDigits: 2) } ?? "–",
                            row.revenue[currency].map { decimal($0.estimate, fractionDigits: 2) } ?? "–",
                            roas.map { "\(percent($0.estimate)) (\(percent($0.min))–\(percent($0.max)))" } ?? "–",
                        ]
                    }
            }
            let headers = ["spend", "installs", "CPI", "revenue est.", "ROAS (min–max)"]
            var shown = table(
                caption: "By ad network (\(currency))",
                headers: ["ad network"] + headers,
                rows: tableRows(spend.byNetwork) { row in
                    if case .text(let network) = row.dimensions.first { return network }
                    return "–"
                }
            )
            if let byCampaign = spend.byCampaign {
                shown += table(
                    caption: "By campaign (\(currency); spend without a campaign beside the unmapped postbacks)",
                    headers: ["campaign"] + headers,
                    rows: tableRows(byCampaign) { row in
                        let network = if case .text(let text) = row.dimensions.first { text } else { "–" }
                        let campaign = if case .text(let text) = row.dimensions.last { text } else { "no campaign" }
                        return "\(campaign) · \(network)"
                    }
                )
            }
            out += figure(
                id: id,
                title: title,
                caption:
                    "Revenue estimate of downloads and redownloads over spend (postbackd costs add), per day; the band spans the revenue's minimum and maximum. No point: no spend that day, or revenue in another currency (give a currency to convert). By day received, a day's postbacks arrive up to days after its spend: by install date pairs them. "
                    + description,
                svg: chart.lines(
                    [.init(name: "ROAS", color: SVGChart.palette[5], values: estimate)],
                    band: (low, high),
                    id: id,
                    title: title,
                    description: description
                ),
                legend: [("ROAS estimate", SVGChart.palette[5]), ("minimum to maximum", SVGChart.palette[5] + "40")],
                shown: shown,
                table: table(
                    caption: title,
                    headers: [dayAxisTitle, "spend", "ROAS min.", "ROAS", "ROAS max."],
                    rows: days.indices.map { position in
                        [days[position].description, decimal(daily[position], fractionDigits: 2)]
                            + [low[position], estimate[position], high[position]].map {
                                $0.isNaN ? "–" : percent($0 / 100)
                            }
                    }
                )
            )
        }
        return out
    }

    /// Re-engagements per day and their revenue (decoded by the re-engagement model), apart from
    /// installs'; nothing when the period has none.
}

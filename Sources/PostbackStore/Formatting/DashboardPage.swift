import PostbackKit

/// The dashboard as one HTML page: served at `GET /dashboard` and written by
/// `postbackd report --format html`.
///
/// Self-contained: styles inline, charts inline SVG (``SVGChart``), no script, no font and no
/// URL of another host, so it works on a network without internet and in an email. Each chart
/// is a `<figure>` with a caption, an SVG with a title and a description for assistive
/// technology, a legend, and its numbers as a table.
package struct DashboardPage {
    /// Where the page is shown.
    package enum Mode: Sendable {
        /// Served: the filters are a form, the basis a pair of links to `path`.
        case served(path: String)
        /// A file: the filters are written out.
        case file
    }

    let dashboard: Dashboard
    let mode: Mode
    /// The days on the x axis: every day of the period, those without rows as zeros.
    let days: [UTCDay]

    package init(_ dashboard: Dashboard, mode: Mode) {
        self.dashboard = dashboard
        self.mode = mode
        var seen = Set(dashboard.byDay.rows.compactMap { $0.day })
        if dashboard.query.dateBasis == .received {
            seen.formUnion(dashboard.series.intake.map(\.day))
            seen.formUnion(dashboard.appleAds?.keys ?? [:].keys)
        }
        let first = dashboard.query.from ?? seen.min()
        let last = dashboard.query.to ?? seen.max()
        if let first, let last, first <= last, last.daysSinceEpoch - first.daysSinceEpoch < Self.maximumDays {
            days = (first.daysSinceEpoch...last.daysSinceEpoch).map(UTCDay.init(daysSinceEpoch:))
        } else {
            days = seen.sorted()
        }
    }

    /// The longest period drawn day by day (ten years).
    static let maximumDays: Int64 = 3_660

    /// The most networks drawn apart; the rest are "other".
    static let maximumNetworks = 7

    package var html: String {
        let query = dashboard.query
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>postbackd: \(escapeHTML(periodText))</title>
            <style>\(Self.style)</style>
            </head><body>
            <header><h1>postbackd</h1><p class="period">\(escapeHTML(periodText)) · \(query.dateBasis == .install ? "by install date" : "by day received")\(filterText.isEmpty ? "" : " · " + escapeHTML(filterText))</p>
            """
        out += controls
        out += "</header>"
        if let warning = dashboard.warning {
            out += "<p class=\"warning\" role=\"status\">⚠ " + escapeHTML(warning).replacingNewlines() + "</p>"
        }
        out += headline
        out += "<main>"
        if dashboard.totals.rows.isEmpty {
            out +=
                "<p class=\"empty\">No aggregated postbacks match. Store postbacks (<code>postbackd ingest</code> or <code>serve</code>), then run <code>postbackd aggregate</code>.</p>"
        } else {
            out += installsFigure(metric: .installs, id: "installs", title: "Installs per day, by ad network")
            out += installsFigure(metric: .redownloads, id: "redownloads", title: "Redownloads per day, by ad network")
            out += revenueFigures
            out += spendFigures
            out += reengagementFigure
            out += fineValueFigure
            out += nullRateFigure
            out += tierFigure
            out += appleAdsFigure
        }
        if !dashboard.totals.rows.isEmpty || !dashboard.series.intake.isEmpty { out += intakeFigure }
        out +=
            "</main><footer>Generated \(escapeHTML(dashboard.generatedAt.iso8601)) by postbackd \(escapeHTML(PostbackdVersion.current)) from the aggregate tables"
        if let policy = dashboard.byDay.policy { out += " (revenue estimate: \(escapeHTML(policy)))" }
        out += ".</footer></body></html>\n"
        return out
    }

    // MARK: - Header

    private var periodText: String {
        switch (days.first, days.last) {
        case (let first?, let last?) where first == last: first.description
        case (let first?, let last?): "\(first) to \(last)"
        default: "no data"
        }
    }

    private var filterText: String {
        var parts: [String] = []
        if !dashboard.query.appIDs.isEmpty {
            parts.append("app " + dashboard.query.appIDs.map(String.init).joined(separator: ", "))
        }
        if !dashboard.query.adNetworkIDs.isEmpty {
            parts.append("network " + dashboard.query.adNetworkIDs.joined(separator: ", "))
        }
        if let currency = dashboard.query.currency { parts.append("spend and ROAS in " + currency) }
        return parts.joined(separator: " · ")
    }

    /// The filter form and the basis links (served), nothing in a file.
    private var controls: String {
        guard case .served(let path) = mode else { return "" }
        let query = dashboard.query
        func link(_ basis: DateBasis, _ text: String) -> String {
            var parameters: [(String, String)] = []
            if let from = query.from { parameters.append(("from", from.description)) }
            if let to = query.to { parameters.append(("to", to.description)) }
            for app in query.appIDs { parameters.append(("app_id", String(app))) }
            for network in query.adNetworkIDs { parameters.append(("ad_network_id", network)) }
            if let currency = query.currency { parameters.append(("currency", currency)) }
            parameters.append(("date_basis", basis.rawValue))
            let href = path + "?" + parameters.map { $0.0 + "=" + percentEncoded($0.1) }.joined(separator: "&")
            let current = query.dateBasis == basis ? " aria-current=\"page\"" : ""
            return "<a href=\"\(escapeHTML(href))\"\(current)>\(text)</a>"
        }
        return """
            <form method="get" action="\(escapeHTML(path))" class="filters" aria-label="Filters">
            <label>From <input type="date" name="from" value="\(query.from?.description ?? "")"></label>
            <label>To <input type="date" name="to" value="\(query.to?.description ?? "")"></label>
            <label>App id <input name="app_id" inputmode="numeric" value="\(escapeHTML(query.appIDs.map(String.init).joined(separator: ",")))"></label>
            <label>Ad network <input name="ad_network_id" value="\(escapeHTML(query.adNetworkIDs.joined(separator: ",")))"></label>
            <label>Spend in <input name="currency" maxlength="3" placeholder="USD" value="\(escapeHTML(query.currency ?? ""))"></label>
            <input type="hidden" name="date_basis" value="\(query.dateBasis.rawValue)">
            <button type="submit">Apply</button>
            </form>
            <nav class="basis" aria-label="Days">Days: \(link(.received, "received")) \(link(.install, "install"))</nav>
            """
    }

    private var headline: String {
        let total = dashboard.total
        let intake = dashboard.intakeTotals
        var tiles: [(String, String)] = [
            ("Installs", count(total.counts[.installs] ?? 0)),
            ("Redownloads", count(total.counts[.redownloads] ?? 0)),
            ("Postbacks", count(total.counts[.postbacks] ?? 0)),
        ]
        for (currency, revenue) in total.revenue.sorted(by: { $0.key < $1.key }) {
            tiles.append(("Revenue (\(currency))", decimal(revenue.estimate, fractionDigits: 2)))
        }
        tiles.append(("Null conversion values", total.nullRate.map(percent) ?? "–"))
        if dashboard.query.dateBasis == .received {
            // Counted by the day received only.
            tiles.append(("Quarantined", count(intake.quarantined)))
            tiles.append(("Duplicates", count(intake.duplicates)))
        }
        return "<section class=\"tiles\" aria-label=\"Headline numbers\">"
            + tiles.map {
                "<div class=\"tile\"><span class=\"label\">\(escapeHTML($0.0))</span><span class=\"value\">\($0.1)</span></div>"
            }
            .joined() + "</section>"
    }

    // MARK: - Figures

    private var dayLabels: [String] {
        days.map { day in
            let text = day.description
            return days.count > 1 && days.first?.description.prefix(4) == days.last?.description.prefix(4)
                ? String(text.dropFirst(5)) : text
        }
    }

    private var dayAxisTitle: String {
        dashboard.query.dateBasis == .install ? "Install date (UTC)" : "Day received (UTC)"
    }

    private func dayIndex() -> [UTCDay: Int] {
        Dictionary(uniqueKeysWithValues: days.enumerated().map { ($1, $0) })
    }

    private func installsFigure(metric: ReportMetric, id: String, title: String) -> String {
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
        let chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: noun.capitalizedFirst)
        return figure(
            id: id,
            title: title,
            caption: "Stacked by ad network. " + description + ".",
            svg: chart.stackedBars(series, id: id, title: title, description: description + networks),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle] + series.map(\.name) + ["total"],
                rows: days.indices.map { position in
                    let values = series.map { Int($0.values[safe: position] ?? 0) }
                    return [days[position].description] + values.map(count) + [count(values.reduce(0, +))]
                }
            )
        )
    }

    /// The networks by installs plus redownloads over the period, most first.
    private var networkOrder: [String] {
        var totals: [String: Int] = [:]
        for row in dashboard.byDayAndNetwork.rows {
            totals[row.network, default: 0] += (row.counts[.installs] ?? 0) + (row.counts[.redownloads] ?? 0)
        }
        return totals.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map(\.key)
    }

    private func peakDay(_ series: [SVGChart.Series]) -> (day: UTCDay, value: Double)? {
        var best: (UTCDay, Double)?
        for position in days.indices {
            let value = series.reduce(0) { $0 + ($1.values[safe: position] ?? 0) }
            if value > (best?.1 ?? 0) { best = (days[position], value) }
        }
        return best
    }

    private var revenueFigures: String {
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
    private var spendFigures: String {
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
    private var reengagementFigure: String {
        let total = dashboard.total.counts[.reengagements] ?? 0
        let currencies = dashboard.byDay.reengagementCurrencies
        guard total > 0 || !currencies.isEmpty else { return "" }
        let index = dayIndex()
        var counts = Array(repeating: 0.0, count: days.count)
        var revenue = Array(repeating: Array(repeating: 0.0, count: days.count), count: currencies.count)
        for row in dashboard.byDay.rows {
            guard let day = row.day, let position = index[day] else { continue }
            counts[position] = Double(row.counts[.reengagements] ?? 0)
            for (number, currency) in currencies.enumerated() {
                revenue[number][position] = row.reengagementRevenue[currency]?.estimate ?? 0
            }
        }
        let id = "reengagements"
        let title = "Re-engagements per day"
        var description = "\(count(total)) AdAttributionKit re-engagements over \(days.count) days"
        for currency in currencies {
            description +=
                "; \(currency) \(decimal(dashboard.total.reengagementRevenue[currency]?.estimate ?? 0, fractionDigits: 2)) estimated"
        }
        description += "."
        let chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "Re-engagements")
        let series = [SVGChart.Series(name: "re-engagements", color: SVGChart.palette[4], values: counts)]
        return figure(
            id: id,
            title: title,
            caption:
                "Winning production re-engagements (postback 0), never counted as installs; their revenue comes from the app's re-engagement model (none: counted as unmodelled) and is never in the install revenue. "
                + description,
            svg: chart.stackedBars(series, id: id, title: title, description: description),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle, "re-engagements"] + currencies.map { "revenue (\($0))" },
                rows: days.indices.map { position in
                    [days[position].description, count(Int(counts[position]))]
                        + revenue.map { decimal($0[position], fractionDigits: 2) }
                }
            )
        )
    }

    private var fineValueFigure: String {
        var counts = Array(repeating: 0, count: 65)
        for entry in dashboard.series.fineValues {
            let position = entry.fineValue.map { min(max($0, 0), 63) } ?? 64
            counts[position] += entry.postbacks
        }
        let total = counts.reduce(0, +)
        let labels = (0...63).map(String.init) + ["none"]
        let title = "Fine conversion values"
        var description = "\(count(total)) winning postbacks by fine value (0 to 63, or none) over the days received"
        if let top = counts.prefix(64).enumerated().max(by: { $0.element < $1.element }), top.element > 0 {
            description += "; the most common is \(top.offset) (\(count(top.element)))"
        }
        description += "; \(count(counts[64])) without one."
        let chart = SVGChart(labels: labels, xTitle: "Fine conversion value", yTitle: "Postbacks")
        return figure(
            id: "fine-values",
            title: title,
            caption: "How often each fine value was received, by the days received in the period. " + description,
            svg: chart.stackedBars(
                [.init(name: "postbacks", color: SVGChart.palette[0], values: counts.map(Double.init))],
                id: "fine-values",
                title: title,
                description: description
            ),
            legend: [],
            table: table(
                caption: title,
                headers: ["fine value", "postbacks"],
                rows: counts.indices.filter { counts[$0] > 0 }.map { [labels[$0], count(counts[$0])] }
            )
        )
    }

    private var nullRateFigure: String {
        let index = dayIndex()
        var rates = Array(repeating: Double.nan, count: days.count)
        var known = Array(repeating: false, count: days.count)
        for row in dashboard.byDay.rows {
            guard let day = row.day, let position = index[day], let rate = row.nullRate else { continue }
            rates[position] = rate * 100
            known[position] = true
        }
        let title = "Null conversion value rate per day"
        let overall = dashboard.total.nullRate.map(percent) ?? "–"
        let description =
            "Share of winning postbacks received without a conversion value, per day: \(overall) over the period."
        var chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "Without a value (%)")
        chart.yFormat = { decimal($0, fractionDigits: $0 == $0.rounded() ? 0 : 1) + "%" }
        return figure(
            id: "null-rate",
            title: title,
            caption:
                "A rising rate means postbacks arriving below the crowd-anonymity threshold or a schema that fails to set values. "
                + description,
            svg: chart.lines(
                [.init(name: "null rate", color: SVGChart.palette[5], values: rates)],
                maximum: max(rates.filter { !$0.isNaN }.max() ?? 0, 1),
                id: "null-rate",
                title: title,
                description: description
            ),
            legend: [("null rate", SVGChart.palette[5])],
            table: table(
                caption: title,
                headers: [dayAxisTitle, "null rate"],
                rows: days.indices.map { [days[$0].description, known[$0] ? percent(rates[$0] / 100) : "–"] }
            )
        )
    }

    private var tierFigure: String {
        var counts = [0, 0, 0, 0]
        for row in dashboard.byTier.rows {
            guard case .integer(let tier) = row.dimensions.first, (0...3).contains(tier) else { continue }
            counts[Int(tier)] += row.productionPostbacks
        }
        let total = counts.reduce(0, +)
        let title = "Crowd-anonymity tiers"
        let shares = counts.map { total > 0 ? Double($0) / Double(total) : 0 }
        let description =
            total == 0
            ? "No postback with a tier (postback 0 of a winning SKAdNetwork 4.0 or AdAttributionKit attribution)."
            : "Of \(count(total)) postbacks with a tier: "
                + (0...3).map { "tier \($0) \(percent(shares[$0]))" }.joined(separator: ", ") + "."
        var chart = SVGChart(
            labels: ["tier 0", "tier 1", "tier 2", "tier 3"],
            xTitle: "Crowd-anonymity tier",
            yTitle: "Share (%)"
        )
        chart.yFormat = { decimal($0, fractionDigits: 0) + "%" }
        return figure(
            id: "tiers",
            title: title,
            caption: "Higher tiers carry more data (fine values, longer source identifiers). " + description,
            svg: chart.stackedBars(
                [.init(name: "share", color: SVGChart.palette[4], values: shares.map { $0 * 100 })],
                id: "tiers",
                title: title,
                description: description
            ),
            legend: [],
            table: table(
                caption: title,
                headers: ["tier", "postbacks", "share"],
                rows: (0...3).map { ["\($0)", count(counts[$0]), percent(shares[$0])] }
            )
        )
    }

    private var intakeFigure: String {
        let title = "Quarantined, duplicates and conflicts per day"
        guard dashboard.query.dateBasis == .received else {
            return figure(
                id: "intake",
                title: title,
                caption: "Counted by the day received: switch the days to received to see them.",
                svg: "",
                legend: [],
                table: ""
            )
        }
        let index = dayIndex()
        var quarantined = Array(repeating: 0.0, count: days.count)
        var duplicates = quarantined
        var conflicts = quarantined
        for day in dashboard.series.intake {
            guard let position = index[day.day] else { continue }
            quarantined[position] = Double(day.quarantined)
            duplicates[position] = Double(day.duplicates)
            conflicts[position] = Double(day.conflicts)
        }
        let totals = dashboard.intakeTotals
        let description =
            "\(count(totals.quarantined)) quarantined, \(count(totals.duplicates)) duplicate copies, \(count(totals.conflicts)) of them conflicting, over \(days.count) days."
        let series: [SVGChart.Series] = [
            .init(name: "quarantined", color: SVGChart.palette[5], values: quarantined),
            .init(name: "duplicates", color: SVGChart.palette[0], values: duplicates),
            .init(name: "conflicts", color: SVGChart.palette[1], values: conflicts),
        ]
        let chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "Copies")
        return figure(
            id: "intake",
            title: title,
            caption:
                "What did not become a stored postback, for every app and network (conflicts are duplicates whose unsigned values differ). "
                + description,
            svg: chart.lines(series, id: "intake", title: title, description: description),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle, "quarantined", "duplicates", "conflicts"],
                rows: days.indices.map { position in
                    [days[position].description]
                        + [quarantined, duplicates, conflicts].map { count(Int($0[position])) }
                }
            )
        )
    }

    private var appleAdsFigure: String {
        guard let appleAds = dashboard.appleAds else { return "" }
        let index = dayIndex()
        var skan = Array(repeating: 0.0, count: days.count)
        for row in dashboard.byDayAndNetwork.rows where row.network == ApplePlacement.adNetworkID {
            guard let day = row.day, let position = index[day] else { continue }
            skan[position] += Double(row.counts[.installs] ?? 0)
        }
        var adServices = Array(repeating: 0.0, count: days.count)
        for (day, counts) in appleAds {
            guard let position = index[day] else { continue }
            adServices[position] = Double(counts.installs)
        }
        guard skan.contains(where: { $0 > 0 }) || adServices.contains(where: { $0 > 0 }) else { return "" }
        let title = "Apple Ads: SKAdNetwork installs beside AdServices installs"
        let description =
            "\(count(Int(skan.reduce(0, +)))) SKAdNetwork installs from com.apple.ads and \(count(Int(adServices.reduce(0, +)))) AdServices installs over \(days.count) days; two measurements of the same campaigns, never added together."
        let series: [SVGChart.Series] = [
            .init(name: "SKAdNetwork (com.apple.ads)", color: SVGChart.palette[0], values: skan),
            .init(name: "AdServices attribution", color: SVGChart.palette[1], values: adServices),
        ]
        let chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: "Installs")
        return figure(
            id: "apple-ads",
            title: title,
            caption: description,
            svg: chart.lines(series, id: "apple-ads", title: title, description: description),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle, "SKAdNetwork", "AdServices"],
                rows: days.indices.map { [days[$0].description, count(Int(skan[$0])), count(Int(adServices[$0]))] }
            )
        )
    }

    // MARK: - Parts

    private func figure(
        id: String,
        title: String,
        caption: String,
        svg: String,
        legend: [(String, String)],
        shown: String = "",
        table: String
    ) -> String {
        var out =
            "<figure id=\"\(id)\" class=\"chart\"><figcaption><h2>\(escapeHTML(title))</h2><p>\(escapeHTML(caption))</p></figcaption>"
        if !svg.isEmpty { out += "<div class=\"plot\">" + svg + "</div>" }
        if !legend.isEmpty {
            out +=
                "<ul class=\"legend\">"
                + legend.map {
                    "<li><span class=\"swatch\" style=\"background:\($0.1)\"></span>\(escapeHTML($0.0))</li>"
                }.joined()
                + "</ul>"
        }
        out += shown
        if !table.isEmpty { out += "<details><summary>The numbers as a table</summary>" + table + "</details>" }
        return out + "</figure>"
    }

    private func table(caption: String, headers: [String], rows: [[String]]) -> String {
        var out = "<div class=\"table\"><table><caption>\(escapeHTML(caption))</caption><thead><tr>"
        out += headers.map { "<th scope=\"col\">\(escapeHTML($0))</th>" }.joined()
        out += "</tr></thead><tbody>"
        for row in rows {
            out += "<tr>"
            for (column, cell) in row.enumerated() {
                out += column == 0 ? "<th scope=\"row\">\(escapeHTML(cell))</th>" : "<td>\(escapeHTML(cell))</td>"
            }
            out += "</tr>"
        }
        return out + "</tbody></table></div>"
    }

    package static let style = """
        :root{color-scheme:light;--ink:#1d2433;--muted:#5b6475;--line:#d9dee7;--card:#fff;--bg:#f4f6f9}
        *{box-sizing:border-box}
        body{margin:0;padding:16px;background:var(--bg);color:var(--ink);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
        header{display:flex;flex-wrap:wrap;align-items:baseline;gap:8px 24px;margin-bottom:12px}
        h1{font-size:22px;margin:0}
        h2{font-size:16px;margin:0 0 4px}
        .period{margin:0;color:var(--muted)}
        .filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;width:100%}
        .filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
        .filters input{font:inherit;padding:4px 6px;border:1px solid var(--line);border-radius:6px;min-width:0;width:11em}
        button{font:inherit;padding:5px 14px;border-radius:6px;border:1px solid #0072B2;background:#0072B2;color:#fff}
        .basis a{margin-left:6px;color:#0072B2}
        .basis a[aria-current]{font-weight:600;color:var(--ink);text-decoration:none}
        .warning{background:#fff4e0;border:1px solid #e69f00;border-radius:8px;padding:8px 12px}
        .tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin:12px 0}
        .tile{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 12px}
        .tile .label{display:block;font-size:12px;color:var(--muted)}
        .tile .value{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
        main{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,520px),1fr));gap:14px}
        figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px;min-width:0}
        figcaption p{margin:0 0 8px;color:var(--muted);font-size:13px}
        .plot{overflow-x:auto}
        svg{display:block;width:100%;min-width:420px;height:auto;font:13px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
        svg .grid line{stroke:#e6e9ef}
        svg .axis{stroke:#8a93a5}
        svg .ylabels text{text-anchor:end;fill:var(--muted)}
        svg .xlabels text{text-anchor:middle;fill:var(--muted)}
        svg .xtitle,svg .ytitle{text-anchor:middle;fill:var(--ink);font-weight:600}
        .legend{display:flex;flex-wrap:wrap;gap:4px 14px;list-style:none;padding:0;margin:6px 0 0;font-size:13px}
        .swatch{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
        details{margin-top:8px;font-size:13px}
        .table{overflow:auto;max-height:320px}
        table{border-collapse:collapse;font-variant-numeric:tabular-nums}
        caption{text-align:left;color:var(--muted);padding:4px 0}
        th,td{padding:2px 10px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
        th[scope=row]{text-align:left;font-weight:400}
        .empty{grid-column:1/-1;background:var(--card);border:1px dashed var(--line);border-radius:10px;padding:24px}
        footer{margin-top:16px;color:var(--muted);font-size:12px}
        @media (max-width:600px){body{padding:10px}.tile .value{font-size:18px}}
        """
}

extension ReportRow {
    /// The row's first dimension as a day (the dashboard's day reports).
    var day: UTCDay? {
        if case .text(let text) = dimensions.first { return UTCDay(text) }
        return nil
    }

    /// The row's second dimension as a network (the dashboard's day and network report).
    var network: String {
        if dimensions.count > 1, case .text(let text) = dimensions[1] { return text }
        return ""
    }
}

extension String {
    fileprivate func replacingNewlines() -> String {
        split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "<br>")
    }

    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

/// A query parameter value, percent-encoded (RFC 3986 unreserved characters kept).
func percentEncoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.append(Character(UnicodeScalar(byte)))
        default:
            let digits = Array("0123456789ABCDEF")
            out += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
        }
    }
    return out
}

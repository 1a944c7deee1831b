import PostbackKit

// The other figures: re-engagement, fine values, null rates, tiers, the intake, Apple Ads.
extension DashboardPage {
    var reengagementFigure: String {
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

    var fineValueFigure: String {
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

    var nullRateFigure: String {
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

    var tierFigure: String {
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

    var intakeFigure: String {
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
        return dayCountsFigure(
            id: "intake",
            title: title,
            caption:
                "What did not become a stored postback, for every app and network (conflicts are duplicates whose unsigned values differ). "
                + description,
            description: description,
            yTitle: "Copies",
            series: series,
            columns: series.map(\.name)
        )
    }

    var appleAdsFigure: String {
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
        return dayCountsFigure(
            id: "apple-ads",
            title: title,
            caption: description,
            description: description,
            yTitle: "Installs",
            series: series,
            columns: ["SKAdNetwork", "AdServices"]
        )
    }
}

import PostbackKit

/// The networks panel (issue 60): each network's forwards against the devices' copies, from
/// `reconcile` by day and network (docs/auditing.md).
extension DashboardPage {
    /// Both coverages per day for each network that has copies or forwards, and the values its
    /// forwards changed, by direction. Empty when the period has neither.
    var networksFigures: String {
        guard let reconciliation = dashboard.networks else { return "" }
        var byNetwork: [String: ReconcileCounts] = [:]
        for row in reconciliation.rows {
            guard let network = row.key.adNetworkID else { continue }
            byNetwork[network, default: ReconcileCounts()].add(row.counts)
        }
        let ranked = byNetwork.filter { $0.value.copies + $0.value.forwardedWon > 0 }.sorted {
            ($0.value.copies + $0.value.forwardedWon, $1.key) > ($1.value.copies + $1.value.forwardedWon, $0.key)
        }.map(\.key)
        guard !ranked.isEmpty else { return "" }
        let shown = Array(ranked.prefix(Self.maximumNetworks))
        let index = dayIndex()
        func coverage(_ value: (ReconcileCounts) -> Double?) -> [SVGChart.Series] {
            shown.enumerated().map { position, network in
                var values = Array(repeating: Double.nan, count: days.count)
                for row in reconciliation.rows where row.key.adNetworkID == network {
                    guard let day = row.key.date, let at = index[day], let rate = value(row.counts) else { continue }
                    values[at] = rate * 100
                }
                return SVGChart.Series(name: network, color: SVGChart.palette[position], values: values)
            }
        }
        let legend = shown.enumerated().map { ($1, SVGChart.palette[$0]) }
        let more =
            ranked.count > shown.count ? " The \(ranked.count - shown.count) smaller networks are in the table." : ""
        func coverageFigure(
            id: String,
            title: String,
            caption: String,
            value: @escaping (ReconcileCounts) -> Double?
        )
            -> String
        {
            var chart = SVGChart(labels: dayLabels, xTitle: "Day first received (UTC)", yTitle: "Coverage (%)")
            chart.yFormat = { decimal($0, fractionDigits: 0) + "%" }
            let overall = ranked.map { network in
                "\(network) \(value(byNetwork[network] ?? ReconcileCounts()).map(percent) ?? "–")"
            }.joined(separator: ", ")
            let description = "Over the period: \(overall)."
            return figure(
                id: id,
                title: title,
                caption: caption + " " + description + more,
                svg: chart.lines(coverage(value), maximum: 100, id: id, title: title, description: description),
                legend: legend,
                table: table(
                    caption: title,
                    headers: ["network", "copies", "winning forwards", "matched", "copy coverage", "forward coverage"],
                    rows: ranked.map { network in
                        let counts = byNetwork[network] ?? ReconcileCounts()
                        return [
                            network, count(counts.copies), count(counts.forwardedWon), count(counts.matched),
                            counts.copyCoverage.map(percent) ?? "–", counts.forwardCoverage.map(percent) ?? "–",
                        ]
                    }
                )
            )
        }
        var out = coverageFigure(
            id: "copy-coverage",
            title: "Copy coverage per day, by ad network",
            caption:
                "Of each network's winning forwards, the share the devices copied to you too. Low: forwards no device sent you (or your copy endpoint missed them).",
            value: \.copyCoverage
        )
        out += coverageFigure(
            id: "forward-coverage",
            title: "Forward coverage per day, by ad network",
            caption:
                "Of the devices' copies, the share each network forwarded too. Low: postbacks the network kept back.",
            value: \.forwardCoverage
        )
        out += changedFigure(ranked, byNetwork)
        return out
    }

    /// The matched postbacks whose forward changed a value, by network and direction.
    private func changedFigure(_ ranked: [String], _ byNetwork: [String: ReconcileCounts]) -> String {
        let directions: [(String, KeyPath<ReconcileCounts, Int>)] = [
            ("fine raised", \.fineHigher), ("fine lowered", \.fineLower), ("coarse raised", \.coarseHigher),
            ("coarse lowered", \.coarseLower), ("value dropped", \.valueDropped), ("value added", \.valueAdded),
            ("country changed", \.countryDiffers), ("interaction changed", \.interactionDiffers),
        ]
        let shown = Array(ranked.prefix(12))
        let series = directions.enumerated().map { position, direction in
            SVGChart.Series(
                name: direction.0,
                color: SVGChart.palette[position],
                values: shown.map { Double(byNetwork[$0]?[keyPath: direction.1] ?? 0) }
            )
        }
        let title = "Values the forwards changed, by ad network and direction"
        let changed = ranked.map { network -> String in
            let counts = byNetwork[network] ?? ReconcileCounts()
            return "\(network) \(count(counts.matched - counts.matchedIdentical)) of \(count(counts.matched))"
        }.joined(separator: ", ")
        let description = "Matched postbacks whose forward differs from the device's copy: \(changed)."
        let chart = SVGChart(labels: shown, xTitle: "Ad network", yTitle: "Postbacks")
        return figure(
            id: "changed-values",
            title: title,
            caption:
                "The conversion value, coarse value, country and interaction type are outside Apple's signature: a forward that differs was changed after the device. "
                + description,
            svg: chart.stackedBars(series, id: "changed-values", title: title, description: description),
            legend: directions.enumerated().map { ($1.0, SVGChart.palette[$0]) },
            table: table(
                caption: title,
                headers: ["network", "matched", "changed"] + directions.map(\.0),
                rows: ranked.map { network in
                    let counts = byNetwork[network] ?? ReconcileCounts()
                    return [network, count(counts.matched), count(counts.matched - counts.matchedIdentical)]
                        + directions.map { count(counts[keyPath: $0.1]) }
                }
            )
        )
    }
}

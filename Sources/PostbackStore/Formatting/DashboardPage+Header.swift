import PostbackKit

// The page's header: the period, the filters as a form or as text, the headline tiles.
extension DashboardPage {
    var periodText: String {
        switch (days.first, days.last) {
        case (let first?, let last?) where first == last: first.description
        case (let first?, let last?): "\(first) to \(last)"
        default: "no data"
        }
    }

    var filterText: String {
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
    var controls: String {
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

    var headline: String {
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
}

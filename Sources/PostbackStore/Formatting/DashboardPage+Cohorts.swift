import PostbackKit

/// The cohort view (issue 61): by install date, the postbacks of each conversion window as they
/// arrive, and each window's revenue; cells still growing marked (`report --cohorts`).
extension DashboardPage {
    /// The last install dates' cohorts; empty by day received or without postbacks.
    var cohortsFigure: String {
        guard let report = dashboard.cohorts, let cohorts = report.cohortRows, !cohorts.isEmpty else { return "" }
        let names = Report.windowNames
        var headers = ["Install date", "installs"]
        for window in 0...2 {
            headers.append("\(names[window]) postbacks" + (window > 0 ? " (rate)" : ""))
        }
        for window in 0...2 {
            headers += report.currencies.map { "\(names[window]) \($0)" }
        }
        var out = "<div class=\"table\"><table><caption>Cohorts by install date</caption><thead><tr>"
        out += headers.map { "<th scope=\"col\">\(escapeHTML($0))</th>" }.joined()
        out += "</tr></thead><tbody>"
        var growing = 0
        for cohort in cohorts.reversed() {
            let maturity = report.maturity(cohort)
            func cell(_ text: String, _ window: Int) -> String {
                guard maturity?.window(window) == false else { return "<td>\(escapeHTML(text))</td>" }
                growing += 1
                return "<td class=\"growing\" title=\"not final: postbacks can still arrive\">\(escapeHTML(text))*</td>"
            }
            let day: String = if case .text(let text) = cohort.dimensions.first { text } else { "–" }
            out += "<tr><th scope=\"row\">\(escapeHTML(day))</th>"
            out += cell(count(cohort.installs), 0)
            for window in 0...2 {
                let rate = window > 0 ? cohort.rate(window).map { " (\(formatPercent($0)))" } ?? "" : ""
                out += cell(count(cohort.postbacks[window]) + rate, window)
            }
            for window in 0...2 {
                for currency in report.currencies {
                    out += cell(formatMoney(cohort.revenue[window][currency]?.estimate ?? 0), window)
                }
            }
            out += "</tr>"
        }
        out += "</tbody></table></div>"
        let title = "Cohorts by install date"
        var caption =
            "The last \(cohorts.count) install dates: installs, the winning postbacks of each conversion window (\(names.joined(separator: ", ")): postbacks 0, 1, 2) with their rate over postbacks 0, and the revenue estimate of each window's values, as received so far."
        if growing > 0 {
            caption +=
                " Marked *: not final yet, its postbacks can still arrive (window 0 by \(Maturity.installsFinalDays) days after the install date, 1 by \(Maturity.window1FinalDays), 2 by \(Maturity.valuesFinalDays), Apple's retries included)."
        }
        return
            "<figure id=\"cohorts\" class=\"chart wide\"><figcaption><h2>\(escapeHTML(title))</h2><p>\(escapeHTML(caption))</p></figcaption>"
            + out + "</figure>"
    }
}

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
            out += cohortsFigure
            out += appleAdsFigure
        }
        out += networksFigures
        if !dashboard.totals.rows.isEmpty || !dashboard.series.intake.isEmpty { out += intakeFigure }
        out +=
            "</main><footer>Generated \(escapeHTML(dashboard.generatedAt.iso8601)) by postbackd \(escapeHTML(PostbackdVersion.current)) from the aggregate tables"
        if let policy = dashboard.byDay.policy { out += " (revenue estimate: \(escapeHTML(policy)))" }
        out += ".</footer></body></html>\n"
        return out
    }
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
    func replacingNewlines() -> String {
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

import PostbackKit

// What every figure is made of (a figure with its chart and table, a table) and the page's style.
extension DashboardPage {
    // MARK: - Parts

    /// A line chart of whole numbers a day, with its table: a day a row, a column of each of
    /// `series`, headed `columns`.
    func dayCountsFigure(
        id: String,
        title: String,
        caption: String,
        description: String,
        yTitle: String,
        series: [SVGChart.Series],
        columns: [String]
    ) -> String {
        let chart = SVGChart(labels: dayLabels, xTitle: dayAxisTitle, yTitle: yTitle)
        return figure(
            id: id,
            title: title,
            caption: caption,
            svg: chart.lines(series, id: id, title: title, description: description),
            legend: series.map { ($0.name, $0.color) },
            table: table(
                caption: title,
                headers: [dayAxisTitle] + columns,
                rows: days.indices.map { position in
                    [days[position].description] + series.map { count(Int($0.values[position])) }
                }
            )
        )
    }

    func figure(
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

    func table(caption: String, headers: [String], rows: [[String]]) -> String {
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
        td.growing{color:var(--muted);font-style:italic}
        figure.wide{grid-column:1/-1}
        .empty{grid-column:1/-1;background:var(--card);border:1px dashed var(--line);border-radius:10px;padding:24px}
        footer{margin-top:16px;color:var(--muted);font-size:12px}
        @media (max-width:600px){body{padding:10px}.tile .value{font-size:18px}}
        """
}

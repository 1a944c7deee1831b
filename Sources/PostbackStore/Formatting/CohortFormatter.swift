import PostbackKit

/// How `report --cohorts` prints: per cohort, its installs, the postbacks of each window and
/// their rates, the revenue of each window, and whether each window is final.
extension Report {
    /// The windows' names: SKAdNetwork 4's conversion windows, as MMPs label them.
    static let windowNames = ["d0-2", "d3-7", "d8-35"]

    /// `cohortRows` in `format`.
    func cohortsFormatted(_ cohorts: [CohortRow], _ format: ReportFormat, width: Int) -> String {
        switch format {
        case .json: cohortsJSON(cohorts)
        case .csv: cohortsCSV(cohorts)
        case .table: cohortsTable(cohorts, width: width)
        }
    }

    private func cohortsJSON(_ cohorts: [CohortRow]) -> String {
        let objects = cohorts.map { cohort -> String in
            var object = JSONObjectWriter()
            addDimensions(ReportRow(dimensions: cohort.dimensions), to: &object)
            object.add("installs", cohort.installs)
            let maturity = maturity(cohort)
            for window in 0...2 {
                object.add("postbacks_\(window)", cohort.postbacks[window])
                if window > 0 {
                    object.addRaw(
                        "postbacks_\(window)_rate",
                        json: cohort.rate(window).map { formatJSONNumber(roundedRatio($0)) } ?? "null"
                    )
                }
                object.addRaw("revenue_\(window)", json: revenueObjectJSON(cohort.revenue[window]))
                object.add("window_\(window)_final", maturity?.window(window))
            }
            return object.text
        }
        return objects.isEmpty ? "[]\n" : "[\n" + objects.joined(separator: ",\n") + "\n]\n"
    }

    private func cohortsCSV(_ cohorts: [CohortRow]) -> String {
        var header = dimensions.map(\.column) + ["installs"]
        for window in 0...2 {
            header += ["postbacks_\(window)"] + (window > 0 ? ["postbacks_\(window)_rate"] : [])
            header += currencies.map { "revenue_\(window)_\($0)" }
            header += ["window_\(window)_final"]
        }
        var lines = [header.map(csvField).joined(separator: ",")]
        for cohort in cohorts {
            var fields = zip(dimensions, cohort.dimensions).map { plain($0, $1) } + [String(cohort.installs)]
            let maturity = maturity(cohort)
            for window in 0...2 {
                fields.append(String(cohort.postbacks[window]))
                if window > 0 { fields.append(cohort.rate(window).map { formatJSONNumber(roundedRatio($0)) } ?? "") }
                fields += currencies.map { currency in
                    formatJSONNumber(roundedMoney(cohort.revenue[window][currency]?.estimate ?? 0))
                }
                fields.append(maturity.map { String($0.window(window)) } ?? "")
            }
            lines.append(fields.map(csvField).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Aligned within `width`, a cell of a window not final marked `*`; too wide, the revenue of
    /// the later windows is left out first (named after the table).
    private func cohortsTable(_ cohorts: [CohortRow], width: Int) -> String {
        guard !cohorts.isEmpty else { return "no postbacks in this period\n" }
        let maturities = cohorts.map(maturity)
        func mark(_ text: String, _ index: Int, _ window: Int) -> String {
            maturities[index].map { $0.window(window) } == false ? text + "*" : text
        }
        var columns: [TableColumn] = dimensions.enumerated().map { position, dimension in
            TableColumn(
                header: dimension.column,
                rightAligned: false,
                cells: cohorts.map { human(dimension, $0.dimensions[position]) },
                priority: 100
            )
        }
        columns.append(
            TableColumn(
                header: "installs",
                rightAligned: true,
                cells: cohorts.indices.map { mark(formatCount(cohorts[$0].installs), $0, 0) },
                priority: 100
            )
        )
        for window in 0...2 {
            let name = Self.windowNames[window]
            columns.append(
                TableColumn(
                    header: "\(name) postbacks",
                    rightAligned: true,
                    cells: cohorts.indices.map { index in
                        let count = formatCount(cohorts[index].postbacks[window])
                        let rate = window > 0 ? cohorts[index].rate(window).map { " (\(formatPercent($0)))" } ?? "" : ""
                        return mark(count + rate, index, window)
                    },
                    priority: 99 - window
                )
            )
            for currency in currencies {
                columns.append(
                    TableColumn(
                        header: "\(name) \(currency)",
                        rightAligned: true,
                        cells: cohorts.indices.map { index in
                            mark(formatMoney(cohorts[index].revenue[window][currency]?.estimate ?? 0), index, window)
                        },
                        priority: 95 - window
                    )
                )
            }
        }
        var notes = [
            "cohorts by install date: postbacks are winning production postbacks of each window (d0-2: postback 0, d3-7: 1, d8-35: 2), rates over postbacks 0; revenue: \(policy ?? "midpoint") estimate of their values"
        ]
        if let asOf = maturityAsOf {
            notes.append(
                "*: not final as of \(asOf.iso8601), its postbacks can still arrive (window 0 by \(Maturity.installsFinalDays) days after the install date, 1 by \(Maturity.window1FinalDays), 2 by \(Maturity.valuesFinalDays), Apple's retries included)"
            )
        }
        var hidden: [String] = []
        while TableColumn.width(of: columns) > width,
            let drop = columns.indices.filter({ columns[$0].priority < 96 }).min(by: {
                columns[$0].priority < columns[$1].priority
            })
        {
            hidden.append(columns[drop].header)
            columns.remove(at: drop)
        }
        if !hidden.isEmpty {
            notes.append("not shown at this width: \(hidden.joined(separator: ", ")) (--format csv shows every column)")
        }
        return (TableColumn.lines(columns, rows: cohorts.count) + notes.flatMap { wrap($0, width: width) })
            .map(\.trailingSpacesRemoved).joined(separator: "\n") + "\n"
    }
}

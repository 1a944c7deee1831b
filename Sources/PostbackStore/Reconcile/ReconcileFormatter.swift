import PostbackKit

extension Reconciliation {
    /// The reconciliation in `format`: `table` (fitted to `width` columns), `csv` or `json`.
    package func formatted(_ format: ReportFormat, width: Int = 100) -> String {
        switch format {
        case .table: table(width: width)
        case .csv: csv()
        case .json: json()
        }
    }

    /// A JSON array of row objects: the dimensions, the counts, the rates (null where their
    /// denominator is 0).
    package func json() -> String {
        let objects = rows.map { row -> String in
            var object = JSONObjectWriter()
            for dimension in request.dimensions { addDimension(dimension, row.key, to: &object) }
            for metric in ReconcileCounts.metrics { object.add(metric.name, row.counts[keyPath: metric.value]) }
            for rate in row.counts.rates { object.add(rate.name, rate.value.map(roundedRatio)) }
            return object.text
        }
        return objects.isEmpty ? "[]\n" : "[\n" + objects.joined(separator: ",\n") + "\n]\n"
    }

    private func addDimension(_ dimension: ReconcileDimension, _ key: ReconcileKey, to object: inout JSONObjectWriter) {
        switch dimension {
        case .date: object.add(dimension.rawValue, key.date?.description)
        case .adNetworkID: object.add(dimension.rawValue, key.adNetworkID)
        case .appID: object.add(dimension.rawValue, key.appID)
        case .kind: object.add(dimension.rawValue, key.kind)
        case .postbackSequenceIndex: object.add(dimension.rawValue, key.sequenceIndex)
        case .channel: object.add(dimension.rawValue, key.channel)
        case .campaign: object.add(dimension.rawValue, key.campaign)
        }
    }

    /// RFC 4180 CSV with a header row: the dimensions, the counts, the rates (empty where
    /// their denominator is 0).
    package func csv() -> String {
        let header =
            request.dimensions.map(\.rawValue) + ReconcileCounts.metrics.map(\.name)
            + ReconcileCounts().rates.map(\.name)
        var lines = [header.joined(separator: ",")]
        for row in rows {
            let fields =
                request.dimensions.map { csvField(row.key.text($0)) }
                + ReconcileCounts.metrics.map { String(row.counts[keyPath: $0.value]) }
                + row.counts.rates.map { $0.value.map { formatJSONNumber(roundedRatio($0)) } ?? "" }
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Aligned columns: the dimensions, then what a person reads first (the coverages and the
    /// share of changed values), then the counts, the least telling hidden first when too wide.
    package func table(width: Int) -> String {
        guard !rows.isEmpty else {
            return "no production postbacks or quarantined forwards in this period\n"
        }
        let all = rows.map(\.counts)
        var columns: [TableColumn] = request.dimensions.map { dimension in
            TableColumn(
                header: dimension.rawValue,
                rightAligned: dimension == .appID || dimension == .postbackSequenceIndex,
                cells: rows.map { row in
                    let text = row.key.text(dimension)
                    return text.isEmpty ? "–" : text
                },
                priority: 100,
                truncatable: dimension == .adNetworkID || dimension == .campaign || dimension == .channel
            )
        }
        let total = self.total
        func rate(_ header: String, _ value: (ReconcileCounts) -> Double?) -> TableColumn {
            TableColumn(
                header: header,
                rightAligned: true,
                cells: all.map { value($0).map(formatPercent) ?? "–" },
                total: rows.count > 1 ? value(total).map(formatPercent) ?? "–" : nil,
                priority: 95
            )
        }
        columns += [
            .counts("copies", of: all, priority: 94) { $0.copies },
            .counts("fwd won", of: all, priority: 94) { $0.forwardedWon },
            .counts("matched", of: all, priority: 57) { $0.matched },
            rate("copy cov", \.copyCoverage),
            rate("fwd cov", \.forwardCoverage),
            rate("changed", \.valuesChanged),
            .counts("copy only", of: all, priority: 62) { $0.copyOnly },
            .counts("fwd only", of: all, priority: 61) { $0.forwardOnly },
            .counts("pending", of: all, priority: 59) { $0.pending },
            .counts("fine +", of: all, priority: 50) { $0.fineHigher },
            .counts("fine −", of: all, priority: 50) { $0.fineLower },
            .counts("coarse +", of: all, priority: 45) { $0.coarseHigher },
            .counts("coarse −", of: all, priority: 45) { $0.coarseLower },
            .counts("dropped", of: all, priority: 40) { $0.valueDropped },
            .counts("added", of: all, priority: 40) { $0.valueAdded },
            .counts("country", of: all, priority: 35) { $0.countryDiffers },
            .counts("fwd non-won", of: all, priority: 30) { $0.forwardedNonwon },
            .counts("quarantined", of: all, priority: 30) { $0.forwardQuarantined },
            .counts("impossible", of: all, priority: 25) { $0.impossible },
            .counts("early", of: all, priority: 25) { $0.early },
            .counts("interaction", of: all, priority: 20) { $0.interactionDiffers },
        ]
        if rows.count > 1 && !request.dimensions.isEmpty { columns[0].total = "total" }
        var hidden: [String] = []
        while TableColumn.width(of: columns) > width,
            let drop = columns.indices.filter({ columns[$0].priority < 90 }).min(by: {
                columns[$0].priority < columns[$1].priority
            })
        {
            hidden.append(columns[drop].header)
            columns.remove(at: drop)
        }
        var notes = [
            "copy cov: matched over winning forwards; fwd cov: matched over copies; changed: matched forwards whose unsigned values differ from the copy's",
            "unmatched winning postbacks first received before \(request.cutoff) (as of \(request.asOf), \(request.graceDays) days' grace) are copy only or fwd only; later ones pending",
        ]
        if !hidden.isEmpty {
            notes.append("not shown at this width: \(hidden.joined(separator: ", ")) (--format csv shows every column)")
        }
        return TableColumn.text(columns, rows: rows.count, after: notes.flatMap { wrap($0, width: width) })
    }
}

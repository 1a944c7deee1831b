import PostbackKit

extension AppleAdsReport {
    /// The report in `format`: the same shapes as `postbackd report`'s.
    package func formatted(_ format: ReportFormat) -> String {
        switch format {
        case .json:
            let objects = rows.map { row -> String in
                var object = JSONObjectWriter()
                for (dimension, value) in zip(dimensions, row.dimensions) {
                    switch value {
                    case .null: object.addRaw(dimension.column, json: "null")
                    case .integer(let number): object.add(dimension.column, number)
                    case .text(let text): object.add(dimension.column, text)
                    }
                }
                for metric in AppleAdsMetric.allCases { object.add(metric.rawValue, row.counts[metric] ?? 0) }
                return object.text
            }
            return objects.isEmpty ? "[]\n" : "[\n" + objects.joined(separator: ",\n") + "\n]\n"
        case .csv:
            var lines = [(dimensions.map(\.column) + AppleAdsMetric.allCases.map(\.rawValue)).joined(separator: ",")]
            for row in rows {
                let fields =
                    row.dimensions.map { Self.text($0, null: "") }
                    + AppleAdsMetric.allCases.map { String(row.counts[$0] ?? 0) }
                lines.append(fields.map(csvField).joined(separator: ","))
            }
            return lines.joined(separator: "\n") + "\n"
        case .table:
            guard !rows.isEmpty else {
                return
                    "no Apple Ads attribution records for this period (postbackd apple-ads status shows the tokens)\n"
            }
            var columns = dimensions.enumerated().map { index, dimension in
                TableColumn(
                    header: dimension.column,
                    rightAligned: !dimension.isText,
                    cells: rows.map { Self.text($0.dimensions[index], null: "–") },
                    priority: 100
                )
            }
            for metric in AppleAdsMetric.allCases {
                columns.append(.counts(metric.rawValue, of: rows, priority: 100) { $0.counts[metric] ?? 0 })
            }
            if rows.count > 1 && !dimensions.isEmpty { columns[0].total = "total" }
            return TableColumn.text(columns, rows: rows.count)
        }
    }

    private static func text(_ value: DimensionValue, null: String) -> String {
        switch value {
        case .null: null
        case .integer(let number): String(number)
        case .text(let text): text
        }
    }
}

extension AppleAdsStatus {
    /// `apple-ads status` as JSON: `{"tokens": {"pending": 3, …}, …}`.
    package func json(nowMs: Int64) -> String {
        var object = JSONObjectWriter()
        var states = JSONObjectWriter()
        for state in AppleAdsTokenState.allCases { states.add(state.rawValue, counts[state] ?? 0) }
        object.addRaw("tokens", json: states.text)
        object.add("total", total)
        object.add("oldest_pending_obtained_at", oldestPendingObtainedMs.map { UTCInstant(milliseconds: $0).iso8601 })
        object.add("oldest_pending_age_seconds", oldestPendingObtainedMs.map { max(0, nowMs - $0) / 1000 })
        object.add("next_due_at", nextDueMs.map { UTCInstant(milliseconds: $0).iso8601 })
        object.add("test_records", testRecords)
        for (key, counts) in [
            ("pending_by_last_status", pendingByLastStatus), ("unknown_conversion_types", unknownConversionTypes),
            ("unknown_claim_types", unknownClaimTypes), ("unknown_supply_placements", unknownSupplyPlacements),
        ] {
            var inner = JSONObjectWriter()
            for (name, count) in counts.sorted(by: { $0.key < $1.key }) { inner.add(name, count) }
            object.addRaw(key, json: inner.text)
        }
        return object.text + "\n"
    }

    /// `apple-ads status` for a terminal.
    package func text(nowMs: Int64) -> String {
        var lines = AppleAdsTokenState.allCases.map { state in
            state.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0) + formatCount(counts[state] ?? 0)
        }
        if let oldest = oldestPendingObtainedMs {
            lines.append("oldest pending: obtained \(UTCInstant(milliseconds: oldest).iso8601)")
        }
        if let due = nextDueMs {
            lines.append("next due: \(due <= nowMs ? "now" : UTCInstant(milliseconds: due).iso8601)")
        }
        if !pendingByLastStatus.isEmpty {
            lines.append(
                "pending by last answer: "
                    + pendingByLastStatus.sorted { $0.key < $1.key }.map { "\($0.key) \(formatCount($0.value))" }
                    .joined(separator: ", ")
            )
        }
        if testRecords > 0 {
            lines.append("developer-mode test records (in no count): \(formatCount(testRecords))")
        }
        for (label, counts) in [
            ("conversionType", unknownConversionTypes), ("claimType", unknownClaimTypes),
            ("supplyPlacement", unknownSupplyPlacements),
        ] where !counts.isEmpty {
            lines.append(
                "undocumented \(label) values (kept): "
                    + counts.sorted { $0.key < $1.key }.map { "\"\($0.key)\" \(formatCount($0.value))" }
                    .joined(separator: ", ")
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

import PostbackKit

extension ReportRow {
    /// The four amounts by currency a row carries (observed and modeled, of installs and of
    /// re-engagements): what summing and converting rows go through. (Computed: an array of
    /// key paths is not `Sendable`, so it cannot be a stored static.)
    static var revenueKinds: [WritableKeyPath<ReportRow, [String: RevenueTotal]>] {
        [\.revenue, \.reengagementRevenue, \.modeledRevenue, \.reengagementModeledRevenue]
    }
}

extension Report {
    /// The report grouped by the dimensions at `kept` alone (positions, in order; for events,
    /// and the event and its model), rows ordered by their dimensions as the SQL orders them.
    ///
    /// Counts, occurrences and extra columns are summed. Amounts (revenue and spend) as read
    /// from the store are summed in micros (half-micros for an estimate, which a midpoint can
    /// end on), as the SQL sums them: exact, whatever the order of the rows. Amounts converted
    /// into ``currency`` are products of rates, not whole micros: they are summed as they are,
    /// in the order of the rows (their dimensions' order, so the same every time). A row is
    /// ``ReportRow/unconverted`` when any of its parts is, its amounts then empty. Tier shares
    /// are computed again when the tier is kept.
    package func folded(keeping kept: [Int]) -> Report {
        /// An amount's sums: micros of the minimum and maximum, half-micros of the estimate
        /// (read amounts); or the amounts themselves (converted ones).
        typealias Sums = (min: Int64, max: Int64, estimate: Int64, converted: RevenueTotal)
        struct Group {
            /// The dimensions kept, then an event's name and model.
            var key: [DimensionValue]
            var row: ReportRow
            var counts: [Int]?
            /// Per kind of ``ReportRow/revenueKinds``, by currency.
            var money: [[String: Sums]]
            var spend: [String: (micros: Int64, converted: Double)] = [:]
        }
        let converted = currency != nil
        func micros(_ amount: Double, _ scale: Double = 1_000_000) -> Int64 {
            converted ? 0 : Int64((amount * scale).rounded())
        }
        let kinds = ReportRow.revenueKinds
        var positions: [[DimensionValue]: Int] = [:]
        var groups: [Group] = []
        for row in rows {
            var key = kept.map { row.dimensions[$0] }
            if events {
                key += [row.event.map(DimensionValue.text) ?? .null, row.eventModel.map(DimensionValue.text) ?? .null]
            }
            let position: Int
            if let found = positions[key] {
                position = found
                groups[position].row.occurrencesMin += row.occurrencesMin
                groups[position].row.occurrencesMax += row.occurrencesMax
                groups[position].row.eventPostbacks += row.eventPostbacks
                for (name, value) in row.extras { groups[position].row.extras[name, default: 0] += value }
                if let claimed = row.claimedInstalls {
                    groups[position].row.claimedInstalls = (groups[position].row.claimedInstalls ?? 0) + claimed
                }
                groups[position].row.unconverted = groups[position].row.unconverted || row.unconverted
            } else {
                var first = ReportRow(dimensions: kept.map { row.dimensions[$0] })
                first.event = row.event
                first.eventModel = row.eventModel
                first.occurrencesMin = row.occurrencesMin
                first.occurrencesMax = row.occurrencesMax
                first.eventPostbacks = row.eventPostbacks
                first.extras = row.extras
                first.claimedInstalls = row.claimedInstalls
                first.unconverted = row.unconverted
                position = groups.count
                positions[key] = position
                groups.append(Group(key: key, row: first, money: Array(repeating: [:], count: kinds.count)))
            }
            let values = row.counts.values
            if !values.isEmpty {
                if groups[position].counts == nil { groups[position].counts = Array(repeating: 0, count: values.count) }
                groups[position].counts?.withUnsafeMutableBufferPointer { sums in
                    for index in values.indices { sums[index] += values[index] }
                }
            }
            for (kind, path) in kinds.enumerated() {
                for (currency, total) in row[keyPath: path] {
                    var sum =
                        groups[position].money[kind][currency] ?? (0, 0, 0, RevenueTotal(min: 0, max: 0, estimate: 0))
                    sum.min += micros(total.min)
                    sum.max += micros(total.max)
                    sum.estimate += micros(total.estimate, 2_000_000)
                    if converted {
                        sum.converted.min += total.min
                        sum.converted.max += total.max
                        sum.converted.estimate += total.estimate
                    }
                    groups[position].money[kind][currency] = sum
                }
            }
            for (currency, amount) in row.spend {
                groups[position].spend[currency, default: (0, 0)].micros += micros(amount)
                groups[position].spend[currency, default: (0, 0)].converted += converted ? amount : 0
            }
        }
        groups.sort { $0.key.lexicographicallyPrecedes($1.key) }
        var merged = groups.map { group in
            var row = group.row
            if let counts = group.counts { row.counts = ReportCounts(counts) }
            guard !row.unconverted else { return row }
            for (kind, money) in group.money.enumerated() {
                for (currency, sum) in money {
                    row[keyPath: kinds[kind]][currency] =
                        converted
                        ? sum.converted
                        : RevenueTotal(
                            min: Double(sum.min) / 1_000_000,
                            max: Double(sum.max) / 1_000_000,
                            estimate: Double(sum.estimate) / 2_000_000
                        )
                }
            }
            row.spend = group.spend.mapValues { converted ? $0.converted : Double($0.micros) / 1_000_000 }
            return row
        }
        var report = self
        report.dimensions = kept.map { dimensions[$0] }
        if let tier = report.dimensions.firstIndex(of: .crowdAnonymityTier), !events {
            ReportRow.setTierShares(&merged, tier: tier)
        }
        report.rows = merged
        return report
    }
}

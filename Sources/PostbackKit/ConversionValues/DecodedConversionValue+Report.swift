extension DecodedConversionValue {
    /// `mapped`, `unmapped`, `null` or `unmodelled`.
    public var status: String {
        switch self {
        case .mapped: "mapped"
        case .unmapped: "unmapped"
        case .null: "null"
        case .unmodelled: "unmodelled"
        }
    }

    /// Revenue per currency over the mapped events.
    package var revenue: [String: RevenueRange] {
        guard case .mapped(let events) = self else { return [:] }
        var totals: [String: RevenueRange] = [:]
        for event in events {
            guard let range = event.revenue else { continue }
            var total = totals[range.currency] ?? RevenueRange(currency: range.currency, minMicros: 0, maxMicros: 0)
            total.minMicros += range.minMicros
            total.maxMicros += range.maxMicros
            totals[range.currency] = total
        }
        return totals
    }

    /// `purchase ×1–2 (USD 5.00–10.00), tutorial_complete ×1; revenue USD 5.00–10.00, midpoint 7.50`.
    package func text(
        appID: Int64,
        value: ConversionValue?,
        sequenceIndex: Int,
        policy: RevenueEstimatePolicy = .midpoint
    ) -> String {
        switch self {
        case .unmodelled:
            return "no conversion model for app \(appID)"
        case .null:
            return "null conversion value (withheld by Apple's privacy threshold): an install with no decoded events"
        case .unmapped:
            let what =
                value.map { value -> String in
                    switch value {
                    case .fine(let fine):
                        "fine value \(fine)" + (sequenceIndex > 0 ? " on postback \(sequenceIndex)" : "")
                    case .coarse(let coarse): "coarse value \(coarse.rawValue) of postback \(sequenceIndex)"
                    }
                } ?? "the value"
            return "unmapped: the model for app \(appID) does not map \(what)"
        case .mapped(let events):
            if events.isEmpty { return "mapped to no events" }
            let list = events.map { event -> String in
                let count =
                    event.occurrences.min == event.occurrences.max
                    ? "×\(event.occurrences.min)" : "×\(event.occurrences.min)–\(event.occurrences.max)"
                let money = event.revenue.map { " (\($0.currency) \(moneyRange($0)))" } ?? ""
                return "\(event.name) \(count)\(money)"
            }
            let revenue = self.revenue.sorted { $0.key < $1.key }.map { currency, range in
                let estimate = units(policy.estimate(minMicros: range.minMicros, maxMicros: range.maxMicros))
                return "\(currency) \(moneyRange(range)), \(policy.rawValue) \(formatMoney(estimate))"
            }
            return list.joined(separator: ", ")
                + (revenue.isEmpty ? "" : "; revenue " + revenue.joined(separator: "; "))
        }
    }

    /// The decoding as a JSON object: `status`, `events`, `revenue`.
    public func json(policy: RevenueEstimatePolicy = .midpoint) -> String {
        var object = JSONObjectWriter()
        object.add("status", status)
        var events: [String] = []
        if case .mapped(let mapped) = self {
            for event in mapped {
                var item = JSONObjectWriter()
                item.add("name", event.name)
                item.add("occurrences_min", event.occurrences.min)
                item.add("occurrences_max", event.occurrences.max)
                item.add("currency", event.revenue?.currency)
                item.add("revenue_min", event.revenue.map { units(Double($0.minMicros)) })
                item.add("revenue_max", event.revenue.map { units(Double($0.maxMicros)) })
                events.append(item.text)
            }
        }
        object.addRaw("events", json: "[" + events.joined(separator: ",") + "]")
        let revenue = self.revenue.sorted { $0.key < $1.key }.map { currency, range in
            var money = JSONObjectWriter()
            money.add("min", units(Double(range.minMicros)))
            money.add("max", units(Double(range.maxMicros)))
            money.add("estimate", units(policy.estimate(minMicros: range.minMicros, maxMicros: range.maxMicros)))
            return jsonQuoted(currency) + ":" + money.text
        }
        object.addRaw("revenue", json: "{" + revenue.joined(separator: ",") + "}")
        return object.text
    }
}

private func moneyRange(_ range: RevenueRange) -> String {
    range.minMicros == range.maxMicros
        ? formatMoney(units(Double(range.minMicros)))
        : formatMoney(units(Double(range.minMicros))) + "–" + formatMoney(units(Double(range.maxMicros)))
}

import PostbackKit

/// `postbackd costs add|list` and `postbackd rates add|list`.
package enum CostsJob {
    /// What adding files did: the change of each file stored, and the problems of each file
    /// that was not (nothing of it stored).
    package struct Outcome: Sendable {
        package var changes: [CostChange] = []
        package var refused: [FileProblemsError] = []
    }

    /// Reads, checks and stores each spend file in its own transaction: a file with any problem
    /// stores nothing, and the others are stored.
    package static func addCosts(_ location: StoreLocation, files: [String]) async throws -> Outcome {
        try await add(location, files: files, read: CostFile.readCosts) { store, rows, file in
            try await store.addCosts(rows, file: file)
        }
    }

    /// Reads, checks and stores each exchange-rate file in its own transaction.
    package static func addRates(_ location: StoreLocation, files: [String]) async throws -> Outcome {
        try await add(location, files: files, read: CostFile.readRates) { store, rows, file in
            try await store.addRates(rows, file: file)
        }
    }

    static func add<Row: Sendable>(
        _ location: StoreLocation,
        files: [String],
        read: (String) -> Result<[Row], FileProblemsError>,
        store write: @Sendable (any PostbackStorage, [Row], String) async throws -> CostChange
    ) async throws -> Outcome {
        var outcome = Outcome()
        var checked: [(file: String, rows: [Row])] = []
        for path in files {
            switch read(path) {
            case .success(let rows): checked.append((path == "-" ? "standard input" : path, rows))
            case .failure(let error): outcome.refused.append(error)
            }
        }
        guard !checked.isEmpty else { return outcome }
        let stored = checked
        outcome.changes = try await PostbackStores.with(location) { store in
            var changes: [CostChange] = []
            for (file, rows) in stored { changes.append(try await write(store, rows, file)) }
            return changes
        }
        return outcome
    }

    /// The stored cost rows of the period.
    package static func costs(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredCost] {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.costs(from: from, to: to)
        }
    }

    /// The stored exchange rates of the period.
    package static func rates(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredRate] {
        try await PostbackStores.with(location, access: .readOnly) { store in
            try await store.exchangeRates(from: from, to: to)
        }
    }

    // MARK: - Formats

    /// A spend file `costs add` reads back.
    package static func csv(_ costs: [StoredCost]) -> String {
        var out = CostRow.columns.joined(separator: ",") + "\n"
        for stored in costs {
            let row = stored.row
            let cells = [
                row.date.description, row.adNetworkID, row.appID.map(String.init) ?? "", row.campaign ?? "",
                row.countryCode ?? "", formatMicros(row.spendMicros), row.currency,
            ]
            out += cells.map(csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    /// JSON Lines, one object per row (null for absent dimensions), with where and when it was
    /// added.
    package static func json(_ costs: [StoredCost]) -> String {
        JSONObjectWriter.lines(costs) { stored, object in
            let row = stored.row
            object.add("date", row.date.description)
            object.add("ad_network_id", row.adNetworkID)
            object.add("app_id", row.appID)
            object.add("campaign", row.campaign)
            object.add("country_code", row.countryCode)
            object.addRaw("spend", json: formatMicros(row.spendMicros))
            object.add("currency", row.currency)
            object.add("source", row.source)
            object.add("line", row.line)
            object.add("added_at", stored.addedAt)
        }
    }

    /// An aligned table for people, with the spend per currency after it.
    package static func table(_ costs: [StoredCost]) -> String {
        guard !costs.isEmpty else { return "no costs in this period (postbackd costs add FILE)\n" }
        func column(_ header: String, right: Bool = false, _ cell: (CostRow) -> String) -> TableColumn {
            TableColumn(header: header, rightAligned: right, cells: costs.map { cell($0.row) }, priority: 90)
        }
        let columns = [
            column("date") { $0.date.description }, column("ad network") { $0.adNetworkID },
            column("app", right: true) { $0.appID.map(String.init) ?? "–" }, column("campaign") { $0.campaign ?? "–" },
            column("country") { $0.countryCode ?? "–" },
            column("spend", right: true) { formatMoney(Double($0.spendMicros) / 1_000_000) },
            column("currency") { $0.currency }, column("read from") { $0.place },
        ]
        var totals: [String: Int64] = [:]
        for stored in costs { totals[stored.row.currency, default: 0] += stored.row.spendMicros }
        let summary = totals.sorted { $0.key < $1.key }.map { "\($0.key) \(formatMoney(Double($0.value) / 1_000_000))" }
        return TableColumn.text(columns, rows: costs.count, after: ["total: " + summary.joined(separator: ", ")])
    }

    /// A rates file `rates add` reads back.
    package static func ratesCSV(_ rates: [StoredRate]) -> String {
        var out = ExchangeRate.columns.joined(separator: ",") + "\n"
        for stored in rates {
            let rate = stored.rate
            out +=
                [rate.date.description, rate.base, rate.quote, formatJSONNumber(rate.rate)].joined(separator: ",")
                + "\n"
        }
        return out
    }

    /// JSON Lines, one object per rate.
    package static func ratesJSON(_ rates: [StoredRate]) -> String {
        JSONObjectWriter.lines(rates) { stored, object in
            object.add("date", stored.rate.date.description)
            object.add("base", stored.rate.base)
            object.add("quote", stored.rate.quote)
            object.addRaw("rate", json: formatJSONNumber(stored.rate.rate))
            object.add("source", stored.rate.source)
            object.add("line", stored.rate.line)
            object.add("added_at", stored.addedAt)
        }
    }

    /// An aligned table for people.
    package static func ratesTable(_ rates: [StoredRate]) -> String {
        guard !rates.isEmpty else { return "no exchange rates in this period (postbackd rates add FILE)\n" }
        let rows = rates.map(\.rate)
        let columns = [
            TableColumn("date", of: rows) { $0.date.description }, TableColumn("base", of: rows) { $0.base },
            TableColumn("quote", of: rows) { $0.quote },
            TableColumn("rate", right: true, of: rows) { formatJSONNumber($0.rate) },
            TableColumn("read from", of: rows) { $0.place },
        ]
        return TableColumn.text(columns, rows: rows.count)
    }

    /// Micros as a decimal without trailing zeros (`12.5`, `3`).
    static func formatMicros(_ micros: Int64) -> String {
        let whole = micros / 1_000_000
        var fraction = String(micros % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return fraction.isEmpty ? String(whole) : "\(whole).\(fraction)"
    }
}

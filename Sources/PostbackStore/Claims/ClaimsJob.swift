import PostbackKit

/// `postbackd claims add|list`: what networks claim, beside what Apple signed.
package enum ClaimsJob {
    /// Reads, checks and stores each claims file in its own transaction: a file with any
    /// problem stores nothing, and the others are stored. `defaults` fills what a file does not
    /// say (`--ad-network-id`, `--app-id`, `--date-basis`, `--modeled`).
    package static func add(
        _ location: StoreLocation,
        files: [String],
        defaults: ClaimFile.Defaults
    ) async throws -> CostsJob.Outcome {
        var defaults = defaults
        defaults.appleAdsNetworkID = ApplePlacement.adNetworkID
        let given = defaults
        return try await CostsJob.add(
            location,
            files: files,
            read: { ClaimFile.read($0, defaults: given) },
            store: { store, rows, file in try await store.addClaims(rows, file: file) }
        )
    }

    /// The stored claim rows of the period.
    package static func claims(_ location: StoreLocation, from: UTCDay?, to: UTCDay?) async throws -> [StoredClaim] {
        try await PostbackStores.with(location, access: .readOnly) { store in
            try await store.claims(from: from, to: to)
        }
    }

    // MARK: - Formats

    /// A claims file `claims add` reads back.
    package static func csv(_ claims: [StoredClaim]) -> String {
        var out = ClaimRow.columns.joined(separator: ",") + "\n"
        for stored in claims {
            let row = stored.row
            let cells = [
                row.date.description, row.dateBasis.rawValue, row.adNetworkID, row.appID.map(String.init) ?? "",
                row.campaign ?? "", row.countryCode ?? "", String(row.installs), row.redownloads.map(String.init) ?? "",
                row.conversions.map(String.init) ?? "", row.modeled ? "true" : "false",
            ]
            out += cells.map(csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    /// JSON Lines, one object per row (null for absent dimensions and figures), with where and
    /// when it was added.
    package static func json(_ claims: [StoredClaim]) -> String {
        JSONObjectWriter.lines(claims) { stored, object in
            let row = stored.row
            object.add("date", row.date.description)
            object.add("date_basis", row.dateBasis.rawValue)
            object.add("ad_network_id", row.adNetworkID)
            object.add("app_id", row.appID)
            object.add("campaign", row.campaign)
            object.add("country_code", row.countryCode)
            object.add("installs", row.installs)
            object.add("redownloads", row.redownloads)
            object.add("conversions", row.conversions)
            object.add("modeled", row.modeled)
            object.add("source", row.source)
            object.add("line", row.line)
            object.add("added_at", stored.addedAt)
        }
    }

    /// An aligned table for people, with the claimed installs per network after it.
    package static func table(_ claims: [StoredClaim]) -> String {
        guard !claims.isEmpty else { return "no claims in this period (postbackd claims add FILE)\n" }
        let rows = claims.map(\.row)
        let columns = [
            TableColumn("date", of: rows) { $0.date.description },
            TableColumn("basis", of: rows) { $0.dateBasis.rawValue },
            TableColumn("ad network", of: rows) { $0.adNetworkID },
            TableColumn("app", right: true, of: rows) { $0.appID.map(String.init) ?? "–" },
            TableColumn("campaign", of: rows) { $0.campaign ?? "–" },
            TableColumn("country", of: rows) { $0.countryCode ?? "–" },
            TableColumn("installs", right: true, of: rows) { formatCount(Int($0.installs)) },
            TableColumn("redownloads", right: true, of: rows) { $0.redownloads.map { formatCount(Int($0)) } ?? "–" },
            TableColumn("conversions", right: true, of: rows) { $0.conversions.map { formatCount(Int($0)) } ?? "–" },
            TableColumn("modeled", of: rows) { $0.modeled ? "yes" : "no" },
            TableColumn("read from", of: rows) { $0.place },
        ]
        var totals: [String: Int64] = [:]
        for row in rows { totals[row.adNetworkID, default: 0] += row.installs }
        let summary = totals.sorted { $0.key < $1.key }.map { "\($0.key) \(formatCount(Int($0.value)))" }
        return TableColumn.text(
            columns,
            rows: rows.count,
            after: ["claimed installs: " + summary.joined(separator: ", ")]
        )
    }
}

import PostbackKit

/// A stored claim row and when it was added.
package struct StoredClaim: Sendable, Hashable {
    package var row: ClaimRow
    /// ISO 8601.
    package var addedAt: String
}

/// What networks claim, in the store, written once for both engines (the rules of
/// ``CostsSQL``: a row of a stored key replaces it).
enum ClaimsSQL {
    static let claims = KeyedTable(
        name: "claims",
        columns: [
            "date", "date_basis", "ad_network_id", "app_id", "campaign", "country_code", "installs", "redownloads",
            "conversions", "modeled", "source", "line", "added_at",
        ],
        key: ["date", "date_basis", "ad_network_id", "app_id", "campaign", "country_code"]
    )

    /// The columns of a claim row as `claims list` reads them: an absent app, campaign or
    /// country as NULL.
    static let select: SQLQuery = """
        SELECT \(SQLQuery.dayText("date")), date_basis, ad_network_id, NULLIF(app_id, 0)\(sqlite: "", postgres: "::bigint"),
            NULLIF(campaign, ''), NULLIF(country_code, ''), installs\(sqlite: "", postgres: "::bigint"),
            redownloads\(sqlite: "", postgres: "::bigint"), conversions\(sqlite: "", postgres: "::bigint"), modeled,
            source, line, \(SQLQuery.instantText("added_at"))
        FROM claims
        """

    static func stored(_ row: SQLRow) throws -> StoredClaim {
        StoredClaim(
            row: ClaimRow(
                date: try row.day(0),
                dateBasis: ClaimDateBasis(rawValue: try row.string(1)) ?? .install,
                adNetworkID: try row.string(2),
                appID: try row.optionalInt64(3),
                campaign: try row.optionalString(4),
                countryCode: try row.optionalString(5),
                installs: try row.int64(6),
                redownloads: try row.optionalInt64(7),
                conversions: try row.optionalInt64(8),
                modeled: try row.bool(9),
                source: try row.string(10),
                line: try row.int(11)
            ),
            addedAt: try row.string(12)
        )
    }
}

extension PostbackStorage {
    /// Stores one file's claim rows in one transaction: a row whose key (day, basis and
    /// dimensions) is stored replaces it. Serialized with `costs add` and other `claims add`
    /// runs, so that what it counts as changed is what it replaced.
    package func addClaims(_ rows: [ClaimRow], file: String) async throws -> CostChange {
        try await withSQL("add claims", .write) { sql in
            try await sql.lock(PostgresSchema.costsLock)
            var change = CostChange(file: file)
            guard let first = rows.map(\.date).min(), let last = rows.map(\.date).max() else { return change }
            change.from = first
            change.to = last
            var stored: [[String]: ClaimRow] = [:]
            let networks = Set(rows.map(\.adNetworkID)).sorted()
            try await sql.forEachRow(
                """
                \(ClaimsSQL.select) WHERE date >= \(first) AND date <= \(last)
                    AND ad_network_id IN (\(list: networks.map { "\($0)" }))
                """
            ) { row in
                let claim = try ClaimsSQL.stored(row).row
                stored[claim.key] = claim
            }
            func figures(_ row: ClaimRow) -> [Int64?] {
                [row.installs, row.redownloads, row.conversions, row.modeled ? 1 : 0]
            }
            for row in rows { change.count(stored: stored[row.key].map(figures), figures(row)) }
            let addedAt = UTCInstant.now()
            try await ClaimsSQL.claims.replace(
                rows.map { row in
                    """
                    (\(row.date), \(row.dateBasis.rawValue), \(row.adNetworkID), \(row.appID ?? 0), \(row.campaign ?? ""),
                        \(row.countryCode ?? ""), \(row.installs), \(row.redownloads), \(row.conversions), \(row.modeled),
                        \(row.source), \(row.line), \(addedAt))
                    """
                },
                sql
            )
            return change
        }
    }

    /// The stored claim rows of the period, by day, basis, network, app, campaign and country.
    package func claims(from: UTCDay?, to: UTCDay?) async throws -> [StoredClaim] {
        try await withSQL("read claims", .read) { sql in
            try await sql.rows(
                """
                \(ClaimsSQL.select) \(CostsSQL.whereClause(CostsSQL.period(from: from, to: to)))
                ORDER BY date, date_basis, \(SQLQuery.bytewise("ad_network_id")), app_id,
                    \(SQLQuery.bytewise("campaign")), country_code
                """
            ).map(ClaimsSQL.stored)
        }
    }
}

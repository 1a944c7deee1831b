import PostbackKit

/// What networks claim beside a report (`report --with-claims`): the claim rows of the
/// report's date basis summed by its dimensions, as spend joins a report (``SpendSQL``).
///
/// A claim row carries a day (of its basis: `install` rows join a report by install date,
/// `postback` rows one by the day received) and, optionally, an app, a campaign and a country:
/// it joins a report whose dimensions are all among those. A row without a dimension the report
/// groups by joins the report's row where that dimension is empty.
enum ClaimsInReport {
    /// The claims' basis for a report's.
    static func basis(_ query: ReportQuery) -> ClaimDateBasis {
        query.dateBasis == .install ? .install : .postback
    }

    /// Each of the query's dimensions as a claim row's expression, or why claims cannot join
    /// the report.
    static func expressions(_ query: ReportQuery) -> Result<[SQLQuery], SpendUnavailable> {
        SpendSQL.rowExpressions(query, shown: "claims are", row: "claim row")
    }

    /// The conditions of the query's period, basis, apps and networks on claim rows.
    static func conditions(_ query: ReportQuery) -> [SQLQuery] {
        SpendSQL.conditions(query) + ["date_basis = \(basis(query).rawValue)"]
    }
}

extension Report {
    /// Adds the claimed installs to its rows (a group with claims and no postbacks gets a row of
    /// zero counts), and returns the warnings: why the report cannot show claims, claims that
    /// include modeled values, and campaigns no mapping knows (their installs join no
    /// postbacks), each naming its network.
    mutating func addClaims(_ store: any PostbackStorage, _ query: ReportQuery) async throws -> [String] {
        let conditions = ClaimsInReport.conditions(query)
        let expressions: [SQLQuery]
        switch ClaimsInReport.expressions(query) {
        case .failure(let unavailable): return [unavailable.reason]
        case .success(let found): expressions = found
        }
        let (sums, modeled, unknown) = try await store.withSQL("read claims", .read) { sql in
            var sums: [(key: [DimensionValue], installs: Int)] = []
            let groups = expressions.count
            let sum: SQLQuery = "SUM(installs)\(sqlite: "", postgres: "::bigint")"
            // No dimensions: one sum over the period, none when it has no claim rows (a HAVING
            // without GROUP BY, which SQLite before 3.39 refuses, is not needed for that).
            let grouped: SQLQuery =
                groups == 0
                ? "SELECT \(sum) FROM claims \(CostsSQL.whereClause(conditions))"
                : """
                SELECT \(list: expressions), \(sum) FROM claims \(CostsSQL.whereClause(conditions))
                GROUP BY \(raw: (1...groups).map(String.init).joined(separator: ", "))
                """
            try await sql.forEachRow(grouped) { row in
                guard let installs = try row.optionalInt64(groups) else { return }
                sums.append(((0..<groups).map { DimensionValue(row.values[$0]) }, Int(installs)))
            }
            // Networks whose claims include modeled values, and campaigns no mapping of their
            // network names.
            var modeled: [String] = []
            try await sql.forEachRow(
                """
                SELECT DISTINCT ad_network_id FROM claims
                \(CostsSQL.whereClause(conditions + ["modeled = \(true)"])) ORDER BY 1
                """
            ) { modeled.append(try $0.string(0)) }
            var unknown: [(network: String, campaign: String)] = []
            try await sql.forEachRow(
                """
                SELECT DISTINCT ad_network_id, campaign FROM claims
                \(CostsSQL.whereClause(conditions + ["campaign <> ''"]))
                    AND NOT EXISTS (SELECT 1 FROM campaign_mappings m
                        WHERE m.ad_network_id = claims.ad_network_id AND m.campaign = claims.campaign)
                ORDER BY 1, 2
                """
            ) { unknown.append((try $0.string(0), try $0.string(1))) }
            return (sums, modeled, unknown)
        }
        showsClaims = true
        joinRows(sums.map(\.key)) { row, index in
            row.claimedInstalls = (row.claimedInstalls ?? 0) + sums[index].installs
        }
        let basis = ClaimsInReport.basis(query)
        var warnings: [String] = []
        if sums.isEmpty {
            warnings.append(
                "no claims by \(basis.rawValue) date in this period (postbackd claims add FILE): a report by install date reads claims of date_basis install, one by the day received those of date_basis postback"
            )
        }
        if !modeled.isEmpty {
            warnings.append(
                "the claims of \(modeled.joined(separator: ", ")) include modeled values: their claimed installs are more than what Apple signs, so their coverage is not comparable"
            )
        }
        if !unknown.isEmpty {
            let shown = unknown.prefix(10).map { "\($0.network) \"\($0.campaign)\"" }.joined(separator: ", ")
            let more = unknown.count > 10 ? " and \(unknown.count - 10) more" : ""
            warnings.append(
                "claims name campaigns no mapping knows (postbackd campaigns add): \(shown)\(more); their installs join no postbacks"
            )
        }
        return warnings
    }
}

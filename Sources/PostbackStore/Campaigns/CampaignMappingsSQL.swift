import PostbackKit

/// Reading the campaign mappings, on both engines: `campaigns list`, and aggregate's mappings in
/// force (which each engine's aggregate runs inside its own transaction).
enum CampaignMappingsSQL {
    /// Every mapping row, by network, prefix (bytewise), start of validity (open-ended first)
    /// and line.
    static let select: SQLQuery = """
        SELECT ad_network_id, source_identifier, \(SQLQuery.dayText("valid_from")), \(SQLQuery.dayText("valid_to")),
            campaign, ad_group, creative, source, line, \(SQLQuery.instantText("added_at"))
        FROM campaign_mappings
        ORDER BY \(SQLQuery.bytewise("ad_network_id")), \(SQLQuery.bytewise("source_identifier")), valid_from NULLS FIRST, line
        """

    /// A row of ``select`` as the mapping in force (aggregate's).
    static func mapping(_ row: SQLRow) throws -> CampaignMapping {
        try stored(row).mapping
    }

    static func stored(_ row: SQLRow) throws -> StoredCampaignMapping {
        StoredCampaignMapping(
            mapping: CampaignMapping(
                adNetworkID: try row.string(0),
                prefix: try row.string(1),
                validFrom: try row.optionalString(2).flatMap(UTCDay.init),
                validTo: try row.optionalString(3).flatMap(UTCDay.init),
                campaign: try row.string(4),
                adGroup: try row.optionalString(5),
                creative: try row.optionalString(6),
                source: try row.string(7),
                line: try row.int(8)
            ),
            addedAt: try row.string(9)
        )
    }
}

extension PostbackStorage {
    /// Serialized with other `campaigns add` runs and with `aggregate` (on PostgreSQL by their
    /// advisory locks: under READ COMMITTED two runs for one network would otherwise each
    /// delete the rows they saw and both insert), so that `added_at`, taken once the locks are
    /// held, falls after any aggregate run that read the old rows.
    package func replaceCampaignMappings(_ rows: [CampaignMapping]) async throws -> CampaignMappingChange {
        let networks = Set(rows.map(\.adNetworkID)).sorted()
        return try await withSQL("replace campaign mappings", .write) { sql in
            try await sql.lock(PostgresSchema.campaignsLock, PostgresSchema.aggregateLock)
            let addedAt = UTCInstant.now()
            var change = CampaignMappingChange()
            for network in networks {
                let removed = try await sql.rows(
                    "DELETE FROM campaign_mappings WHERE ad_network_id = \(network) RETURNING 1"
                )
                change.networks.append(
                    .init(adNetworkID: network, removed: removed.count, added: rows.count { $0.adNetworkID == network })
                )
            }
            // Many rows a statement: 10 values each, 1,000 rows well within both engines' limits.
            for start in stride(from: 0, to: rows.count, by: 1_000) {
                let values = rows[start..<min(start + 1_000, rows.count)].map { row -> SQLQuery in
                    """
                    (\(row.adNetworkID), \(row.prefix), \(row.validFrom), \(row.validTo), \(row.campaign), \(row.adGroup),
                        \(row.creative), \(row.source), \(row.line), \(addedAt))
                    """
                }
                try await sql.execute(
                    """
                    INSERT INTO campaign_mappings (ad_network_id, source_identifier, valid_from, valid_to, campaign,
                        ad_group, creative, source, line, added_at)
                    VALUES \(list: values)
                    """
                )
            }
            return change
        }
    }

    package func campaignMappings() async throws -> [StoredCampaignMapping] {
        try await withSQL("read campaign mappings", .statement) { sql in
            try await sql.rows(CampaignMappingsSQL.select).map(CampaignMappingsSQL.stored)
        }
    }
}

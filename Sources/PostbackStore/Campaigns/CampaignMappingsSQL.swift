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

extension SQLStore {
    package func campaignMappings() async throws -> [StoredCampaignMapping] {
        try await withSQL("read campaign mappings", .statement) { sql in
            try await sql.rows(CampaignMappingsSQL.select).map(CampaignMappingsSQL.stored)
        }
    }
}

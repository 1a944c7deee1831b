import GRDB
import PostbackKit

extension SQLiteStore {
    package func replaceCampaignMappings(_ rows: [CampaignMapping]) throws -> CampaignMappingChange {
        let networks = Set(rows.map(\.adNetworkID)).sorted()
        return try queue.write { db in
            var change = CampaignMappingChange()
            for network in networks {
                try db.execute(sql: "DELETE FROM campaign_mappings WHERE ad_network_id = ?", arguments: [network])
                change.networks.append(
                    .init(
                        adNetworkID: network,
                        removed: db.changesCount,
                        added: rows.count { $0.adNetworkID == network }
                    )
                )
            }
            // Taken once the write lock is held (the first DELETE took it): an aggregate run
            // holds it throughout, so one that ran before these rows has an earlier run_at, and
            // the staleness warning compares the right times.
            let addedAt = UTCInstant.now()
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO campaign_mappings (ad_network_id, source_identifier, valid_from, valid_to, campaign,
                        ad_group, creative, source, line, added_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
            for row in rows {
                try insert.execute(arguments: [
                    row.adNetworkID, row.prefix, row.validFrom?.description, row.validTo?.description, row.campaign,
                    row.adGroup, row.creative, row.source, row.line, addedAt.iso8601,
                ])
            }
            return change
        }
    }

    /// The mappings in force, for aggregation.
    package static func campaignMappings(_ db: Database) throws -> [CampaignMapping] {
        try SQLiteSQL.rows(db, CampaignMappingsSQL.select).map { try CampaignMappingsSQL.stored($0).mapping }
    }
}

import PostbackKit
import PostgresNIO

extension PostgresStore {
    /// Serialized with other `campaigns add` runs by an advisory lock (under READ COMMITTED,
    /// two runs for one network would otherwise each delete the rows they saw and both insert),
    /// and with `aggregate` by its lock, so that `added_at` falls after any run that read the
    /// old rows.
    package func replaceCampaignMappings(_ rows: [CampaignMapping]) async throws -> CampaignMappingChange {
        let logger = self.logger
        let networks = Set(rows.map(\.adNetworkID)).sorted()
        return try await transaction("replace campaign mappings") { connection in
            try await connection.send(
                "SELECT pg_advisory_xact_lock(\(PostgresSchema.campaignsLock)), pg_advisory_xact_lock(\(PostgresSchema.aggregateLock))",
                logger: logger
            )
            let addedAt = UTCInstant.now()
            var change = CampaignMappingChange()
            for network in networks {
                let removed = Int(
                    try await connection.value(
                        "WITH gone AS (DELETE FROM campaign_mappings WHERE ad_network_id = \(network) RETURNING 1) SELECT COUNT(*)::bigint FROM gone",
                        as: Int64.self,
                        logger: logger
                    ) ?? 0
                )
                change.networks.append(
                    .init(adNetworkID: network, removed: removed, added: rows.count { $0.adNetworkID == network })
                )
            }
            var network = PostgresArrayColumn(.text)
            var prefix = PostgresArrayColumn(.text)
            var validFrom = PostgresArrayColumn(.date)
            var validTo = PostgresArrayColumn(.date)
            var campaign = PostgresArrayColumn(.text)
            var adGroup = PostgresArrayColumn(.text)
            var creative = PostgresArrayColumn(.text)
            var source = PostgresArrayColumn(.text)
            var line = PostgresArrayColumn(.int4)
            var added = PostgresArrayColumn(.timestamptz)
            for row in rows {
                network.append(row.adNetworkID)
                prefix.append(row.prefix)
                validFrom.append(row.validFrom)
                validTo.append(row.validTo)
                campaign.append(row.campaign)
                adGroup.append(row.adGroup)
                creative.append(row.creative)
                source.append(row.source)
                line.append(row.line)
                added.append(addedAt)
            }
            try await connection.send(
                unnestInsert(
                    """
                    INSERT INTO campaign_mappings (ad_network_id, source_identifier, valid_from, valid_to, campaign,
                        ad_group, creative, source, line, added_at)
                    """,
                    [network, prefix, validFrom, validTo, campaign, adGroup, creative, source, line, added]
                ),
                logger: logger
            )
            return change
        }
    }

    /// The mappings in force, for aggregation.
    package static func campaignMappings(
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> [CampaignMapping] {
        try await PostgresSQL(connection: connection, logger: logger).rows(CampaignMappingsSQL.select).map {
            try CampaignMappingsSQL.stored($0).mapping
        }
    }
}

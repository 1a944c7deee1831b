import PostbackKit
import PostgresNIO

extension PostgresStore {
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

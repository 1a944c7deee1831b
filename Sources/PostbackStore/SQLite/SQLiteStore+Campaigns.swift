import GRDB
import PostbackKit

extension SQLiteStore {
    /// The mappings in force, for aggregation.
    package static func campaignMappings(_ db: Database) throws -> [CampaignMapping] {
        try SQLiteSQL.rows(db, CampaignMappingsSQL.select).map { try CampaignMappingsSQL.stored($0).mapping }
    }
}

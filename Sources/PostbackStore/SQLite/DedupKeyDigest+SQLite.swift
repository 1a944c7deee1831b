import Foundation
import GRDB

extension DedupKeyDigest {
    /// `postbackd_dedup_key(kind, key_space, ad_network_id, transaction_id, postback_sequence_index)`,
    /// for the migration that fills the column of postbacks stored before it existed.
    static let sqlFunction = DatabaseFunction("postbackd_dedup_key", argumentCount: 5, pure: true) { values in
        guard let kind = String.fromDatabaseValue(values[0]), let keySpace = String.fromDatabaseValue(values[1]),
            let network = String.fromDatabaseValue(values[2]), let transaction = String.fromDatabaseValue(values[3]),
            let index = Int64.fromDatabaseValue(values[4])
        else { return nil }
        return Data(
            digest(
                kind: kind,
                keySpace: keySpace,
                adNetworkID: network,
                transactionID: transaction,
                sequenceIndex: index
            )
        )
    }
}

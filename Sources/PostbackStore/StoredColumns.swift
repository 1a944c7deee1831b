import PostbackKit

/// The `dedup_key` column: the first 16 bytes of the SHA-256 of the dedup key's fields (kind,
/// key space, ad network, transaction or postback id, sequence index), each prefixed with its
/// length so that no two keys encode alike.
///
/// The unique index is over this digest rather than the five text columns (about 90 bytes an
/// entry): a third of the size, so that far more of it stays in SQLite's page cache, although
/// every insert still lands at a random place in it (1,000,000 postbacks on one core: 73 s →
/// 60 s). Its collisions are out of reach (a chosen one costs 2^128 hashes); the store still
/// compares the full key on a conflict and quarantines a collision rather than count it.
package enum DedupKeyDigest {
    package static func digest(
        kind: String,
        keySpace: String,
        adNetworkID: String,
        transactionID: String,
        sequenceIndex: Int64
    )
        -> [UInt8]
    {
        var message: [UInt8] = []
        message.reserveCapacity(96)
        for field in [kind, keySpace, adNetworkID, transactionID, String(sequenceIndex)] {
            let count = UInt32(truncatingIfNeeded: field.utf8.count)
            message += [
                UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF),
            ]
            message += field.utf8
        }
        return Array(SHA256Digest.hash(message).prefix(16))
    }
}

/// A postback's fields as the `postbacks` table's columns, for either kind: its dedup key's
/// columns, the signed columns, and the unsigned interaction type.
struct StoredColumns: Sendable {
    var adNetworkID: String
    var transactionID: String
    var sequenceIndex: Int
    /// What its signature covers besides the dedup key: a copy is compared with it.
    var signed: SignedColumns
    var adInteractionType: String?

    init(_ postback: Postback) {
        switch postback {
        case .skan(let skan):
            adNetworkID = skan.adNetworkID
            transactionID = skan.transactionID
            sequenceIndex = skan.postbackSequenceIndex
            signed = SignedColumns(
                version: skan.version.rawValue,
                appID: skan.appID,
                campaignID: skan.campaignID,
                sourceIdentifier: skan.sourceIdentifier,
                sourceAppID: skan.sourceAppID,
                sourceDomain: skan.sourceDomain,
                fidelityType: skan.fidelityType,
                didWin: skan.didWin,
                redownload: skan.redownload
            )
        case .aak(let aak):
            adNetworkID = aak.adNetworkID
            transactionID = aak.postbackID
            sequenceIndex = aak.postbackSequenceIndex
            let redownload: Bool? =
                switch aak.conversionType {
                case .download: false
                case .redownload: true
                case .reengagement: nil
                }
            signed = SignedColumns(
                appID: aak.advertisedItemID,
                sourceIdentifier: aak.sourceIdentifier,
                sourceAppID: aak.publisherItemID,
                didWin: aak.didWin,
                redownload: redownload,
                conversionType: aak.conversionType.rawValue,
                marketplaceID: aak.marketplaceID,
                impressionType: aak.impressionType
            )
            adInteractionType = aak.adInteractionType
        }
    }
}

/// The columns of a stored postback that its signature covers besides its dedup key: a copy
/// whose columns differ from the stored postback's is another signed content under the same key,
/// which Apple never sends (it signs one content per transaction and window).
///
/// SKAdNetwork signs the version, campaign or source identifier, app, redownload, source app or
/// domain, fidelity type and did-win; AdAttributionKit's JWS payload the impression type, source
/// identifier, advertised app, conversion type (and so `redownload`), did-win, marketplace and
/// publishing app. The conversion values, country and interaction type are not signed.
struct SignedColumns: Equatable, Sendable {
    var version: String? = nil
    var appID: Int64
    var campaignID: Int64? = nil
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String? = nil
    var fidelityType: Int? = nil
    var didWin: Bool?
    var redownload: Bool?
    var conversionType: String? = nil
    var marketplaceID: String? = nil
    var impressionType: String? = nil

    /// The columns as the engines' lookups of a stored postback select them, in this order.
    static let sqlColumns = """
        version, app_id, campaign_id, source_identifier, source_app_id, source_domain, fidelity_type, did_win, \
        redownload, conversion_type, marketplace_id, impression_type
        """
}

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
enum DedupKeyDigest {
    static func digest(
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

/// A postback's fields as the `postbacks` table's columns, for either kind.
struct StoredColumns {
    var adNetworkID: String
    var transactionID: String
    var sequenceIndex: Int
    var version: String?
    var appID: Int64
    var campaignID: Int64?
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var fidelityType: Int?
    var didWin: Bool?
    var redownload: Bool?
    var conversionType: String?
    var marketplaceID: String?
    var impressionType: String?
    var adInteractionType: String?

    init(_ postback: Postback) {
        switch postback {
        case .skan(let skan):
            adNetworkID = skan.adNetworkID
            transactionID = skan.transactionID
            sequenceIndex = skan.postbackSequenceIndex
            version = skan.version.rawValue
            appID = skan.appID
            campaignID = skan.campaignID
            sourceIdentifier = skan.sourceIdentifier
            sourceAppID = skan.sourceAppID
            sourceDomain = skan.sourceDomain
            fidelityType = skan.fidelityType
            didWin = skan.didWin
            redownload = skan.redownload
        case .aak(let aak):
            adNetworkID = aak.adNetworkID
            transactionID = aak.postbackID
            sequenceIndex = aak.postbackSequenceIndex
            appID = aak.advertisedItemID
            sourceIdentifier = aak.sourceIdentifier
            sourceAppID = aak.publisherItemID
            didWin = aak.didWin
            switch aak.conversionType {
            case .download: redownload = false
            case .redownload: redownload = true
            case .reengagement: redownload = nil
            }
            conversionType = aak.conversionType.rawValue
            marketplaceID = aak.marketplaceID
            impressionType = aak.impressionType
            adInteractionType = aak.adInteractionType
        }
    }
}

/// Section 9's inferences (``PostbackInference``) as SQL over a `postbacks` row, for the
/// migrations that fill them in for rows stored before the columns existed. The same rules
/// as the Swift that computes them when a postback is stored, built from its constants; the
/// tests compare the two on both engines.
enum InferenceSQL {
    /// True for SKAdNetwork 4.0 and AdAttributionKit rows.
    static let windowed =
        "(kind = 'aak' OR version IN ("
        + PostbackInference.windowedVersions.map { "'\($0.rawValue)'" }.joined(separator: ", ") + "))"

    /// The hours between the estimated install and `received_at`.
    static let offsetHours = """
        CASE WHEN \(windowed) THEN CASE WHEN postback_sequence_index <= 0 THEN \(PostbackInference.windowedOffsetHours(sequenceIndex: 0)) \
        WHEN postback_sequence_index = 1 THEN \(PostbackInference.windowedOffsetHours(sequenceIndex: 1)) \
        ELSE \(PostbackInference.windowedOffsetHours(sequenceIndex: 2)) END \
        ELSE \(PostbackInference.singleWindowOffsetHours) END
        """

    /// The tier: postback 0 of a winning 4.0 or AdAttributionKit attribution, by its values.
    static let tier = """
        CASE WHEN \(windowed) AND postback_sequence_index = 0 AND did_win IS NOT FALSE THEN \
        CASE WHEN fine_value IS NOT NULL THEN \
        CASE WHEN source_app_id IS NOT NULL OR source_domain IS NOT NULL THEN 3 ELSE 2 END \
        WHEN coarse_value IS NOT NULL THEN 1 ELSE 0 END END
        """

    static let digits = "length(source_identifier)"

    /// SQLite: `received_at` is ISO 8601 text (`2026-11-21T08:30:00.000Z`).
    static let sqliteBackfill = """
        UPDATE postbacks SET
            estimated_install_at = strftime('%Y-%m-%dT%H:%M:%fZ', received_at, '-' || (\(offsetHours)) || ' hours'),
            install_date = date(received_at, '-' || (\(offsetHours)) || ' hours'),
            crowd_anonymity_tier = \(tier),
            source_identifier_digits = \(digits)
        """

    /// PostgreSQL: `received_at` is a `timestamptz`.
    static let postgresBackfill = """
        UPDATE postbacks SET
            estimated_install_at = received_at - make_interval(hours => \(offsetHours)),
            install_date = ((received_at - make_interval(hours => \(offsetHours))) AT TIME ZONE 'UTC')::date,
            crowd_anonymity_tier = \(tier),
            source_identifier_digits = \(digits)
        """
}

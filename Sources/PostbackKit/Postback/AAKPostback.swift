/// An AdAttributionKit postback: a JSON envelope holding a compact JWS (ES256) whose payload
/// is signed, with unsigned conversion values beside it.
public struct AAKPostback: Sendable, Hashable {
    /// The JWS header's `kid`, after JSON decoding (devices escape its slash).
    public var keyID: String
    /// The JWS header's `alg`.
    package var algorithm: String
    /// The JWS header's `crit` as received (an excerpt), when it has one: the extensions the
    /// signer says a recipient must understand, and postbackd understands none (the signature
    /// is then refused, RFC 7515 §4.1.11).
    package var criticalHeader: String? = nil
    /// `impression-type`.
    public var impressionType: String
    /// `ad-network-identifier`.
    public var adNetworkID: String
    /// `source-identifier`: 2, 3 or 4 digits.
    public var sourceIdentifier: String
    /// `advertised-item-identifier`: the App Store id of the advertised app.
    public var advertisedItemID: Int64
    /// `conversion-type`.
    public var conversionType: AAKConversionType
    /// `postback-identifier`: the dedup key with the ad network.
    public var postbackID: String
    /// `did-win`.
    public var didWin: Bool
    /// `postback-sequence-index`: 0, 1 or 2.
    public var postbackSequenceIndex: Int
    /// `marketplace-identifier` (`com.apple.AppStore`, an alternative marketplace's id).
    public var marketplaceID: String?
    /// `publisher-item-identifier`: the publishing app.
    public var publisherItemID: Int64?
    /// The envelope's unsigned `conversion-value` or `coarse-conversion-value`.
    public var conversionValue: ConversionValue?
    /// The envelope's unsigned `ad-interaction-type` (`click`, `view`).
    public var adInteractionType: String?
    /// The envelope's unsigned `country-code`.
    public var countryCode: String?
    /// A forwarder's `timestamp` field, if any.
    package var forwarderTimestamp: Double?
    /// The compact JWS exactly as received.
    public var jws: String
    /// The `conversion-type` as signed, when it is another spelling of ``conversionType``'s
    /// (Apple's pages write the re-engagement type both `re-engagement` and `reengagement`).
    var conversionTypeSpelling: String? = nil

    /// Oddities worth a warning.
    public var warnings: [String] {
        guard let conversionTypeSpelling else { return [] }
        return [
            "conversion-type \"\(conversionTypeSpelling)\" read as \"\(conversionType.rawValue)\" (Apple's pages spell it both ways)"
        ]
    }

    /// The JWS signing input: the header and payload segments and the '.' between them,
    /// exactly as received.
    var signingInput: Substring {
        guard let lastDot = jws.lastIndex(of: ".") else { return jws[...] }
        return jws[..<lastDot]
    }

    /// The JWS signature segment (base64url of the raw 64-byte R‖S).
    var signatureSegment: Substring {
        guard let lastDot = jws.lastIndex(of: ".") else { return "" }
        return jws[jws.index(after: lastDot)...]
    }

    /// The dedup key: (`ad-network-identifier`, `postback-identifier`).
    public var dedupKey: DedupKey {
        DedupKey(adNetworkID: adNetworkID, transactionID: postbackID, postbackSequenceIndex: postbackSequenceIndex)
    }
}

/// What an AdAttributionKit conversion was.
public enum AAKConversionType: String, Sendable, Hashable, CaseIterable {
    case download
    case redownload
    case reengagement = "re-engagement"

    /// The type a signed `conversion-type` stands for, and whether it was another spelling:
    /// `reengagement` is read as `re-engagement`, so that a genuine postback is not quarantined
    /// over Apple's two spellings.
    static func reading(_ text: String) -> (AAKConversionType, otherSpelling: Bool)? {
        if let type = AAKConversionType(rawValue: text) { return (type, false) }
        return text == "reengagement" ? (.reengagement, true) : nil
    }
}

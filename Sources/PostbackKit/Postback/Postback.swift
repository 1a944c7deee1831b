/// A postback of either kind, with its fields typed.
public enum Postback: Sendable, Hashable {
    case skan(SKANPostback)
    case aak(AAKPostback)

    /// `skan` or `aak`.
    public var kind: PostbackKind {
        switch self {
        case .skan: .skan
        case .aak: .aak
        }
    }

    /// The identity under which the postback is counted once.
    public var dedupKey: DedupKey {
        switch self {
        case .skan(let postback): postback.dedupKey
        case .aak(let postback): postback.dedupKey
        }
    }

    /// The advertised app: `app-id`, or AdAttributionKit's `advertised-item-identifier`.
    public var appID: Int64 {
        switch self {
        case .skan(let postback): postback.appID
        case .aak(let postback): postback.advertisedItemID
        }
    }

    /// `postback-sequence-index` (0 before SKAdNetwork 4.0).
    public var sequenceIndex: Int {
        switch self {
        case .skan(let postback): postback.postbackSequenceIndex
        case .aak(let postback): postback.postbackSequenceIndex
        }
    }

    /// The unsigned conversion value, if any.
    public var conversionValue: ConversionValue? {
        switch self {
        case .skan(let postback): postback.conversionValue
        case .aak(let postback): postback.conversionValue
        }
    }

    /// The unsigned country code, if any.
    public var countryCode: String? {
        switch self {
        case .skan(let postback): postback.countryCode
        case .aak(let postback): postback.countryCode
        }
    }

    /// A forwarder's `timestamp` field, if any.
    package var forwarderTimestamp: Double? {
        switch self {
        case .skan(let postback): postback.forwarderTimestamp
        case .aak(let postback): postback.forwarderTimestamp
        }
    }

    /// Identifying fields for reports.
    package var identity: PostbackIdentity {
        switch self {
        case .skan(let postback):
            PostbackIdentity(
                version: postback.version.rawValue,
                adNetworkID: postback.adNetworkID,
                transactionID: postback.transactionID
            )
        case .aak(let postback):
            PostbackIdentity(version: nil, adNetworkID: postback.adNetworkID, transactionID: postback.postbackID)
        }
    }

    /// Oddities in a verified postback that are worth a warning.
    public var warnings: [String] {
        switch self {
        case .skan(let postback): postback.warnings
        case .aak(let postback): postback.warnings
        }
    }
}

/// The two postback formats.
public enum PostbackKind: String, Sendable, Hashable, CaseIterable {
    /// SKAdNetwork 1.0–4.0.
    case skan
    /// AdAttributionKit.
    case aak
}

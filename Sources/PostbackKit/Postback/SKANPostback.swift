/// A SKAdNetwork postback whose fields have the types and ranges its version requires.
///
/// Only fields that the postback's version defines are read into properties: a 3.0 postback's
/// stray `postback-sequence-index`, or a 1.0 postback's `redownload`, are not signed for that
/// version, so trusting them would let anyone who relays the postback change its meaning. They
/// stay in the raw bytes. The unsigned value fields (`conversion-value`,
/// `coarse-conversion-value`, `country-code`) are read for every version.
public struct SKANPostback: Sendable, Hashable {
    /// The version, from `version` (absent means 1.0).
    public var version: SKANVersion
    /// Whether the postback carried a `version` field (1.0 postbacks may or may not).
    package var hasVersionField: Bool
    /// `ad-network-id`, byte for byte as received (never case-folded: it is signed).
    public var adNetworkID: String
    /// `campaign-id` (1.0–3.0). Apple's range is 1–100; values outside it are a warning.
    public var campaignID: Int64?
    /// `source-identifier` (4.0): 2, 3 or 4 digits, kept as a string because leading zeros matter.
    public var sourceIdentifier: String?
    /// `app-id`: the App Store id of the advertised app.
    public var appID: Int64
    /// `transaction-id`.
    public var transactionID: String
    /// `redownload` (2.0+).
    public var redownload: Bool?
    /// `source-app-id` (2.0+, only above Apple's privacy threshold). 0 marks a test postback.
    public var sourceAppID: Int64?
    /// `source-domain` (4.0, web ads).
    public var sourceDomain: String?
    /// `fidelity-type` (2.2+): 0 view-through, 1 StoreKit-rendered or web ad.
    public var fidelityType: Int?
    /// `did-win` (3.0+).
    public var didWin: Bool?
    /// `postback-sequence-index` (4.0): 0, 1 or 2; 0 for every earlier version.
    public var postbackSequenceIndex: Int
    /// `conversion-value` or `coarse-conversion-value`; nil when absent or `null` (below the
    /// privacy threshold).
    public var conversionValue: ConversionValue?
    /// `country-code` (unsigned, newest postbacks).
    public var countryCode: String?
    /// `attribution-signature` exactly as received (base64 of a DER ECDSA signature).
    public var attributionSignature: String
    /// A forwarder's `timestamp` field (a number or a numeric string) when it has one; never
    /// signed, used only as a hint for when the postback was received.
    package var forwarderTimestamp: Double?

    package init(
        version: SKANVersion,
        hasVersionField: Bool,
        adNetworkID: String,
        campaignID: Int64? = nil,
        sourceIdentifier: String? = nil,
        appID: Int64,
        transactionID: String,
        redownload: Bool? = nil,
        sourceAppID: Int64? = nil,
        sourceDomain: String? = nil,
        fidelityType: Int? = nil,
        didWin: Bool? = nil,
        postbackSequenceIndex: Int = 0,
        conversionValue: ConversionValue? = nil,
        countryCode: String? = nil,
        attributionSignature: String,
        forwarderTimestamp: Double? = nil
    ) {
        self.version = version
        self.hasVersionField = hasVersionField
        self.adNetworkID = adNetworkID
        self.campaignID = campaignID
        self.sourceIdentifier = sourceIdentifier
        self.appID = appID
        self.transactionID = transactionID
        self.redownload = redownload
        self.sourceAppID = sourceAppID
        self.sourceDomain = sourceDomain
        self.fidelityType = fidelityType
        self.didWin = didWin
        self.postbackSequenceIndex = postbackSequenceIndex
        self.conversionValue = conversionValue
        self.countryCode = countryCode
        self.attributionSignature = attributionSignature
        self.forwarderTimestamp = forwarderTimestamp
    }

    /// The dedup key the spec prescribes: ad network, transaction, sequence index.
    public var dedupKey: DedupKey {
        DedupKey(adNetworkID: adNetworkID, transactionID: transactionID, postbackSequenceIndex: postbackSequenceIndex)
    }
}

/// The identity under which a postback is counted once.
///
/// (`ad-network-id`, `transaction-id`, `postback-sequence-index`), the index being 0 before
/// 4.0: Apple does not say whether the three 4.0 postbacks of one install share a transaction
/// id (public fixtures do), so the index keeps them apart.
public struct DedupKey: Sendable, Hashable, CustomStringConvertible {
    public var adNetworkID: String
    public var transactionID: String
    public var postbackSequenceIndex: Int

    public var description: String { "\(adNetworkID)/\(transactionID)/\(postbackSequenceIndex)" }
}

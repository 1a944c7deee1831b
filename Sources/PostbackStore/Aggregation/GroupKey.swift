import PostbackKit

/// The dimensions of one aggregate row within its day (``DayAggregation/day`` is its date).
struct GroupKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var version: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var marketplaceID: String?
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// The campaign mapping row (an index into ``CampaignMappings/rows``), if any.
    var mapping: Int?
    /// `download`, `redownload` or `re-engagement` (``AggregatedPostback/conversionTypeDimension``).
    var conversionType: AAKConversionType

    /// Whether its postbacks decode with the re-engagement model.
    var isReengagement: Bool { conversionType == .reengagement }

    init(_ postback: AggregatedPostback, mapping: Int?) {
        appID = postback.appID
        adNetworkID = postback.adNetworkID
        sourceIdentifier = postback.sourceIdentifierDimension
        sourceAppID = postback.sourceAppID
        sourceDomain = postback.sourceDomain
        version = postback.version
        fidelityType = postback.fidelityType
        redownload = postback.redownload
        didWin = postback.didWin
        sequenceIndex = postback.sequenceIndex
        countryCode = postback.countryCode
        marketplaceID = postback.marketplaceID
        installDate = postback.installDate
        crowdAnonymityTier = postback.crowdAnonymityTier
        sourceIdentifierDigits = postback.sourceIdentifierDigits
        self.mapping = mapping
        conversionType = postback.conversionTypeDimension
    }
}

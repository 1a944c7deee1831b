import PostbackKit

/// The columns of a stored postback that aggregation reads.
struct AggregatedPostback {
    var appID: Int64
    var adNetworkID: String
    var isAAK: Bool
    var keySpace: String
    var version: String?
    var campaignID: Int64?
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var conversionValue: ConversionValue?
    var conversionType: String?
    var marketplaceID: String?
    /// The stored inferences (``PostbackInference``).
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// An instant that decodes it as its `received_at` does: read only for the apps whose
    /// decoding changes within its day (``DayAggregation/changing``), as the breakpoint before
    /// it; nil for the others, which any instant of the day decodes.
    var receivedAt: UTCInstant?
    /// On PostgreSQL, the bucket of its `received_at` among the day's breakpoints, which the
    /// server computes (``DayAggregation/breakpoints``).
    var receivedBucket: Int?
    /// How many identical postbacks this row stands for (an engine may group them in SQL).
    var count = 1

    /// The timeline that decodes it: AdAttributionKit re-engagements have their own.
    var modelConversionType: ModelConversionType {
        isAAK && conversionType == AAKConversionType.reengagement.rawValue ? .reengagement : .install
    }

    var isProduction: Bool { keySpace == KeySpace.production.rawValue }
    var isTestMode: Bool { keySpace == KeySpace.test.rawValue }
    var isDevelopment: Bool { keySpace == KeySpace.development.rawValue }

    /// `did-win` true, or no `did-win` at all (before 3.0, every postback is the winner's).
    var isWinning: Bool { didWin ?? true }

    /// The `source_identifier` dimension: the 4.0 or AdAttributionKit source identifier, or
    /// the campaign id as a string before 4.0.
    var sourceIdentifierDimension: String? {
        sourceIdentifier ?? campaignID.map { String($0) }
    }

    /// The `conversion_type` dimension: AdAttributionKit's conversion type, or for SKAdNetwork
    /// `redownload` when `redownload` is true and `download` otherwise.
    var conversionTypeDimension: AAKConversionType {
        if isAAK, let conversionType, let type = AAKConversionType(rawValue: conversionType) { return type }
        return redownload == true ? .redownload : .download
    }

    /// Whether the fine-value histogram counts it: winning production postbacks without a
    /// coarse value, bucketed by fine value (NULL for no value at all).
    var countsInFineValueHistogram: Bool {
        isProduction && isWinning && conversionValue?.coarse == nil
    }
}

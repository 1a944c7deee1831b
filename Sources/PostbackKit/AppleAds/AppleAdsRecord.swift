/// The attribution record Apple's AdServices API answers with (200), as documented:
/// `attribution`, and when true `orgId`, `campaignId`, `adGroupId`, `keywordId`, `adId`,
/// `countryOrRegion`, `conversionType`, `claimType`, `clickDate` (detailed payload only),
/// `impressionDate`, `supplyPlacement`.
///
/// Reading never refuses a record for a value or field it does not know: the raw JSON is kept
/// whole, a field of an unexpected type is left out of its column, and values outside the
/// documented sets are kept as they are (and counted by `apple-ads status`).
public struct AppleAdsRecord: Sendable, Hashable {
    public var attribution: Bool
    public var orgID: Int64?
    public var campaignID: Int64?
    public var adGroupID: Int64?
    public var keywordID: Int64?
    public var adID: Int64?
    public var countryOrRegion: String?
    public var conversionType: String?
    public var claimType: String?
    public var clickDate: String?
    public var impressionDate: String?
    public var supplyPlacement: String?
    /// The body as Apple sent it.
    public var raw: String

    public init(attribution: Bool, raw: String) {
        self.attribution = attribution
        self.raw = raw
    }

    /// The documented `conversionType` values: `Download`, `Redownload`, and `preorder` (added
    /// later). Others are kept and reported apart.
    public static let knownConversionTypes: Set<String> = ["Download", "Redownload", "preorder"]
    /// The documented `claimType` values.
    public static let knownClaimTypes: Set<String> = ["Click", "Impression"]

    /// Reads a 200 answer's body.
    ///
    /// - Throws: ``AppleAdsTokenError`` when it is not a JSON object with a boolean
    ///   `attribution`: without it the answer says nothing.
    public static func parse(_ bytes: [UInt8]) throws(AppleAdsTokenError) -> AppleAdsRecord {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw AppleAdsTokenError(field: nil, reason: "the record is not JSON: \(error.message)")
        }
        guard case .object = value else {
            throw AppleAdsTokenError(field: nil, reason: "the record is \(value.kindName), not an object")
        }
        guard case .bool(let attribution)? = value["attribution"] else {
            throw AppleAdsTokenError(field: "attribution", reason: "the record has no boolean attribution")
        }
        var record = AppleAdsRecord(attribution: attribution, raw: String(decoding: bytes, as: UTF8.self))
        func integer(_ key: String) -> Int64? {
            switch value[key] {
            case .number(let text)?, .string(let text)?: Int64(text)
            default: nil
            }
        }
        func text(_ key: String) -> String? {
            switch value[key] {
            case .string(let text)?: text
            case .number(let text)?: text
            default: nil
            }
        }
        record.orgID = integer("orgId")
        record.campaignID = integer("campaignId")
        record.adGroupID = integer("adGroupId")
        record.keywordID = integer("keywordId")
        record.adID = integer("adId")
        record.countryOrRegion = text("countryOrRegion")
        record.conversionType = text("conversionType")
        record.claimType = text("claimType")
        record.clickDate = text("clickDate")
        record.impressionDate = text("impressionDate")
        record.supplyPlacement = text("supplyPlacement")
        return record
    }

    /// The UTC day a report counts the record on: the click's, else the impression's, else the
    /// day the app obtained the token.
    public func reportDay(obtainedAt: UTCInstant) -> UTCDay {
        for date in [clickDate, impressionDate] {
            if let date, let instant = UTCInstant(iso8601: date) { return instant.day }
        }
        return obtainedAt.day
    }
}

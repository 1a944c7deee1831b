/// The attribution record Apple's AdServices API answers with (200), as documented:
/// `attribution`, and when true `orgId`, `campaignId`, `adGroupId`, `keywordId`, `adId`,
/// `countryOrRegion`, `conversionType`, `claimType`, `clickDate` (detailed payload only),
/// `impressionDate`, `supplyPlacement`.
///
/// Reading never refuses a record for a value or field it does not know: the raw JSON is kept
/// whole, a field of an unexpected type is left out of its column, and values outside the
/// documented sets are kept as they are (and counted by `apple-ads status`).
package struct AppleAdsRecord: Sendable, Hashable {
    package var attribution: Bool
    package var orgID: Int64?
    package var campaignID: Int64?
    package var adGroupID: Int64?
    package var keywordID: Int64?
    package var adID: Int64?
    package var countryOrRegion: String?
    package var conversionType: String?
    package var claimType: String?
    package var clickDate: String?
    package var impressionDate: String?
    package var supplyPlacement: String?
    /// The body as Apple sent it.
    package var raw: String

    package init(attribution: Bool, raw: String) {
        self.attribution = attribution
        self.raw = raw
    }

    /// The documented `conversionType` values besides a pre-order: `Download`, `Redownload`.
    /// Others are kept and reported apart.
    package static let knownConversionTypes: [String] = ["Download", "Redownload"]
    /// A pre-order's `conversionType`, compared without case: Apple's field table and examples
    /// write `PreOrder`, its changelog `preorder`.
    package static let preorder = "preorder"
    /// The documented `claimType` values.
    package static let knownClaimTypes: [String] = ["Click", "Impression"]
    /// The documented `supplyPlacement` values (January 2026). Others are kept as given and
    /// counted by `apple-ads status`.
    package static let knownSupplyPlacements: [String] = [
        "APPSTORE_SEARCH_RESULTS", "APPSTORE_SEARCH_TAB", "APPSTORE_TODAY_TAB", "APPSTORE_PRODUCT_PAGES",
    ]
    /// The ids of the record AdServices answers with on a device in developer mode (Apple's
    /// sample: org, campaign and ad group 1234567890, ad 542317136, clicked 2020-04-08T17:17Z;
    /// its keyword id differs between versions of the documentation, so it is not compared). A
    /// record with all four is a test, never an install (``AppleAdsMetric/test`` in the store).
    package static let developerTestIDs = (
        org: Int64(1_234_567_890), campaign: Int64(1_234_567_890),
        adGroup: Int64(1_234_567_890), ad: Int64(542_317_136)
    )

    /// Reads a 200 answer's body.
    ///
    /// - Throws: ``AppleAdsTokenError`` when it is not a JSON object with a boolean
    ///   `attribution`: without it the answer says nothing.
    package static func parse(_ bytes: [UInt8]) throws(AppleAdsTokenError) -> AppleAdsRecord {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw AppleAdsTokenError(.notJSON, field: nil, message: "the record is not JSON: \(error.message)")
        }
        guard case .object = value else {
            throw AppleAdsTokenError(.wrongType, field: nil, message: "the record is \(value.kindName), not an object")
        }
        guard case .bool(let attribution)? = value["attribution"] else {
            throw AppleAdsTokenError(.missing, field: "attribution", message: "the record has no boolean attribution")
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
    package func reportDay(obtainedAt: UTCInstant) -> UTCDay {
        for date in [clickDate, impressionDate] {
            if let date, let instant = UTCInstant(iso8601: date) { return instant.day }
        }
        return obtainedAt.day
    }
}

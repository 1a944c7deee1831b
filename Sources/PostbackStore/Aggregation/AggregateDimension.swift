import PostbackKit

/// A dimension the daily aggregate rows are grouped by, and reports can group by.
package enum AggregateDimension: String, Sendable, Hashable, CaseIterable {
    /// The UTC day of `received_at`.
    case date
    case appID = "app_id"
    case adNetworkID = "ad_network_id"
    /// The 4.0 or AdAttributionKit source identifier, or the campaign id as a string before 4.0.
    case sourceIdentifier = "source_identifier"
    case sourceAppID = "source_app_id"
    case sourceDomain = "source_domain"
    case version
    case fidelityType = "fidelity_type"
    case redownload
    case didWin = "did_win"
    case postbackSequenceIndex = "postback_sequence_index"
    case countryCode = "country_code"
    /// AdAttributionKit `marketplace-identifier` (`com.apple.AppStore` or an alternative
    /// marketplace); NULL for SKAdNetwork postbacks and when absent.
    case marketplaceID = "marketplace_id"
    /// Apple Ads' App Store placement (`Search results`, `Search tab`, `Today tab`, `Product
    /// pages`) of a postback from `com.apple.ads`, from its campaign id (source identifier)
    /// 10, 20, 30 or 40; NULL for other networks and other ids. Derived when reporting, not
    /// stored.
    case placement
    /// The UTC day of the estimated install time (`received_at` minus 36, 84, 252 or 924
    /// hours; `../shared/spec/postbacks.md`, section 9).
    case installDate = "install_date"
    /// 0–3 for postback 0 of a winning 4.0 or AdAttributionKit attribution; NULL otherwise.
    case crowdAnonymityTier = "crowd_anonymity_tier"
    /// 2, 3 or 4: the digits of the source identifier; NULL before 4.0.
    case sourceIdentifierDigits = "source_identifier_digits"
    /// The network's campaign, ad group and creative for the source identifier (before 4.0,
    /// the campaign id) on the install date, from `postbackd campaigns add`; NULL unmapped.
    case campaign
    case adGroup = "ad_group"
    case creative
    /// `download`, `redownload` or `re-engagement`: an AdAttributionKit postback's conversion
    /// type; for SKAdNetwork, `redownload` when its `redownload` is true, else `download`. NULL
    /// in rows aggregated before conversion types were kept (issue 36).
    case conversionType = "conversion_type"

    /// The column name, which is also the name in reports.
    package var column: String { rawValue }

    /// The SQL type of the column.
    var sqlType: String {
        switch self {
        case .date, .adNetworkID, .sourceIdentifier, .sourceDomain, .version, .countryCode, .marketplaceID, .placement,
            .installDate, .campaign, .adGroup, .creative, .conversionType:
            "TEXT"
        case .appID, .sourceAppID, .fidelityType, .redownload, .didWin, .postbackSequenceIndex, .crowdAnonymityTier,
            .sourceIdentifierDigits:
            "INTEGER"
        }
    }

    /// Whether the column holds a day (SQLite's text, PostgreSQL's `date`).
    var isDay: Bool { self == .date || self == .installDate }

    /// The dimensions a report groups by when none are given.
    static let reportDefault: [AggregateDimension] = [.date, .adNetworkID]

    /// Parses `date,ad_network_id`, naming any unknown dimension.
    package static func list(_ text: String) throws(StoreError) -> [AggregateDimension] {
        try dimensionList(text, as: AggregateDimension.self)
    }

    /// The dimensions stored as columns of the aggregate tables, in order.
    static let stored: [AggregateDimension] = allCases.filter { $0.derivation == nil }

    /// `date, app_id, …`: the stored columns.
    static var columnList: String {
        stored.map(\.column).joined(separator: ", ")
    }

    /// The SQL expression over the stored columns of a dimension derived when reporting.
    var derivation: String? {
        guard self == .placement else { return nil }
        let names = ApplePlacement.allCases.map { "WHEN '\($0.campaignID)' THEN '\($0.rawValue)'" }
        return "CASE WHEN ad_network_id = '\(ApplePlacement.adNetworkID)' THEN CASE source_identifier "
            + names.joined(separator: " ") + " END END"
    }

    /// How a report selects the dimension: its column, or its derivation.
    var selectExpression: String { derivation ?? column }
}

/// The App Store placements Apple Ads stands for with the campaign ids of its SKAdNetwork (and
/// AdAttributionKit) postbacks.
enum ApplePlacement: String, Sendable, CaseIterable {
    case searchResults = "Search results"
    case searchTab = "Search tab"
    case todayTab = "Today tab"
    case productPages = "Product pages"

    /// Apple Ads' ad network id.
    package static let adNetworkID = "com.apple.ads"

    package var campaignID: Int {
        switch self {
        case .searchResults: 10
        case .searchTab: 20
        case .todayTab: 30
        case .productPages: 40
        }
    }
}

/// Parses `date,app_id` (spaces around names allowed, repeats dropped) into dimensions of a
/// report.
///
/// - Throws: ``StoreError`` naming the first unknown name.
func dimensionList<Dimension: RawRepresentable & Equatable & CaseIterable>(
    _ text: String,
    as _: Dimension.Type
) throws(StoreError) -> [Dimension] where Dimension.RawValue == String {
    var dimensions: [Dimension] = []
    for part in text.split(separator: ",") {
        let name = part.withoutSurroundingSpaces
        guard let dimension = Dimension(rawValue: name) else {
            throw StoreError(
                .unknownDimension,
                "\"\(name)\" is not a dimension; use \(Dimension.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        if !dimensions.contains(dimension) { dimensions.append(dimension) }
    }
    return dimensions
}

import PostbackKit
/// A dimension the daily aggregate rows are grouped by, and reports can group by.
public enum AggregateDimension: String, Sendable, Hashable, CaseIterable {
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

    /// The column name, which is also the name in reports.
    public var column: String { rawValue }

    /// The SQL type of the column.
    var sqlType: String {
        switch self {
        case .date, .adNetworkID, .sourceIdentifier, .sourceDomain, .version, .countryCode, .marketplaceID: "TEXT"
        case .appID, .sourceAppID, .fidelityType, .redownload, .didWin, .postbackSequenceIndex: "INTEGER"
        }
    }

    /// The dimensions a report groups by when none are given.
    public static let reportDefault: [AggregateDimension] = [.date, .adNetworkID]

    /// Parses `date,ad_network_id`, naming any unknown dimension.
    public static func list(_ text: String) throws(AggregateDimensionError) -> [AggregateDimension] {
        var dimensions: [AggregateDimension] = []
        for part in text.split(separator: ",") {
            let name = String(part.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
            guard let dimension = AggregateDimension(rawValue: name) else {
                throw AggregateDimensionError(name: name)
            }
            if !dimensions.contains(dimension) { dimensions.append(dimension) }
        }
        return dimensions
    }

    /// The dimensions of schema v2, which created the aggregate tables (later versions add
    /// columns): a migration must create the same tables whatever this enum holds today.
    static let version2: [AggregateDimension] = [
        .date, .appID, .adNetworkID, .sourceIdentifier, .sourceAppID, .sourceDomain, .version, .fidelityType,
        .redownload, .didWin, .postbackSequenceIndex, .countryCode,
    ]

    /// `date TEXT, app_id INTEGER, …` for a CREATE TABLE.
    static func columnDefinitions(_ dimensions: [AggregateDimension]) -> String {
        dimensions.map { "\($0.column) \($0.sqlType)" }.joined(separator: ", ")
    }

    /// `date, app_id, …`.
    static var columnList: String {
        allCases.map(\.column).joined(separator: ", ")
    }
}

/// An unknown dimension name in `--by`.
public struct AggregateDimensionError: Error, Hashable, CustomStringConvertible {
    public var name: String
    public var description: String {
        "\"\(name)\" is not a dimension; use \(AggregateDimension.allCases.map(\.rawValue).joined(separator: ", "))"
    }
}

import PostbackKit

/// What storing a token did.
package enum AppleAdsAddOutcome: String, Sendable, Hashable {
    /// Stored, pending its exchange.
    case added
    /// The same token was stored already (pending, or resolved and deleted: its SHA-256 is
    /// kept): nothing changed. The framework returns the same token for 24 hours.
    case known
    /// Stored as `expired`: obtained more than 24 hours ago, so it is never sent.
    case expired
}

/// `apple-ads status`: tokens by state, and what waits.
package struct AppleAdsStatus: Sendable, Hashable {
    package var counts: [AppleAdsTokenState: Int] = [:]
    /// When the oldest pending token was obtained.
    var oldestPendingObtainedMs: Int64?
    /// When the next pending token is due.
    var nextDueMs: Int64?
    /// Pending tokens by the last answer they had (`404`, `503`, `timeout`, …; `none` when not
    /// sent yet).
    var pendingByLastStatus: [String: Int] = [:]
    /// Attributed records whose `conversionType` is not one of the documented values (`none`
    /// when absent), and how many.
    var unknownConversionTypes: [String: Int] = [:]
    /// The same for `claimType` (absent is documented, so not counted).
    var unknownClaimTypes: [String: Int] = [:]
    /// The same for `supplyPlacement` (absent is documented, so not counted).
    var unknownSupplyPlacements: [String: Int] = [:]
    /// Developer-mode test records (``AppleAdsMetric/test``).
    var testRecords = 0

    package init() {}

    package var total: Int { counts.values.reduce(0, +) }
}

/// A dimension of `apple-ads report`.
package enum AppleAdsDimension: String, Sendable, Hashable, CaseIterable {
    /// The click's or impression's UTC day when the record has one, else the day the app
    /// obtained the token.
    case date
    case appID = "app_id"
    case orgID = "org_id"
    case campaignID = "campaign_id"
    case adGroupID = "ad_group_id"
    case keywordID = "keyword_id"
    case adID = "ad_id"
    case countryOrRegion = "country_or_region"
    case claimType = "claim_type"
    case supplyPlacement = "supply_placement"

    package var column: String { rawValue }

    var isText: Bool {
        switch self {
        case .date, .countryOrRegion, .claimType, .supplyPlacement: true
        case .appID, .orgID, .campaignID, .adGroupID, .keywordID, .adID: false
        }
    }

    /// Parses `date,app_id`, naming any unknown dimension.
    package static func list(_ text: String) throws(StoreError) -> [AppleAdsDimension] {
        try dimensionList(text, as: AppleAdsDimension.self)
    }
}

/// The counts of `apple-ads report`, each install (``AppleAdsReportQuery/installs``) counted in
/// exactly one of them.
package enum AppleAdsMetric: String, Sendable, Hashable, CaseIterable {
    /// `attribution: true`, `conversionType` `Download`.
    case installs
    /// `attribution: true`, `conversionType` `Redownload`.
    case redownloads
    /// `attribution: true`, `conversionType` `PreOrder` or `preorder` (any case).
    case preorders
    /// `attribution: true` with another (or no) `conversionType`: kept, never refused.
    case otherConversions = "other_conversions"
    /// `attribution: false`: not credited to Apple Ads, whatever the cause (no Apple Ads tap or
    /// view, a view-through, a campaign with age or gender targeting). Not "organic": the
    /// install may well have come from an ad.
    case notAttributed = "not_attributed"
    /// The developer-mode test record (``AppleAdsRecord/developerTestIDs``): in no other count.
    case test

    /// The SQL condition a record meets to count here.
    var condition: String {
        let test = Self.developerTest
        let known = Self.sqlList(AppleAdsRecord.knownConversionTypes)
        return switch self {
        case .installs: "attribution = 1 AND conversion_type = 'Download' AND NOT \(test)"
        case .redownloads: "attribution = 1 AND conversion_type = 'Redownload' AND NOT \(test)"
        case .preorders: "attribution = 1 AND \(Self.isPreorder) AND NOT \(test)"
        case .otherConversions:
            "attribution = 1 AND (conversion_type IS NULL OR (conversion_type NOT IN (\(known)) AND NOT \(Self.isPreorder))) AND NOT \(test)"
        case .notAttributed: "attribution = 0"
        case .test: "attribution = 1 AND \(test)"
        }
    }

    /// `values` as an SQL list of text literals (documented values, ours: no quote in them).
    static func sqlList(_ values: [String]) -> String {
        values.map { "'\($0)'" }.joined(separator: ", ")
    }

    /// A pre-order's conversion type, in any case.
    static var isPreorder: String { "lower(conversion_type) = '\(AppleAdsRecord.preorder)'" }

    /// The developer-mode test record's ids, true or false (never NULL: a missing id is 0).
    static var developerTest: String {
        let ids = AppleAdsRecord.developerTestIDs
        return
            "(coalesce(org_id, 0) = \(ids.org) AND coalesce(campaign_id, 0) = \(ids.campaign) AND coalesce(ad_group_id, 0) = \(ids.adGroup) AND coalesce(ad_id, 0) = \(ids.ad))"
    }
}

/// What `apple-ads report` sums.
package struct AppleAdsReportQuery: Sendable, Hashable {
    package var from: UTCDay?
    package var to: UTCDay?
    package var dimensions: [AppleAdsDimension]

    package init(from: UTCDay?, to: UTCDay?, by dimensions: [AppleAdsDimension]) {
        self.from = from
        self.to = to
        self.dimensions = dimensions
    }

    /// The report's statement: the groups (sorted as SQLite sorts them: NULL first, text by its
    /// bytes), then one sum per metric. `date` is `YYYY-MM-DD` text on both engines.
    ///
    /// It counts installs, not tokens: the tokens of one app and `install_id` (a new one each
    /// time the user changes their tracking permission) are one install, represented by its
    /// first attributed record, else its first record (``installs``); a token without an
    /// install id is an install of its own.
    var statement: SQLQuery {
        var conditions: [SQLQuery] = ["install_rank = 1"]
        if let from { conditions.append("date >= \(from.description)") }
        if let to { conditions.append("date <= \(to.description)") }
        let select = dimensions.map { SQLQuery(raw: $0.column) }
        let sums = AppleAdsMetric.allCases.map { metric -> SQLQuery in
            "CAST(SUM(CASE WHEN \(raw: metric.condition) THEN 1 ELSE 0 END) AS BIGINT)"
        }
        var sql: SQLQuery = "SELECT \(list: select + sums) FROM (\(Self.installs)) AS installs"
        sql = "\(sql) WHERE \(list: conditions, separator: " AND ")"
        if !dimensions.isEmpty {
            let positions = dimensions.indices.map { String($0 + 1) }.joined(separator: ", ")
            let order = dimensions.map { dimension -> SQLQuery in
                dimension.isText
                    ? "\(SQLQuery.bytewise(dimension.column)) NULLS FIRST" : "\(raw: dimension.column) NULLS FIRST"
            }
            sql = "\(sql) GROUP BY \(raw: positions) ORDER BY \(list: order)"
        }
        return sql
    }
}

extension AppleAdsReportQuery {
    /// Every attribution record with `install_rank`, 1 for the one that stands for its install.
    static let installs: SQLQuery = """
        SELECT a.*, ROW_NUMBER() OVER (
            PARTITION BY a.app_id, COALESCE('i' || t.install_id, 't' || CAST(a.token_id AS TEXT))
            ORDER BY a.attribution DESC, a.token_id
        ) AS install_rank
        FROM apple_ads_attributions a JOIN apple_ads_tokens t ON t.id = a.token_id
        """
}

/// One row of `apple-ads report`.
package struct AppleAdsReportRow: Sendable, Hashable {
    package var dimensions: [DimensionValue]
    package var counts: [AppleAdsMetric: Int]

    package init(dimensions: [DimensionValue], counts: [AppleAdsMetric: Int]) {
        self.dimensions = dimensions
        self.counts = counts
    }
}

/// `apple-ads report`: the exchanged tokens' attribution records, counted over a period.
package struct AppleAdsReport: Sendable, Hashable {
    package var dimensions: [AppleAdsDimension]
    package var rows: [AppleAdsReportRow]

    package init(dimensions: [AppleAdsDimension], rows: [AppleAdsReportRow]) {
        self.dimensions = dimensions
        self.rows = rows
    }

    /// Builds the rows from the engine's result rows (the groups, then one sum per metric; a
    /// sum over no rows is nil, and such a row is left out).
    static func assemble(_ query: AppleAdsReportQuery, _ rows: [([DimensionValue], [Int64?])]) -> AppleAdsReport {
        var result: [AppleAdsReportRow] = []
        for (key, sums) in rows {
            guard sums.first.flatMap({ $0 }) != nil else { continue }
            var counts: [AppleAdsMetric: Int] = [:]
            for (index, metric) in AppleAdsMetric.allCases.enumerated() { counts[metric] = Int(sums[index] ?? 0) }
            result.append(AppleAdsReportRow(dimensions: key, counts: counts))
        }
        return AppleAdsReport(dimensions: query.dimensions, rows: result)
    }
}

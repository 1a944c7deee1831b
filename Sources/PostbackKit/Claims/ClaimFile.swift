/// The day a network's claimed numbers are counted by: the install's (the default, as
/// `report --date-basis install` counts postbacks) or the postback's.
package enum ClaimDateBasis: String, Sendable, Hashable, CaseIterable {
    case install
    case postback
}

/// One row of a claims file (`postbackd claims add`): what `adNetworkID` says it delivered on
/// `date` (of ``dateBasis``), for the app, campaign and country when the row names them.
///
/// A row is keyed by its date, basis and dimensions (``key``): adding a row whose key is stored
/// replaces it (a corrected export).
package struct ClaimRow: Sendable, Hashable {
    package var date: UTCDay
    package var dateBasis: ClaimDateBasis
    package var adNetworkID: String
    package var appID: Int64?
    /// The campaign name, as the campaign mappings name it (`postbackd campaigns add`).
    package var campaign: String?
    /// ISO 3166 alpha-2, as postbacks carry it.
    package var countryCode: String?
    /// The installs the network claims.
    package var installs: Int64
    /// Of them or beside them, as the network counts: re-downloads, when it says.
    package var redownloads: Int64?
    /// Conversions (postbacks with a value, or events, as the network counts), when it says.
    package var conversions: Int64?
    /// Whether the network's figures include values it modeled (not only what Apple signed).
    package var modeled: Bool
    /// Where the row was read: the file, and its line.
    package var source: String
    package var line: Int

    package init(
        date: UTCDay,
        dateBasis: ClaimDateBasis = .install,
        adNetworkID: String,
        appID: Int64? = nil,
        campaign: String? = nil,
        countryCode: String? = nil,
        installs: Int64,
        redownloads: Int64? = nil,
        conversions: Int64? = nil,
        modeled: Bool = false,
        source: String = "",
        line: Int = 0
    ) {
        self.date = date
        self.dateBasis = dateBasis
        self.adNetworkID = adNetworkID
        self.appID = appID
        self.campaign = campaign
        self.countryCode = countryCode
        self.installs = installs
        self.redownloads = redownloads
        self.conversions = conversions
        self.modeled = modeled
        self.source = source
        self.line = line
    }

    /// The date, basis and dimensions that identify the row.
    package var key: [String] {
        [
            date.description, dateBasis.rawValue, adNetworkID, appID.map(String.init) ?? "", campaign ?? "",
            countryCode ?? "",
        ]
    }

    /// `source:line`.
    package var place: String { "\(source):\(line)" }

    /// The columns of postbackd's own claims file, in the order `claims list` writes them.
    package static let columns = [
        "date", "date_basis", "ad_network_id", "app_id", "campaign", "country_code", "installs", "redownloads",
        "conversions", "modeled",
    ]
}

/// The networks' own exports `claims add` reads as they are, known by the column of their
/// installs; each header name maps to a column of postbackd's claims file, and the export's
/// other columns are left aside.
package enum ClaimExport: String, Sendable, CaseIterable {
    /// postbackd's own file (``ClaimRow/columns``).
    case postbackd
    /// A Google Ads API report (GAQL): `segments.date`, `campaign.name`,
    /// `metrics.sk_ad_network_installs`, `metrics.sk_ad_network_total_conversions`.
    case googleAds = "google-ads"
    /// Meta's Insights API: `date_start`, `campaign_name`, `total_postbacks`, `country`.
    case meta
    /// TikTok's reporting API: `stat_time_day`, `campaign_name`, `skan_app_install`.
    case tiktok
    /// An Apple Ads report: `date`, `campaignName`, `totalInstalls`, `adamId`, `countryOrRegion`.
    case appleAds = "apple-ads"

    /// The export's names of postbackd's columns.
    var aliases: [String: String] {
        switch self {
        case .postbackd: [:]
        case .googleAds:
            [
                "segments.date": "date", "campaign.name": "campaign", "metrics.sk_ad_network_installs": "installs",
                "metrics.sk_ad_network_total_conversions": "conversions",
            ]
        case .meta:
            [
                "date_start": "date", "campaign_name": "campaign", "total_postbacks": "installs",
                "country": "country_code",
            ]
        case .tiktok: ["stat_time_day": "date", "campaign_name": "campaign", "skan_app_install": "installs"]
        case .appleAds:
            [
                "date": "date", "campaignName": "campaign", "totalInstalls": "installs", "adamId": "app_id",
                "countryOrRegion": "country_code",
            ]
        }
    }

    /// The export a header is, by the name of its installs column (postbackd's own when none).
    static func of(_ header: [String]) -> ClaimExport {
        for export in [ClaimExport.googleAds, .meta, .tiktok, .appleAds]
        where export.aliases.contains(where: { $0.value == "installs" && header.contains($0.key) }) {
            return export
        }
        return .postbackd
    }
}

/// Claims files: CSV with a header, postbackd's own shape (``ClaimRow/columns``) or a network's
/// export (``ClaimExport``), read and checked as spend files are (``CostFile``): every problem
/// named `FILE:LINE: column: what`, and a file with any problem gives no row.
package enum ClaimFile {
    /// What a file does not say, from `claims add`'s options: used where the file has no such
    /// column or leaves its cell empty.
    package struct Defaults: Sendable, Hashable {
        package var adNetworkID: String?
        package var appID: Int64?
        package var dateBasis: ClaimDateBasis?
        package var modeled: Bool?
        /// The network of an Apple Ads report that names none (Apple Ads' own id).
        package var appleAdsNetworkID: String?

        package init(
            adNetworkID: String? = nil,
            appID: Int64? = nil,
            dateBasis: ClaimDateBasis? = nil,
            modeled: Bool? = nil,
            appleAdsNetworkID: String? = nil
        ) {
            self.adNetworkID = adNetworkID
            self.appID = appID
            self.dateBasis = dateBasis
            self.modeled = modeled
            self.appleAdsNetworkID = appleAdsNetworkID
        }
    }

    /// The largest count of one row: claims sum well within 64 bits.
    static let maximumCount: Int64 = 1_000_000_000_000

    /// Reads and checks a claims file (`-`: standard input).
    package static func read(_ path: String, defaults: Defaults) -> Result<[ClaimRow], FileProblemsError> {
        CostFile.read(path, what: "a claims file") { parse($0, source: $1, defaults: defaults) }
    }

    /// Parses a claims file's bytes; `source` names it. Returns the rows and a problem for each
    /// cell that cannot be read, and for each row whose key an earlier row has.
    package static func parse(
        _ bytes: [UInt8],
        source: String,
        defaults: Defaults
    ) -> (rows: [ClaimRow], problems: [String]) {
        var rows: [ClaimRow] = []
        var firstLine: [[String]: Int] = [:]
        var export = ClaimExport.postbackd
        let problems = CostFile.parseTable(
            bytes,
            source: source,
            known: ClaimRow.columns,
            required: ["date", "installs"] + (defaults.adNetworkID == nil ? ["ad_network_id"] : []),
            shape: { header in
                export = ClaimExport.of(header)
                guard export != .postbackd else { return nil }
                let named =
                    export == .appleAds ? defaults.adNetworkID ?? defaults.appleAdsNetworkID : defaults.adNetworkID
                let network = export.aliases.values.contains("ad_network_id") || named != nil
                return TableShape(
                    aliases: export.aliases,
                    ignoresUnknown: true,
                    required: ["date", "installs"] + (network ? [] : ["ad_network_id"])
                )
            },
            row: { cells, line, problem in
                // TikTok's days are `2026-11-20 00:00:00`.
                var dayText = cells["date"]
                if export == .tiktok, let text = dayText, text.hasSuffix(" 00:00:00") {
                    dayText = String(text.dropLast(9))
                }
                let date = CostFile.day(dayText, problem)
                var network: String?
                if let text = cells["ad_network_id"], !text.isEmpty {
                    network = CostFile.networkID(text, problem)
                } else if let named = defaults.adNetworkID ?? (export == .appleAds ? defaults.appleAdsNetworkID : nil) {
                    network = named
                } else {
                    problem("ad_network_id", "empty; give the network's id in the file or with --ad-network-id")
                }
                let appID = CostFile.appID(cells["app_id"], problem) ?? defaults.appID
                let campaign = CostFile.campaign(cells["campaign"], problem)
                let country = CostFile.countryCode(cells["country_code"], problem)
                let installs = count(cells["installs"], column: "installs", required: true, problem)
                let redownloads = count(cells["redownloads"], column: "redownloads", required: false, problem)
                let conversions = count(cells["conversions"], column: "conversions", required: false, problem)
                var basis = defaults.dateBasis ?? .install
                if let text = cells["date_basis"], !text.isEmpty {
                    if let parsed = ClaimDateBasis(rawValue: text) {
                        basis = parsed
                    } else {
                        problem("date_basis", "expected install or postback, found \"\(text.prefix(64))\"")
                    }
                }
                var modeled = defaults.modeled ?? false
                if let text = cells["modeled"], !text.isEmpty {
                    switch text {
                    case "true", "1": modeled = true
                    case "false", "0": modeled = false
                    default: problem("modeled", "expected true or false, found \"\(text.prefix(64))\"")
                    }
                }
                guard let date, let network, let installs = installs ?? nil else { return }
                let row = ClaimRow(
                    date: date,
                    dateBasis: basis,
                    adNetworkID: network,
                    appID: appID,
                    campaign: campaign,
                    countryCode: country,
                    installs: installs,
                    redownloads: redownloads ?? nil,
                    conversions: conversions ?? nil,
                    modeled: modeled,
                    source: source,
                    line: line
                )
                if let earlier = firstLine[row.key] {
                    problem(
                        "key",
                        "the same date, date_basis, ad_network_id, app_id, campaign and country_code as line \(earlier); give each once (export by campaign and day, not finer)"
                    )
                    return
                }
                firstLine[row.key] = line
                rows.append(row)
            }
        )
        return (problems.isEmpty ? rows : [], problems)
    }

    /// A whole count, 0 or more: nil when the cell is empty and may be (`.some(nil)`), or when
    /// it cannot be read (nil, with a problem).
    private static func count(
        _ text: String?,
        column: String,
        required: Bool,
        _ problem: (String, String) -> Void
    ) -> Int64?? {
        let text = text ?? ""
        if text.isEmpty && !required { return .some(nil) }
        guard !text.isEmpty, text.utf8.count <= 13, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int64(text), value <= maximumCount
        else {
            problem(
                column,
                "expected a whole number, 0 or more (no sign, point or separator), found \"\(text.prefix(64))\""
            )
            return nil
        }
        return .some(value)
    }
}

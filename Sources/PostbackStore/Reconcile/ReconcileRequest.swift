import PostbackKit

/// What `postbackd reconcile` groups its rows by.
package enum ReconcileDimension: String, Sendable, Hashable, CaseIterable {
    /// The UTC day the postback was first received on any channel.
    case date
    case adNetworkID = "ad_network_id"
    case appID = "app_id"
    /// `skan` or `aak`.
    case kind
    case postbackSequenceIndex = "postback_sequence_index"
    /// The forwarding channel: that of the postback's first forward (none for a copy alone).
    case channel
    /// The campaign its network's mapping gives it (`postbackd campaigns add`), by install date
    /// as reports map it; empty when unmapped.
    case campaign

    /// The dimensions of `text`, comma-separated, each once.
    static func list(_ text: String) throws(ReportRequestError) -> [ReconcileDimension] {
        var dimensions: [ReconcileDimension] = []
        for part in text.split(separator: ",") {
            let name = part.withoutSurroundingSpaces
            guard let dimension = ReconcileDimension(rawValue: name) else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "by",
                    reason: "unknown dimension \"\(name.prefix(64))\"; known: "
                        + allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            guard !dimensions.contains(dimension) else {
                throw ReportRequestError(.invalidValue, option: "by", reason: "\(name) given twice")
            }
            dimensions.append(dimension)
        }
        return dimensions
    }
}

/// A reconciliation as asked for, by `postbackd reconcile`'s options or `GET /api/v1/reconcile`'s
/// query parameters (``ReportRequest/Options``: `from`, `to`, `by`, `as_of`, `grace_days`,
/// `app_id`, `ad_network_id`), parsed and checked in one place.
package struct ReconcileRequest: Sendable, Hashable {
    /// First and last day the postbacks were first received (UTC), inclusive.
    package var from: UTCDay?
    package var to: UTCDay?
    package var dimensions: [ReconcileDimension]
    /// When an unmatched postback is judged: one first received more than ``graceDays`` before
    /// is missing its other side; a younger one is pending.
    package var asOf: UTCInstant
    package var graceDays: Int
    package var appIDs: [Int64] = []
    package var adNetworkIDs: [String] = []
    /// Read every day from the stored postbacks, not from `aggregate`'s rows (`reconcile
    /// --live`): no `aggregate` needed, and as slow as the period is large.
    package var live = false
    /// Whether unmatched postbacks are told apart as missing or pending: the day the grace
    /// period ends on is then read from the postbacks. The dashboard, which shows neither,
    /// reads `aggregate`'s rows alone (every unmatched postback pending).
    package var judgesUnmatched = true
    /// Whether what the forwarding channels sent that was quarantined is counted
    /// (`forward_quarantined`, read from the quarantine): the dashboard, which does not show
    /// it, spares the read (30 ms of a year of 1 M).
    package var countsQuarantined = true

    /// Apple retries a copy it could not deliver for up to 9 days: a day more, and a copy that
    /// has not come will not.
    package static let defaultGraceDays = 10
    /// The longest grace period: ten years.
    package static let maximumGraceDays = 3_650
    package static let defaultDimensions = "date,ad_network_id"

    package init(
        from: UTCDay? = nil,
        to: UTCDay? = nil,
        dimensions: [ReconcileDimension],
        asOf: UTCInstant,
        graceDays: Int = defaultGraceDays
    ) {
        self.from = from
        self.to = to
        self.dimensions = dimensions
        self.asOf = asOf
        self.graceDays = graceDays
    }

    /// Unmatched postbacks first received before this are missing their other side.
    package var cutoff: UTCInstant {
        UTCInstant(milliseconds: asOf.milliseconds - Int64(graceDays) * 86_400_000)
    }

    /// Parses and checks `options`; `now` is the default `as_of`.
    ///
    /// - Throws: ``ReportRequestError`` naming the option and what is wrong with it.
    package static func parse(
        _ options: ReportRequest.Options,
        now: UTCInstant = .now()
    ) throws(ReportRequestError) -> ReconcileRequest {
        // The period and the filters read as a report's do (the same refusals).
        var common = ReportRequest.Options()
        common.from = options.from
        common.to = options.to
        common.by = ""
        common.appIDs = options.appIDs
        common.adNetworkIDs = options.adNetworkIDs
        let query = try ReportRequest.parse(common).query
        let dimensions = try ReconcileDimension.list(options.by ?? defaultDimensions)
        var graceDays = defaultGraceDays
        if let text = options.graceDays {
            guard let days = Int(text.withoutSurroundingSpaces), (0...maximumGraceDays).contains(days) else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "grace-days",
                    reason: "\"\(text.prefix(64))\" is not a whole number of days from 0 to \(maximumGraceDays)"
                )
            }
            graceDays = days
        }
        let asOf = try ReportRequest.asOf(options.asOf) ?? now
        var request = ReconcileRequest(
            from: query.from,
            to: query.to,
            dimensions: dimensions,
            asOf: asOf,
            graceDays: graceDays
        )
        request.appIDs = query.appIDs
        request.adNetworkIDs = query.adNetworkIDs
        return request
    }
}

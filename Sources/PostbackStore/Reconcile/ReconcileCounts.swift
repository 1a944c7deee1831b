import PostbackKit

/// One group's counts in a reconciliation of the devices' copies with the networks' forwards.
/// See docs/auditing.md for what each one means.
package struct ReconcileCounts: Sendable, Hashable {
    /// Postbacks received on `device`.
    package var copies = 0
    /// Postbacks received on a forwarding channel (any but `device`), winning or not.
    package var forwardedWon = 0
    package var forwardedNonwon = 0
    /// Winning postbacks with a copy and a forward; of those, every unsigned value the same.
    package var matched = 0
    package var matchedIdentical = 0
    /// Matched postbacks whose first forward differs from their first copy, by how.
    package var fineHigher = 0
    package var fineLower = 0
    package var coarseHigher = 0
    package var coarseLower = 0
    /// The copy has a conversion value (fine or coarse) the forward lacks; and the reverse.
    package var valueDropped = 0
    package var valueAdded = 0
    package var countryDiffers = 0
    /// AdAttributionKit's `ad-interaction-type`.
    package var interactionDiffers = 0
    /// Unmatched winning postbacks first received before the cutoff, and younger ones.
    package var copyOnly = 0
    package var forwardOnly = 0
    package var pending = 0
    /// What a forwarding channel sent that was quarantined.
    package var forwardQuarantined = 0
    /// Postbacks of a shape Apple never sends, and postbacks received sooner after their
    /// campaign's start than their window allows.
    package var impossible = 0
    package var early = 0

    package init() {}

    /// The counts by their names in JSON and CSV, in order.
    package static var metrics: [(name: String, value: KeyPath<ReconcileCounts, Int>)] {
        [
            ("copies", \.copies), ("forwarded_won", \.forwardedWon), ("forwarded_nonwon", \.forwardedNonwon),
            ("matched", \.matched), ("matched_identical", \.matchedIdentical), ("fine_higher", \.fineHigher),
            ("fine_lower", \.fineLower), ("coarse_higher", \.coarseHigher), ("coarse_lower", \.coarseLower),
            ("value_dropped", \.valueDropped), ("value_added", \.valueAdded), ("country_differs", \.countryDiffers),
            ("interaction_differs", \.interactionDiffers), ("copy_only", \.copyOnly), ("forward_only", \.forwardOnly),
            ("pending", \.pending), ("forward_quarantined", \.forwardQuarantined), ("impossible", \.impossible),
            ("early", \.early),
        ]
    }

    /// The rates a person reads first, by their names in JSON and CSV; nil where the
    /// denominator is 0.
    package var rates: [(name: String, value: Double?)] {
        [("copy_coverage", copyCoverage), ("forward_coverage", forwardCoverage), ("values_changed", valuesChanged)]
    }

    /// Of the winning forwards, the share the device copied too.
    package var copyCoverage: Double? { ratio(matched, forwardedWon) }
    /// Of the copies, the share a network forwarded too.
    package var forwardCoverage: Double? { ratio(matched, copies) }
    /// Of the matched postbacks, the share whose forward changed an unsigned value.
    package var valuesChanged: Double? { ratio(matched - matchedIdentical, matched) }

    private func ratio(_ part: Int, _ whole: Int) -> Double? {
        whole == 0 ? nil : Double(part) / Double(whole)
    }

    /// Adds `other`'s counts.
    package mutating func add(_ other: ReconcileCounts) {
        copies += other.copies
        forwardedWon += other.forwardedWon
        forwardedNonwon += other.forwardedNonwon
        matched += other.matched
        matchedIdentical += other.matchedIdentical
        fineHigher += other.fineHigher
        fineLower += other.fineLower
        coarseHigher += other.coarseHigher
        coarseLower += other.coarseLower
        valueDropped += other.valueDropped
        valueAdded += other.valueAdded
        countryDiffers += other.countryDiffers
        interactionDiffers += other.interactionDiffers
        copyOnly += other.copyOnly
        forwardOnly += other.forwardOnly
        pending += other.pending
        forwardQuarantined += other.forwardQuarantined
        impossible += other.impossible
        early += other.early
    }
}

/// A group of a reconciliation: the values of its request's dimensions (nil: not grouped by it,
/// or none: no forwarding channel, no campaign).
package struct ReconcileKey: Sendable, Hashable, Comparable {
    package var date: UTCDay?
    package var adNetworkID: String?
    package var appID: Int64?
    package var kind: String?
    package var sequenceIndex: Int?
    package var channel: String?
    package var campaign: String?

    package init() {}

    /// The dimension's value as text (empty for none).
    package func text(_ dimension: ReconcileDimension) -> String {
        switch dimension {
        case .date: date?.description ?? ""
        case .adNetworkID: adNetworkID ?? ""
        case .appID: appID.map { String($0) } ?? ""
        case .kind: kind ?? ""
        case .postbackSequenceIndex: sequenceIndex.map { String($0) } ?? ""
        case .channel: channel ?? ""
        case .campaign: campaign ?? ""
        }
    }

    package static func < (lhs: ReconcileKey, rhs: ReconcileKey) -> Bool {
        func order<T: Comparable>(_ a: T?, _ b: T?) -> Bool? {
            switch (a, b) {
            case (nil, nil): return nil
            case (nil, _): return true
            case (_, nil): return false
            case (let a?, let b?): return a == b ? nil : a < b
            }
        }
        if let result = order(lhs.date, rhs.date) { return result }
        if let result = order(lhs.adNetworkID, rhs.adNetworkID) { return result }
        if let result = order(lhs.appID, rhs.appID) { return result }
        if let result = order(lhs.kind, rhs.kind) { return result }
        if let result = order(lhs.sequenceIndex, rhs.sequenceIndex) { return result }
        if let result = order(lhs.channel, rhs.channel) { return result }
        return order(lhs.campaign, rhs.campaign) ?? false
    }
}

/// A reconciliation: its request and one row of counts per group, in key order.
package struct Reconciliation: Sendable {
    package var request: ReconcileRequest
    package var rows: [(key: ReconcileKey, counts: ReconcileCounts)]

    /// Every row's counts summed.
    package var total: ReconcileCounts {
        rows.reduce(into: ReconcileCounts()) { $0.add($1.counts) }
    }
}

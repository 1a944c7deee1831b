import PostbackKit

/// Which days `postbackd aggregate` recomputes.
package enum DaySelection: Sendable, Hashable {
    /// Every day that has postbacks.
    case all
    /// `from` through `to`, inclusive (UTC days of `received_at`).
    case range(from: UTCDay, to: UTCDay)

    /// The first and last day; nil (unbounded) for ``all``.
    var bounds: (from: UTCDay?, to: UTCDay?) {
        switch self {
        case .all: (nil, nil)
        case .range(let from, let to): (from, to)
        }
    }

    /// The days of a range, in order; empty for ``all``, whose days the store knows.
    var days: [UTCDay] {
        guard case .range(let from, let to) = self, from <= to else { return [] }
        return (from.daysSinceEpoch...to.daysSinceEpoch).map(UTCDay.init(daysSinceEpoch:))
    }
}

/// What one `postbackd aggregate` did.
package struct AggregateSummary: Sendable, Hashable {
    /// The days recomputed.
    package var days: [UTCDay] = []
    /// Stored postbacks read.
    package var postbacks = 0
    /// `aggregate_daily` rows written.
    package var rows = 0
    /// Apps that have postbacks in those days but no model.
    var unmodelledApps: [Int64] = []
    /// Apps that have AdAttributionKit re-engagements in those days but no re-engagement model.
    var unmodelledReengagementApps: [Int64] = []
    package var seconds: Double = 0
    package var policy: RevenueEstimatePolicy = .midpoint

    /// For people.
    package var text: String {
        let span =
            days.isEmpty
            ? "no days" : days.count == 1 ? "\(days[0])" : "\(days.count) days, \(days[0]) to \(days[days.count - 1])"
        var line =
            "aggregated \(formatCount(postbacks)) postbacks over \(span) into \(formatCount(rows)) rows in \(formatSeconds(seconds)) (revenue estimate: \(policy.rawValue))"
        if !unmodelledApps.isEmpty {
            line +=
                "\nno conversion model for app\(unmodelledApps.count == 1 ? "" : "s") \(unmodelledApps.map(String.init).joined(separator: ", ")): their postbacks are counted as unmodelled (postbackd models add FILE)"
        }
        if !unmodelledReengagementApps.isEmpty {
            let apps = unmodelledReengagementApps.map(String.init).joined(separator: ", ")
            line +=
                "\nno re-engagement model for app\(unmodelledReengagementApps.count == 1 ? "" : "s") \(apps): their re-engagements are counted as unmodelled, never decoded with the install model (postbackd models add --conversion-type re-engagement FILE)"
        }
        return line
    }

    /// As one JSON object.
    package var json: String {
        var object = JSONObjectWriter()
        object.add("days", strings: days.map(\.description))
        object.add("postbacks", postbacks)
        object.add("rows", rows)
        object.add("unmodelled_apps", strings: unmodelledApps.map(String.init))
        object.add("unmodelled_reengagement_apps", strings: unmodelledReengagementApps.map(String.init))
        object.add("revenue_estimate", policy.rawValue)
        object.add("seconds", (seconds * 1000).rounded() / 1000)
        return object.text
    }
}

/// `postbackd aggregate`: recomputes the daily aggregate rows from the stored postbacks and
/// the current models.
///
/// Every metric's meaning (`installs`, `redownloads`, …) is in ``GroupMetrics``. A run replaces
/// the rows of its days in one transaction (on SQLite, one a quarter of days: see
/// `SQLiteStore.aggregate(_:policy:commitEvery:)`), so it is idempotent, a changed model plus a
/// re-run corrects history, and a reader never sees half a day. The grouping and decoding are the same
/// code for every engine (``DayAggregation``); each engine reads postbacks and writes rows its
/// own fastest way (``PostbackStorage/aggregate(_:policy:)``), and both run the same statements
/// for the rest (``AggregateSQL``).
package enum AggregateJob {
    package static func run(
        _ location: StoreLocation,
        _ selection: DaySelection,
        policy: RevenueEstimatePolicy
    ) async throws -> AggregateSummary {
        try await PostbackStores.with(location) { store in
            // reconcile's counts beside the engine's aggregate (each holds a core), through a
            // read-only store of their own (SQLite's writer runs one transaction at a time),
            // written after.
            async let counted = PostbackStores.with(location, access: .readOnly) { reader in
                try await reader.countReconciliation(selection)
            }
            let summary = try await store.aggregate(selection, policy: policy)
            try await store.writeReconciliation(try await counted)
            return summary
        }
    }
}

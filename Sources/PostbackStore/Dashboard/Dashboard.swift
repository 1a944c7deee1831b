import PostbackKit

/// The numbers of the dashboard (`GET /dashboard`, `report --format html`) and of
/// `GET /api/v1/summary`, read from the aggregate tables in a few grouped queries.
package struct Dashboard: Sendable {
    /// The filters: period, basis, apps and networks (its dimensions unused).
    package var query: ReportQuery
    /// Installs, redownloads and revenue per day (received or install, by the basis) and network.
    var byDayAndNetwork: Report
    /// The same per day: revenue per currency, null rate.
    var byDay: Report
    /// Per crowd-anonymity tier.
    var byTier: Report
    /// One row of totals (none when nothing matched).
    package var totals: Report
    /// The fine-value histogram over the period and the intake per day received.
    package var series: DashboardSeries
    /// Apple Ads' AdServices installs per day, for the apps of the query (all when none), when
    /// the basis is the day received and the networks filter lets Apple Ads through.
    package var appleAds: [UTCDay: (installs: Int, redownloads: Int)]?
    /// Spend and ROAS, when the period has cost rows (`postbackd costs add`).
    var spend: DashboardSpend?
    /// The staleness warning of the aggregates, if any.
    /// Each network's forwards against the devices' copies, by day (``networks(_:_:)``); nil
    /// by install date.
    package var networks: Reconciliation?
    /// By install date: the cohorts of the period's last ``cohortDays`` install dates
    /// (`report --cohorts`), judged as of ``generatedAt``.
    var cohorts: Report?
    package var warning: String?
    var generatedAt: UTCInstant

    /// The days shown when no `from` is given.
    static let defaultDays = 30
    /// The install dates the cohort view shows, the last of the period: a postback 2 comes up
    /// to 41 days after its install, so older cohorts no longer change but slowly.
    static let cohortDays: Int64 = 35

    /// The filters a dashboard takes: `from`, `to`, `date_basis`, `app_id`, `ad_network_id`.
    /// Parsed as the report options are, with the same refusals.
    package static func query(_ options: ReportRequest.Options) throws(ReportRequestError) -> ReportQuery {
        var options = options
        options.by = ""
        options.events = false
        options.withAppleAds = false
        return try ReportRequest.parse(options).query
    }

    /// Reads the dashboard's numbers for `query`'s filters.
    ///
    /// Without `from`, the period is the ``defaultDays`` days up to `to`, or up to the last day
    /// with postbacks.
    ///
    /// `summaryOnly`: only what ``summaryJSON`` needs (the totals and the intake): one ungrouped
    /// sum instead of the charts' report, no fine values.
    package static func read(
        _ store: any PostbackStorage,
        _ query: ReportQuery,
        summaryOnly: Bool = false
    ) async throws -> Dashboard {
        var query = query
        let dayDimension: AggregateDimension = query.dateBasis == .install ? .installDate : .date
        if query.from == nil {
            var last = query.to
            if last == nil { last = try await store.lastAggregatedDay(query.dateBasis) }
            if let last {
                query.to = last
                query.from = UTCDay(daysSinceEpoch: last.daysSinceEpoch - Int64(defaultDays - 1))
            }
        }
        // The counts by day and network, by tier, and revenue by day (the charts show no
        // revenue by network or tier), from the dashboard's tables; the totals are their sums.
        // Two groupings summed in SQL, not one by day, network and tier folded here: the year
        // by install date read 14,500 rows (day × network × tier) to show 2,900 and 4.
        var grouped = query
        grouped.dimensions = summaryOnly ? [] : [dayDimension, .adNetworkID]
        grouped.events = false
        grouped.countsOnly = !summaryOnly
        var tiers = grouped
        tiers.dimensions = [.crowdAnonymityTier]
        // With cost rows in the period, the spend panel wants revenue by network and day: read
        // by both once, the days summed from it (exactly, as the SQL sums).
        let withSpend = summaryOnly ? false : try await store.hasCosts(query)
        var daily = grouped
        daily.dimensions = withSpend ? [dayDimension, .adNetworkID] : [dayDimension]
        daily.countsOnly = false
        // The counts, the revenue by day and the series are read at once, each in a read
        // transaction of its own as before (on PostgreSQL, each on a connection of the pool; on
        // SQLite's pool of readers too): the year by install date waited 166 ms for its
        // statements one after another, 65 ms for the longest.
        let (countsQuery, tiersQuery, dailyQuery, seriesQuery) = (grouped, tiers, daily, query)
        async let detailedRead = store.report(countsQuery)
        async let tiersRead = summaryOnly ? nil : store.report(tiersQuery)
        async let dailyRead = summaryOnly ? nil : store.report(dailyQuery)
        async let seriesRead = store.dashboardSeries(seriesQuery, fineValues: !summaryOnly)
        // The networks panel: reconcile's rows by day and network (days received: none by install date).
        let (networksQuery, withNetworks) = (query, !summaryOnly && query.dateBasis == .received)
        async let networksRead = withNetworks ? Self.networks(store, networksQuery) : nil
        let detailed = try await detailedRead
        let empty = Report(dimensions: [], events: false, rows: [], currencies: [], policy: detailed.policy)
        let byTier = try await tiersRead ?? empty
        let read = try await dailyRead ?? empty
        let series = try await seriesRead
        let byDay = withSpend ? read.folded(keeping: [0]) : read
        var appleAds: [UTCDay: (installs: Int, redownloads: Int)]?
        if query.dateBasis == .received,
            query.adNetworkIDs.isEmpty || query.adNetworkIDs.contains(ApplePlacement.adNetworkID)
        {
            let records = try await store.appleAdsReport(
                AppleAdsReportQuery(from: query.from, to: query.to, by: [.date, .appID])
            )
            var days: [UTCDay: (installs: Int, redownloads: Int)] = [:]
            for row in records.rows {
                guard row.dimensions.count == 2, case .text(let text) = row.dimensions[0], let day = UTCDay(text)
                else { continue }
                if !query.appIDs.isEmpty {
                    guard case .integer(let app) = row.dimensions[1], query.appIDs.contains(app) else { continue }
                }
                days[day, default: (0, 0)].installs += row.counts[.installs] ?? 0
                days[day, default: (0, 0)].redownloads += row.counts[.redownloads] ?? 0
            }
            appleAds = days
        }
        let spend = withSpend ? try await DashboardSpend.read(store, query, byDayAndNetwork: read) : nil
        let generatedAt = UTCInstant.now()
        var cohorts: Report?
        if !summaryOnly, query.dateBasis == .install, let last = query.to {
            var recent = query
            recent.dimensions = [.installDate]
            recent.events = false
            recent.countsOnly = false
            // Cohorts carry no spend and convert no currency (`report --cohorts` refuses one).
            recent.currency = nil
            recent.from = max(query.from ?? last, UTCDay(daysSinceEpoch: last.daysSinceEpoch - (cohortDays - 1)))
            var request = ReportRequest(query: recent, withAppleAds: false, asOf: generatedAt)
            request.cohorts = true
            cohorts = try await request.readWithNotes(store).report
        }
        return Dashboard(
            query: query,
            byDayAndNetwork: summaryOnly ? empty : detailed,
            byDay: byDay,
            // Folded only for its shares (a report of counts alone leaves them out).
            byTier: summaryOnly ? empty : byTier.folded(keeping: [0]),
            totals: summaryOnly ? detailed : byDay.folded(keeping: []),
            series: series,
            appleAds: appleAds,
            spend: spend,
            networks: try await networksRead,
            cohorts: cohorts,
            warning: [try await store.stalenessWarning(), spend?.warning].compactMap { $0 }.joined(separator: "\n")
                .nonEmpty,
            generatedAt: generatedAt
        )
    }

    /// The networks panel's numbers: `reconcile` by day and network over the period, from
    /// `aggregate`'s rows alone.
    static func networks(_ store: any PostbackStorage, _ query: ReportQuery) async throws -> Reconciliation {
        var request = ReconcileRequest(from: query.from, to: query.to, dimensions: [.date, .adNetworkID], asOf: .now())
        request.appIDs = query.appIDs
        request.adNetworkIDs = query.adNetworkIDs
        request.judgesUnmatched = false
        request.countsQuarantined = false
        return try await request.read(store)
    }

    /// The totals row (zeros when nothing matched).
    package var total: ReportRow {
        totals.rows.first ?? ReportRow(dimensions: [])
    }

    /// Quarantined, duplicate and conflicting copies over the period.
    var intakeTotals: (quarantined: Int, duplicates: Int, conflicts: Int) {
        series.intake.reduce(into: (0, 0, 0)) { sums, day in
            sums.0 += day.quarantined
            sums.1 += day.duplicates
            sums.2 += day.conflicts
        }
    }

    /// `GET /api/v1/summary`: the headline numbers as one JSON object.
    package var summaryJSON: String {
        var object = JSONObjectWriter()
        object.add("from", query.from?.description)
        object.add("to", query.to?.description)
        object.add("date_basis", query.dateBasis.rawValue)
        if !query.appIDs.isEmpty {
            object.addRaw("app_id", json: "[" + query.appIDs.map(String.init).joined(separator: ",") + "]")
        }
        if !query.adNetworkIDs.isEmpty { object.add("ad_network_id", strings: query.adNetworkIDs) }
        let row = total
        for metric in ReportMetric.shown { object.add(metric.rawValue, row.counts[metric] ?? 0) }
        object.addRaw(
            "null_rate",
            json: row.nullRate.map { formatJSONNumber(($0 * 10_000).rounded() / 10_000) } ?? "null"
        )
        object.addRaw("revenue", json: revenueObjectJSON(row.revenue))
        object.addRaw("reengagement_revenue", json: revenueObjectJSON(row.reengagementRevenue))
        object.addRaw("revenue_modeled", json: revenueObjectJSON(row.modeledRevenue))
        object.add("modeled_basis", row.modeledBasis)
        let intake = intakeTotals
        object.add("quarantined", intake.quarantined)
        object.add("duplicates", intake.duplicates)
        object.add("conflicts", intake.conflicts)
        if let appleAds {
            object.add("apple_ads_installs", appleAds.values.reduce(0) { $0 + $1.installs })
            object.add("apple_ads_redownloads", appleAds.values.reduce(0) { $0 + $1.redownloads })
        }
        object.add("warning", warning)
        return object.text
    }
}

/// The dashboard's spend panel: revenue and spend by network, by network and campaign (when
/// campaign mappings exist), and by day.
struct DashboardSpend: Sendable {
    var byNetwork: Report
    var byCampaign: Report?
    var byDay: Report
    /// Days without an exchange rate (`currency`), as ``ReportRequest/read(_:)`` names them.
    var warning: String?

    /// The panel from the revenue by day and network (`byDayAndNetwork`, in that order): spend
    /// added and, with a currency, the amounts converted day by day, as ``ReportRequest/read(_:)``
    /// does; then summed by network and by day. Nil when the period has no cost rows for the
    /// filters.
    static func read(
        _ store: any PostbackStorage,
        _ query: ReportQuery,
        byDayAndNetwork: Report
    ) async throws -> DashboardSpend? {
        let request = ReportRequest(query: query, withAppleAds: false)
        var working = query
        working.dimensions = byDayAndNetwork.dimensions
        working.events = false
        working.countsOnly = false
        var report = byDayAndNetwork
        var notes = try await request.addSpend(to: &report, read: working, store)
        guard report.showsSpend else { return nil }
        var byCampaign: Report?
        if try await !store.campaignMappings().isEmpty {
            var campaigns = request
            campaigns.query.dimensions = [.adNetworkID, .campaign]
            campaigns.query.events = false
            let (read, more) = try await campaigns.readWithNotes(store)
            byCampaign = read
            notes += more.filter { !notes.contains($0) }
        }
        return DashboardSpend(
            byNetwork: report.folded(keeping: [1]),
            byCampaign: byCampaign,
            byDay: report.folded(keeping: [0]),
            warning: notes.isEmpty ? nil : notes.joined(separator: "\n")
        )
    }
}

extension String {
    /// Nil when empty.
    var nonEmpty: String? { isEmpty ? nil : self }
}

/// `postbackd report`: sums the aggregate rows for a request (``ReportRequest``), or reads the
/// dashboard page (`--format html`), from a store opened read-only for the call. `serve`'s
/// report API and dashboard read the same through their own store (``ReportRequest/read(_:)``,
/// ``Dashboard/read(_:_:summaryOnly:)``).
package enum ReportJob {
    /// The report and, when the aggregates may be out of date, a warning.
    package static func run(
        _ location: StoreLocation,
        _ request: ReportRequest
    ) async throws -> (report: Report, warning: String?) {
        try await PostbackStores.with(location, access: .readOnly) { store in try await request.read(store) }
    }

    /// The report of `query` alone (no Apple Ads beside it), and the warning.
    package static func run(
        _ location: StoreLocation,
        _ query: ReportQuery
    ) async throws -> (report: Report, warning: String?) {
        try await run(location, ReportRequest(query: query, withAppleAds: false))
    }

    /// The dashboard for `query`: what `report --format html` writes as one page.
    package static func dashboard(_ location: StoreLocation, _ query: ReportQuery) async throws -> Dashboard {
        try await PostbackStores.with(location, access: .readOnly) { store in try await Dashboard.read(store, query) }
    }
}

/// `postbackd apple-ads status` and `apple-ads report`: what the exchange holds, read from a
/// store opened read-only for the call.
package enum AppleAdsReportJob {
    /// Tokens by state, and what waits.
    package static func status(_ location: StoreLocation) async throws -> AppleAdsStatus {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.appleAdsStatus() }
    }

    /// The stored attribution records, counted.
    package static func report(_ location: StoreLocation, _ query: AppleAdsReportQuery) async throws -> AppleAdsReport {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.appleAdsReport(query) }
    }
}

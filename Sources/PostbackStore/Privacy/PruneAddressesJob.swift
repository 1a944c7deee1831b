import PostbackKit

/// `postbackd prune-addresses`: clears the client addresses of rows received more than some
/// days ago.
package enum PruneAddressesJob {
    /// Clears the client addresses of rows received before `now` less `days` days; returns that
    /// cutoff and what was cleared.
    package static func run(
        _ location: StoreLocation,
        olderThan days: Int,
        now: UTCInstant = .now()
    ) async throws -> (cutoff: UTCInstant, cleared: ClearedAddresses) {
        let cutoff = UTCInstant(milliseconds: now.milliseconds - Int64(days) * 86_400_000)
        let cleared = try await PostbackStores.with(location) { store in
            try await store.clearClientAddresses(before: cutoff)
        }
        return (cutoff, cleared)
    }
}

import PostbackKit

/// `postbackd apps`'s entry points: each opens the store, does its one thing, and closes it.
extension AppsJob {
    /// Registers `appID`, or updates the name and bundle identifier given of a registered app.
    ///
    /// - Throws: ``StoreError`` for an app id, name or bundle identifier that cannot be used, or
    ///   what opening or writing the store threw.
    package static func add(
        _ location: StoreLocation,
        appID: Int64,
        name: String?,
        bundleID: String?
    ) async throws -> AppAddOutcome {
        try await PostbackStores.with(location) { store in
            try await store.addApp(appID, name: name, bundleID: bundleID)
        }
    }

    /// The registered apps and the policy.
    package static func list(_ location: StoreLocation) async throws -> (apps: [StoredApp], policy: AppsPolicy) {
        try await PostbackStores.with(location, access: .readOnly) { store in
            (try await store.apps(), try await store.appsPolicy())
        }
    }

    /// Unregisters `appID`; false when it was not registered.
    package static func remove(_ location: StoreLocation, appID: Int64) async throws -> Bool {
        try await PostbackStores.with(location) { store in try await store.removeApp(appID) }
    }

    /// The app ids of stored postbacks that are not registered, and the policy.
    package static func unclaimed(_ location: StoreLocation) async throws -> (apps: [UnclaimedApp], policy: AppsPolicy)
    {
        try await PostbackStores.with(location, access: .readOnly) { store in
            (try await store.unclaimedApps(), try await store.appsPolicy())
        }
    }

    /// The policy.
    package static func policy(_ location: StoreLocation) async throws -> AppsPolicy {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.appsPolicy() }
    }

    /// Sets the policy.
    package static func setPolicy(_ location: StoreLocation, _ policy: AppsPolicy) async throws {
        try await PostbackStores.with(location) { store in try await store.setAppsPolicy(policy) }
    }
}

import PostbackKit

/// `postbackd keys`: access keys for `serve`'s routes, each opening a set of apps to a set of
/// scopes. The secret is printed once by `add` and never stored: only its SHA-256 is.
package enum AccessKeysJob {
    package static func add(
        _ location: StoreLocation,
        name: String,
        apps: [Int64]?,
        scopes: [AccessScope],
        channels: [PostbackChannel]? = nil
    ) async throws -> (key: StoredAccessKey, secret: String) {
        try await PostbackStores.with(location) { store in
            try await store.addAccessKey(name: name, apps: apps, scopes: scopes, channels: channels)
        }
    }

    package static func list(_ location: StoreLocation) async throws -> [StoredAccessKey] {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.accessKeys() }
    }

    package static func revoke(_ location: StoreLocation, name: String) async throws -> Bool {
        try await PostbackStores.with(location) { store in try await store.revokeAccessKey(name: name) }
    }

    /// `123,456`, or `all`.
    package static func appsText(_ apps: [Int64]?) -> String {
        apps.map { $0.map(String.init).joined(separator: ",") } ?? "all"
    }

    /// `network-x,network-y`, `all` (every channel), or `–` for a key without scope `forwards`.
    package static func channelsText(_ key: StoredAccessKey) -> String {
        guard key.scopes.contains(.forwards) else { return "–" }
        return key.channels.map { $0.map(\.name).joined(separator: ",") } ?? "all"
    }

    /// An aligned table for people: never the secret, nor its hash.
    package static func table(_ keys: [StoredAccessKey]) -> String {
        guard !keys.isEmpty else { return "no access keys (postbackd keys add NAME --apps ID,…)\n" }
        let columns = [
            TableColumn("name", of: keys) { $0.name }, TableColumn("apps", of: keys) { appsText($0.apps) },
            TableColumn("scopes", of: keys) { $0.scopes.map(\.rawValue).joined(separator: ",") },
            TableColumn("channels", of: keys) { channelsText($0) },
            TableColumn("created", of: keys) { $0.createdAt },
            TableColumn("last used", of: keys) { $0.lastUsedAt ?? "never" },
            TableColumn("revoked", of: keys) { $0.revokedAt ?? "–" },
        ]
        return TableColumn.text(columns, rows: keys.count)
    }

    /// JSON Lines: `name`, `apps` (null: every app), `scopes`, `channels` (null: every
    /// channel), `created_at`, `last_used_at`, `revoked_at`.
    package static func json(_ keys: [StoredAccessKey]) -> String {
        JSONObjectWriter.lines(keys) { key, object in
            object.add("name", key.name)
            object.addRaw(
                "apps",
                json: key.apps.map { "[" + $0.map(String.init).joined(separator: ",") + "]" } ?? "null"
            )
            object.add("scopes", strings: key.scopes.map(\.rawValue))
            if let channels = key.channels {
                object.add("channels", strings: channels.map(\.name))
            } else {
                object.addRaw("channels", json: "null")
            }
            object.add("created_at", key.createdAt)
            object.add("last_used_at", key.lastUsedAt)
            object.add("revoked_at", key.revokedAt)
        }
    }
}

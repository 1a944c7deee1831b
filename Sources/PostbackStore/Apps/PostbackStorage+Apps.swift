import PostbackKit

extension PostbackStorage {
    /// Registers `appID`, or updates the name and bundle identifier given of a registered app.
    package func addApp(_ appID: Int64, name: String?, bundleID: String?) async throws -> AppAddOutcome {
        guard appID > 0 else { throw StoreError(.invalidValue, "\(appID) is not an App Store id (a positive number)") }
        for (option, value) in [("--name", name), ("--bundle-id", bundleID)] {
            if let value, !(1...255).contains(value.utf8.count) {
                throw StoreError(.invalidValue, "\(option): 1 to 255 bytes")
            }
        }
        let now = UTCInstant.now()
        return try await withSQL("register an app", .write) { sql in
            let existing = try await sql.rows("SELECT name, bundle_id FROM apps WHERE app_id = \(appID)").first
            guard let existing else {
                try await sql.execute(
                    "INSERT INTO apps (app_id, name, bundle_id, added_at) VALUES (\(appID), \(name), \(bundleID), \(now))"
                )
                return .added
            }
            let (oldName, oldBundle) = (try existing.optionalString(0), try existing.optionalString(1))
            let newName = name ?? oldName
            let newBundle = bundleID ?? oldBundle
            guard newName != oldName || newBundle != oldBundle else { return .unchanged }
            try await sql.execute(
                "UPDATE apps SET name = \(newName), bundle_id = \(newBundle) WHERE app_id = \(appID)"
            )
            return .updated
        }
    }

    /// Registers `appID` unless it is (`models add --bundle-id`), recording its bundle
    /// identifier when it had none.
    package func registerApp(_ appID: Int64, bundleID: String?) async throws {
        let now = UTCInstant.now()
        try await withSQL("register an app", .write) { sql in
            try await sql.execute(
                """
                INSERT INTO apps (app_id, bundle_id, added_at) VALUES (\(appID), \(bundleID), \(now))
                ON CONFLICT (app_id) DO UPDATE SET bundle_id = excluded.bundle_id WHERE apps.bundle_id IS NULL
                """
            )
        }
    }

    /// Unregisters `appID`; false when it was not registered.
    package func removeApp(_ appID: Int64) async throws -> Bool {
        try await withSQL("unregister an app", .write) { sql in
            try await !sql.rows("DELETE FROM apps WHERE app_id = \(appID) RETURNING 1").isEmpty
        }
    }

    package func apps() async throws -> [StoredApp] {
        try await withSQL("read the apps", .statement) { sql in
            try await sql.rows(
                "SELECT app_id, name, bundle_id, \(SQLQuery.instantText("added_at")) FROM apps ORDER BY app_id"
            ).map { row in
                StoredApp(
                    appID: try row.int64(0),
                    name: try row.optionalString(1),
                    bundleID: try row.optionalString(2),
                    addedAt: try row.string(3)
                )
            }
        }
    }

    /// The app ids of stored postbacks that are not registered, with their counts and when
    /// they were first and last received (one pass over `postbacks`).
    package func unclaimedApps() async throws -> [UnclaimedApp] {
        try await withSQL("read the unclaimed apps", .statement) { sql in
            try await sql.rows(
                """
                SELECT app_id, COUNT(*), \(SQLQuery.instantText("min(received_at)")), \(SQLQuery.instantText("max(received_at)"))
                FROM postbacks WHERE app_id NOT IN (SELECT app_id FROM apps)
                GROUP BY app_id ORDER BY app_id
                """
            ).map { row in
                UnclaimedApp(
                    appID: try row.int64(0),
                    postbacks: try row.int(1),
                    firstSeen: try row.string(2),
                    lastSeen: try row.string(3)
                )
            }
        }
    }

    /// The newest production postback received of each app on or after `day` (UTC), in
    /// milliseconds since 1970 (test-mode and development postbacks are someone testing): one range of the received-day index, so that `serve`'s metrics start from the
    /// store's truth after a restart without reading all of `postbacks`.
    package func newestPostbacks(since day: UTCDay) async throws -> [Int64: Int64] {
        try await withSQL("read the newest postback of each app", .statement) { sql in
            var newest: [Int64: Int64] = [:]
            for row in try await sql.rows(
                """
                SELECT app_id, \(SQLQuery.instantText("max(received_at)")) FROM postbacks
                WHERE \(SQLQuery.receivedDay) >= \(day) AND key_space = 'production' GROUP BY app_id
                """
            ) {
                if let instant = UTCInstant(iso8601: try row.string(1)) {
                    newest[try row.int64(0)] = instant.milliseconds
                }
            }
            return newest
        }
    }

    package func appsPolicy() async throws -> AppsPolicy {
        try await withSQL("read the apps policy", .statement) { sql in
            let value = try await sql.rows("SELECT value FROM settings WHERE name = \(AppsSQL.policyName)").first
            return try value.flatMap { AppsPolicy(rawValue: try $0.string(0)) } ?? .all
        }
    }

    package func setAppsPolicy(_ policy: AppsPolicy) async throws {
        try await withSQL("set the apps policy", .write) { sql in
            try await sql.execute(
                """
                INSERT INTO settings (name, value) VALUES (\(AppsSQL.policyName), \(policy.rawValue))
                ON CONFLICT (name) DO UPDATE SET value = excluded.value
                """
            )
        }
    }
}

import PostbackKit

/// Which stored postbacks count: every app's (`all`, the default), or only registered apps'
/// (`registered`). Under `registered`, a postback of an app no one registered is stored as
/// usual (verified, deduplicated, quarantined when bad) but unclaimed: no aggregate, report,
/// dashboard, export, pull or forward counts it, until its app is registered.
package enum AppsPolicy: String, Sendable, Hashable, CaseIterable {
    case all
    case registered
}

/// A registered app (`postbackd apps add`).
package struct StoredApp: Sendable, Hashable {
    package var appID: Int64
    package var name: String?
    package var bundleID: String?
    package var addedAt: String
}

/// An app id of stored postbacks that is not registered.
package struct UnclaimedApp: Sendable, Hashable {
    package var appID: Int64
    package var postbacks: Int
    package var firstSeen: String
    package var lastSeen: String
}

/// What `apps add` did.
package enum AppAddOutcome: String, Sendable, Hashable {
    case added, updated, unchanged
}

/// An app id, name or bundle identifier `apps` cannot take, or an app it does not know.
package struct AppError: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case invalidValue, unknownApp }
        fileprivate let value: Value
        package static let invalidValue = Code(value: .invalidValue)
        package static let unknownApp = Code(value: .unknownApp)
    }

    package let code: Code
    package let reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// The statements of the app registry, the same on both engines.
enum AppsSQL {
    /// True for a `postbacks` row that counts: the policy is `all`, or its app is registered.
    /// Both engines evaluate the two subqueries once per statement.
    static let claimed =
        "(coalesce((SELECT value FROM settings WHERE name = 'apps_policy'), 'all') <> 'registered' OR app_id IN (SELECT app_id FROM apps))"

    static let policyName = "apps_policy"
}

extension PostbackStorage {
    /// Registers `appID`, or updates the name and bundle identifier given of a registered app.
    package func addApp(_ appID: Int64, name: String?, bundleID: String?) async throws -> AppAddOutcome {
        guard appID > 0 else { throw AppError(.invalidValue, "\(appID) is not an App Store id (a positive number)") }
        for (option, value) in [("--name", name), ("--bundle-id", bundleID)] {
            if let value, !(1...255).contains(value.utf8.count) {
                throw AppError(.invalidValue, "\(option): 1 to 255 bytes")
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

/// `postbackd apps`: the app registry, its policy, and the apps seen but not registered.
package enum AppsJob {
    package static func table(_ apps: [StoredApp], policy: AppsPolicy) -> String {
        let header =
            "policy: \(policy.rawValue)"
            + (policy == .all ? " (every app's postbacks count)" : " (only these apps' postbacks count)") + "\n"
        guard !apps.isEmpty else { return header + "no registered apps (postbackd apps add APP_ID)\n" }
        func column(_ name: String, right: Bool = false, _ cell: (StoredApp) -> String) -> TableColumn {
            TableColumn(header: name, rightAligned: right, cells: apps.map(cell), priority: 90)
        }
        let columns = [
            column("app", right: true) { String($0.appID) }, column("name") { $0.name ?? "–" },
            column("bundle id") { $0.bundleID ?? "–" }, column("added") { $0.addedAt },
        ]
        return header
            + TableColumn.lines(columns, rows: apps.count).map(\.trailingSpacesRemoved).joined(separator: "\n") + "\n"
    }

    package static func json(_ apps: [StoredApp]) -> String {
        apps.map { app in
            var object = JSONObjectWriter()
            object.add("app_id", app.appID)
            object.add("name", app.name)
            object.add("bundle_id", app.bundleID)
            object.add("added_at", app.addedAt)
            return object.text + "\n"
        }.joined()
    }

    package static func unclaimedTable(_ apps: [UnclaimedApp], policy: AppsPolicy) -> String {
        guard !apps.isEmpty else { return "every app with stored postbacks is registered\n" }
        func column(_ name: String, right: Bool = false, _ cell: (UnclaimedApp) -> String) -> TableColumn {
            TableColumn(header: name, rightAligned: right, cells: apps.map(cell), priority: 90)
        }
        let columns = [
            column("app", right: true) { String($0.appID) },
            column("postbacks", right: true) { formatCount($0.postbacks) }, column("first seen") { $0.firstSeen },
            column("last seen") { $0.lastSeen },
        ]
        let note =
            policy == .registered
            ? "policy registered: these postbacks are counted nowhere until their app is registered (postbackd apps add APP_ID, then postbackd aggregate)"
            : "policy all: these postbacks are counted; under postbackd apps policy registered they would not be"
        return TableColumn.lines(columns, rows: apps.count).map(\.trailingSpacesRemoved).joined(separator: "\n") + "\n"
            + note + "\n"
    }

    package static func unclaimedJSON(_ apps: [UnclaimedApp]) -> String {
        apps.map { app in
            var object = JSONObjectWriter()
            object.add("app_id", app.appID)
            object.add("postbacks", app.postbacks)
            object.add("first_seen", app.firstSeen)
            object.add("last_seen", app.lastSeen)
            return object.text + "\n"
        }.joined()
    }
}

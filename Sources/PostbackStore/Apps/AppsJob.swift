import PostbackKit

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

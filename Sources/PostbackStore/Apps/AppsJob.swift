import PostbackKit

/// `postbackd apps`: the app registry, its policy, and the apps seen but not registered.
package enum AppsJob {
    package static func table(_ apps: [StoredApp], policy: AppsPolicy) -> String {
        let header =
            "policy: \(policy.rawValue)"
            + (policy == .all ? " (every app's postbacks count)" : " (only these apps' postbacks count)") + "\n"
        guard !apps.isEmpty else { return header + "no registered apps (postbackd apps add APP_ID)\n" }
        let columns = [
            TableColumn("app", right: true, of: apps) { String($0.appID) },
            TableColumn("name", of: apps) { $0.name ?? "–" }, TableColumn("bundle id", of: apps) { $0.bundleID ?? "–" },
            TableColumn("added", of: apps) { $0.addedAt },
        ]
        return header + TableColumn.text(columns, rows: apps.count)
    }

    package static func json(_ apps: [StoredApp]) -> String {
        JSONObjectWriter.lines(apps) { app, object in
            object.add("app_id", app.appID)
            object.add("name", app.name)
            object.add("bundle_id", app.bundleID)
            object.add("added_at", app.addedAt)
        }
    }

    package static func unclaimedTable(_ apps: [UnclaimedApp], policy: AppsPolicy) -> String {
        guard !apps.isEmpty else { return "every app with stored postbacks is registered\n" }
        let columns = [
            TableColumn("app", right: true, of: apps) { String($0.appID) },
            TableColumn("postbacks", right: true, of: apps) { formatCount($0.postbacks) },
            TableColumn("first seen", of: apps) { $0.firstSeen }, TableColumn("last seen", of: apps) { $0.lastSeen },
        ]
        let note =
            policy == .registered
            ? "policy registered: these postbacks are counted nowhere until their app is registered (postbackd apps add APP_ID, then postbackd aggregate)"
            : "policy all: these postbacks are counted; under postbackd apps policy registered they would not be"
        return TableColumn.text(columns, rows: apps.count, after: [note])
    }

    package static func unclaimedJSON(_ apps: [UnclaimedApp]) -> String {
        JSONObjectWriter.lines(apps) { app, object in
            object.add("app_id", app.appID)
            object.add("postbacks", app.postbacks)
            object.add("first_seen", app.firstSeen)
            object.add("last_seen", app.lastSeen)
        }
    }
}

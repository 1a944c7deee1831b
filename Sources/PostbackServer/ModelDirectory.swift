import PostbackKit
import PostbackStore
import Synchronization

/// The current conversion model of each app, by App Store id and by bundle identifier, as the
/// conversion value endpoints read them on every request.
///
/// Read at start, then again by the writer every ``reloadInterval``: a model added with
/// `postbackd models add` (by any process, on any machine sharing the database) answers within
/// that time, without a restart.
final class ModelDirectory: Sendable {
    struct Entry: Sendable {
        var appID: Int64
        var model: ConversionModel
    }

    private struct Snapshot: Sendable {
        var byApp: [Int64: ConversionModel] = [:]
        var byBundle: [String: Int64] = [:]
    }

    static let reloadInterval: Duration = .seconds(10)

    private let snapshot = Mutex(Snapshot())

    init() {}

    func replace(with stored: [StoredModel]) {
        var next = Snapshot()
        for entry in stored {
            next.byApp[entry.model.appID] = entry.model
            if let bundle = entry.bundleID { next.byBundle[bundle] = entry.model.appID }
        }
        snapshot.withLock { $0 = next }
    }

    /// The model of `app`: a numeric App Store id, or a bundle identifier.
    func model(for app: Substring) -> Entry? {
        snapshot.withLock { snapshot -> Entry? in
            if let id = Int64(app), let model = snapshot.byApp[id] { return Entry(appID: id, model: model) }
            if let id = snapshot.byBundle[String(app)], let model = snapshot.byApp[id] {
                return Entry(appID: id, model: model)
            }
            return nil
        }
    }

    /// The model of an app by bundle identifier.
    func model(bundleID: String) -> Entry? {
        snapshot.withLock { snapshot -> Entry? in
            guard let id = snapshot.byBundle[bundleID], let model = snapshot.byApp[id] else { return nil }
            return Entry(appID: id, model: model)
        }
    }

    /// The model of an app by App Store id.
    func model(appID: Int64) -> Entry? {
        snapshot.withLock { snapshot in snapshot.byApp[appID].map { Entry(appID: appID, model: $0) } }
    }
}

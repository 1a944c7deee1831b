import PostbackKit
import PostbackStore
import Synchronization

/// The conversion models in force of each app (install, and re-engagement for an
/// AdAttributionKit re-engagement state), by App Store id and by bundle identifier, as the
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
        var reengagementByApp: [Int64: ConversionModel] = [:]
        var byBundle: [String: Int64] = [:]

        func model(_ appID: Int64, _ type: ModelConversionType) -> ConversionModel? {
            type == .install ? byApp[appID] : reengagementByApp[appID]
        }
    }

    static let reloadInterval: Duration = .seconds(10)

    private let snapshot = Mutex(Snapshot())

    init() {}

    /// Every app's timelines (``PostbackStorage/models()``): the models in force at `instant`.
    func replace(with stored: [StoredModel], at instant: UTCInstant) {
        var next = Snapshot()
        for entry in stored.inForce(at: instant, .install) {
            next.byApp[entry.model.appID] = entry.model
            if let bundle = entry.bundleID { next.byBundle[bundle] = entry.model.appID }
        }
        for entry in stored.inForce(at: instant, .reengagement) {
            next.reengagementByApp[entry.model.appID] = entry.model
            if let bundle = entry.bundleID { next.byBundle[bundle] = entry.model.appID }
        }
        snapshot.withLock { $0 = next }
    }

    /// The model of `app` (a numeric App Store id, or a bundle identifier) for `type`.
    func model(for app: Substring, _ type: ModelConversionType = .install) -> Entry? {
        snapshot.withLock { snapshot -> Entry? in
            if let id = Int64(app), let model = snapshot.model(id, type) { return Entry(appID: id, model: model) }
            if let id = snapshot.byBundle[String(app)], let model = snapshot.model(id, type) {
                return Entry(appID: id, model: model)
            }
            return nil
        }
    }

    /// The model of an app by bundle identifier, for `type`.
    func model(bundleID: String, _ type: ModelConversionType = .install) -> Entry? {
        snapshot.withLock { snapshot -> Entry? in
            guard let id = snapshot.byBundle[bundleID], let model = snapshot.model(id, type) else { return nil }
            return Entry(appID: id, model: model)
        }
    }

    /// The model of an app by App Store id, for `type`.
    func model(appID: Int64, _ type: ModelConversionType = .install) -> Entry? {
        snapshot.withLock { snapshot in snapshot.model(appID, type).map { Entry(appID: appID, model: $0) } }
    }
}

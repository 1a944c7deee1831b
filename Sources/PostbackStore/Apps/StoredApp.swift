import PostbackKit

/// A registered app (`postbackd apps add`).
package struct StoredApp: Sendable, Hashable {
    package var appID: Int64
    package var name: String?
    package var bundleID: String?
    package var addedAt: String
}

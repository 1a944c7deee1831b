import PostbackKit

/// A bundle identifier recorded for another app already: `models add --bundle-id` stores
/// nothing then.
package struct BundleIDConflict: CodedError {
    package typealias Code = ErrorCode<BundleIDConflict>

    package let code = Code.taken
    package var bundleID: String
    package var appID: Int64
    var otherAppID: Int64

    package var reason: String {
        "bundle identifier \(bundleID) belongs to app \(otherAppID) already; it cannot name app \(appID) too"
    }
}

extension ErrorCode where Domain == BundleIDConflict {
    /// The bundle identifier names another app.
    package static let taken = Self("taken")
}

import HTTPTypes
import Hummingbird
import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// One key `serve` accepts: a stored one (`postbackd keys add`), or one of the options
/// `--dashboard-token` and `--api-key`, which open every app.
struct ServeKey: Sendable {
    var name: String
    /// SHA-256 of the secret: what a presented secret's hash is compared with.
    var secretSHA256: [UInt8]
    /// SHA-256 of the dashboard session cookie's value.
    var sessionSHA256: [UInt8]
    /// The apps it opens; nil: every app.
    var apps: Set<Int64>?
    var scopes: Set<AccessScope>
    /// The channels its scope `forwards` posts on; nil: every channel.
    var channels: Set<PostbackChannel>? = nil
    /// Stored keys have their last use recorded; the options' keys are not in the store.
    var stored: Bool

    func opens(_ app: Int64) -> Bool { apps?.contains(app) ?? true }

    func opens(channel: PostbackChannel) -> Bool { channels?.contains(channel) ?? true }

    /// `--dashboard-token`: report and dashboard, every app. Its session cookie is the one
    /// earlier versions set, so signed-in browsers stay signed in.
    static func dashboardToken(_ token: String) -> ServeKey {
        ServeKey(
            name: "--dashboard-token",
            secretSHA256: SHA256Digest.hash(Array(token.utf8)),
            sessionSHA256: SHA256Digest.hash(Array(AccessKeySecret.session(token).utf8)),
            apps: nil,
            scopes: [.report, .dashboard],
            stored: false
        )
    }

    /// `--api-key`: the conversion value and Apple Ads token routes, every app.
    static func apiKey(_ key: String) -> ServeKey {
        ServeKey(
            name: "--api-key",
            secretSHA256: SHA256Digest.hash(Array(key.utf8)),
            sessionSHA256: [],
            apps: nil,
            scopes: [.conversionValue, .appleAds],
            stored: false
        )
    }
}

extension ServeKey {
    /// A stored key that is not revoked; nil too for one whose apps are an empty list (as a
    /// damaged row would read), which must never mean every app.
    init?(_ key: StoredAccessKey) {
        guard key.revokedAt == nil, let secret = bytes(hex: key.secretSHA256),
            let session = bytes(hex: key.sessionSHA256), key.apps.map({ !$0.isEmpty }) ?? true
        else { return nil }
        self.init(
            name: key.name,
            secretSHA256: secret,
            sessionSHA256: session,
            apps: key.apps.map(Set.init),
            scopes: Set(key.scopes),
            channels: key.channels.map(Set.init),
            stored: true
        )
    }
}

/// `hex` (lower or upper case) as bytes; nil when it is not hex.
private func bytes(hex: String) -> [UInt8]? {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let high = hexDigitValue(digits[index]), let low = hexDigitValue(digits[index + 1]) else { return nil }
        out.append(high << 4 | low)
    }
    return out
}

import PostbackKit

/// An app id of stored postbacks that is not registered.
package struct UnclaimedApp: Sendable, Hashable {
    package var appID: Int64
    package var postbacks: Int
    package var firstSeen: String
    package var lastSeen: String
}

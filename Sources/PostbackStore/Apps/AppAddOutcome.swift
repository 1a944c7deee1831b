import PostbackKit

/// What `apps add` did.
package enum AppAddOutcome: String, Sendable, Hashable {
    case added, updated, unchanged
}

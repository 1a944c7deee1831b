import PostbackKit

/// Which stored postbacks count: every app's (`all`, the default), or only registered apps'
/// (`registered`). Under `registered`, a postback of an app no one registered is stored as
/// usual (verified, deduplicated, quarantined when bad) but unclaimed: no aggregate, report,
/// dashboard, export, pull or forward counts it, until its app is registered.
package enum AppsPolicy: String, Sendable, Hashable, CaseIterable {
    case all
    case registered
}

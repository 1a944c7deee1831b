import PostbackKit

/// One kind's retention as stored.
package struct RetentionRule: Sendable, Hashable {
    package var kind: RetentionKind
    /// Kept this many days; nil: kept forever.
    package var days: Int?
    package var setAt: String?
    /// The first UTC day received not yet examined by `prune` (kinds walked by day).
    package var examinedBefore: UTCDay?
}

import PostbackKit

/// Which day a period's `--from` and `--to` bound.
package enum DateBasis: String, Sendable, Hashable, CaseIterable {
    /// The UTC day the postback was received (the `date` dimension).
    case received
    /// The UTC day of its estimated install (the `install_date` dimension).
    case install
}

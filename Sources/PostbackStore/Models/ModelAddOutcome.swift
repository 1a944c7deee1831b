import PostbackKit

/// What adding a model did.
package enum ModelAddOutcome: Sendable, Hashable {
    /// The app had no model of the conversion type: this one is in force from the beginning.
    case added
    /// A later model: in force from `effectiveFrom` until the next one's.
    case scheduled
    /// Another model was in force from the same time; it is kept with `replaced_at`, out of
    /// the timeline.
    case replaced
    /// The same model was already in force from that time (or, without a time, is the newest).
    case unchanged

    package var text: String {
        switch self {
        case .added: "added"
        case .scheduled: "added to the timeline"
        case .replaced: "replaced"
        case .unchanged: "unchanged"
        }
    }
}

import PostbackKit

/// When a model added to a timeline is in force from.
package enum ModelEffectiveTime: Sendable, Hashable {
    /// From the beginning: it takes the place of the timeline's first model.
    case beginning
    case at(UTCInstant)

    /// `beginning`, a day (its start, UTC) or an ISO 8601 instant.
    package init?(_ text: String) {
        if text == "beginning" {
            self = .beginning
        } else if let instant = UTCInstant(iso8601: text) {
            self = .at(instant)
        } else {
            return nil
        }
    }
}

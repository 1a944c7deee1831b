import PostbackKit

/// A dimension value as stored: text, integer, or NULL.
package enum DimensionValue: Sendable, Hashable, Comparable {
    case null
    case integer(Int64)
    case text(String)
}

extension DimensionValue {
    /// A report's group value as either engine answered it.
    init(_ value: SQLValue) {
        switch value {
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .real(let number): self = .integer(Int64(number))
        case .boolean(let flag): self = .integer(flag ? 1 : 0)
        case .day(let day): self = .text(day.description)
        case .instant(let instant): self = .text(instant.iso8601)
        case .null, .blob: self = .null
        }
    }
}

/// The unsigned value a postback reports about what the user did after installing.
///
/// Apple leaves it out of the signature: anyone who relays a postback can change it, which is
/// why a duplicate that disagrees about it is recorded as a conflict.
public enum ConversionValue: Sendable, Hashable, CustomStringConvertible {
    /// The 6-bit fine value, 0–63.
    case fine(Int)
    /// The coarse value of SKAdNetwork 4 and AdAttributionKit.
    case coarse(CoarseConversionValue)

    public var description: String {
        switch self {
        case .fine(let value): "\(value)"
        case .coarse(let value): value.rawValue
        }
    }

    /// The fine value, if this is one.
    public var fine: Int? {
        if case .fine(let value) = self { return value }
        return nil
    }

    /// The coarse value, if this is one.
    public var coarse: CoarseConversionValue? {
        if case .coarse(let value) = self { return value }
        return nil
    }
}

/// A coarse conversion value.
public enum CoarseConversionValue: String, Sendable, Hashable, CaseIterable {
    case low, medium, high
}

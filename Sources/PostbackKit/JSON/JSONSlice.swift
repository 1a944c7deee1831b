/// A scanned value: its kind and where its bytes are. Strings exclude their quotes.
struct JSONSlice: Sendable {
    package var kind: JSONKind
    /// First byte (for a string: after the opening quote).
    package var start: Int
    /// One past the last byte (for a string: the closing quote's offset).
    package var end: Int
    /// For strings: the bytes hold at least one escape. For numbers: the number has a
    /// fraction or an exponent.
    package var flag: Bool
}

/// One member of a scanned object.
struct JSONMember: Sendable {
    /// The key's bytes (without quotes, before unescaping).
    var keyStart: Int
    var keyEnd: Int
    var keyEscaped: Bool
    package var value: JSONSlice
}

/// The top level of a scanned document.
enum JSONDocument: Sendable {
    /// An object, with its members in document order.
    case object([JSONMember])
    /// A value of another kind.
    case other(JSONKind)
}

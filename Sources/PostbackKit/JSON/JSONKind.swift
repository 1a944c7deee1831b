/// The kind of a scanned JSON value.
enum JSONKind: UInt8, Sendable {
    case null, `true`, `false`, number, string, array, object

    /// The kind as a person names it in an error message.
    package var name: String {
        switch self {
        case .null: "null"
        case .true, .false: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

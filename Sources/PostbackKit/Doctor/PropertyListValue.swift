/// A property list as `postbackd doctor` checks it, without Foundation: the readers
/// (`PostbackServer`'s `PropertyListReader`) build it from an XML or binary file.
package indirect enum PropertyListValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    /// Seconds since 1970-01-01T00:00:00Z.
    case date(Double)
    /// Its length in bytes (the doctor never needs the bytes).
    case data(Int)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// The type, as a person names it: "a string", "an integer", "a Boolean", ….
    package var typeName: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .real: "a real number"
        case .boolean: "a Boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        }
    }

    /// The value as it would be written in Xcode's editor, shortened: `"YES"`, `7`, `true`.
    package var shown: String {
        switch self {
        case .string(let text): jsonQuoted(text.count > 80 ? String(text.prefix(80)) + "…" : text)
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .boolean(let value): value ? "true" : "false"
        case .date: "a date"
        case .data(let count): "\(count) bytes of data"
        case .array(let items): "an array of \(items.count)"
        case .dictionary(let members): "a dictionary of \(members.count)"
        }
    }
}

/// Key paths as the doctor prints them: `AdAttributionKitConfigurations.AttributionWindows`,
/// `SKAdNetworkItems[3].SKAdNetworkIdentifier`, and a key that is not a plain name quoted:
/// `AttributionWindows["example123.adattributionkit"].install`.
package enum PropertyListKeyPath {
    package static func child(_ parent: String, _ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        if plain { return parent.isEmpty ? key : parent + "." + key }
        return parent + "[" + jsonQuoted(key) + "]"
    }

    package static func element(_ parent: String, _ index: Int) -> String {
        parent + "[\(index)]"
    }
}

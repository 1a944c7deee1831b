/// Writes one JSON object with its keys in the order they are added (our outputs are
/// snake_case and ordered for people reading them).
package struct JSONObjectWriter {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var empty = true

    package init() {}

    /// Escape everything outside printable ASCII as `\uXXXX` (for byte-exact debugging output).
    var asciiOnly = false

    package mutating func add(_ key: String, _ value: String?) {
        addKey(key)
        if let value { appendString(value) } else { appendLiteral("null") }
    }

    package mutating func add(_ key: String, _ value: Int?) {
        addKey(key)
        appendLiteral(value.map { String($0) } ?? "null")
    }

    package mutating func add(_ key: String, _ value: Int64?) {
        addKey(key)
        appendLiteral(value.map { String($0) } ?? "null")
    }

    package mutating func add(_ key: String, _ value: Bool?) {
        addKey(key)
        appendLiteral(value.map { $0 ? "true" : "false" } ?? "null")
    }

    package mutating func add(_ key: String, _ value: Double?) {
        addKey(key)
        appendLiteral(value.map(formatJSONNumber) ?? "null")
    }

    /// Adds a value that is already JSON text.
    package mutating func addRaw(_ key: String, json: String) {
        addKey(key)
        bytes.append(contentsOf: json.utf8)
    }

    package mutating func add(_ key: String, strings: [String]) {
        addKey(key)
        bytes.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(string)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// The finished object.
    package var text: String {
        String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self)
    }

    private mutating func addKey(_ key: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendLiteral(_ literal: String) {
        bytes.append(contentsOf: literal.utf8)
    }

    private mutating func appendString(_ string: String) {
        if jsonNeedsNoEscape(string, asciiOnly: asciiOnly) {
            // Most keys and values (names, codes, dates): their bytes between quotes.
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: string.utf8)
            bytes.append(UInt8(ascii: "\""))
        } else {
            bytes.append(contentsOf: jsonQuoted(string, asciiOnly: asciiOnly).utf8)
        }
    }
}

/// `string` as a JSON string literal.
package func jsonQuoted(_ string: String, asciiOnly: Bool = false) -> String {
    if jsonNeedsNoEscape(string, asciiOnly: asciiOnly) { return "\"" + string + "\"" }
    var out = "\""
    out.reserveCapacity(string.utf8.count + 2)
    for scalar in string.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F || (asciiOnly && scalar.value > 0x7E) {
                if scalar.value > 0xFFFF {
                    let offset = scalar.value - 0x10000
                    out += "\\u" + hex4(UInt16(0xD800 + (offset >> 10))).lowercased()
                    out += "\\u" + hex4(UInt16(0xDC00 + (offset & 0x3FF))).lowercased()
                } else {
                    out += "\\u" + hex4(UInt16(scalar.value)).lowercased()
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    out += "\""
    return out
}

/// Whether `string` is its own JSON string literal between quotes: no quote, backslash or
/// control character (nor, `asciiOnly`, anything outside printable ASCII). One pass over its
/// UTF-8 bytes, where ``jsonQuoted(_:asciiOnly:)`` walks Unicode scalars.
func jsonNeedsNoEscape(_ string: String, asciiOnly: Bool) -> Bool {
    let limit: UInt8 = asciiOnly ? 0x7E : 0xFF
    for byte in string.utf8
    where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || byte > limit {
        return false
    }
    return true
}

/// A number as JSON: integers without a fraction, others with up to 6 decimals, trimmed.
package func formatJSONNumber(_ value: Double) -> String {
    guard value.isFinite else { return "null" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    var text = String(value)
    // On the UTF-8 view: `String(Double)` is ASCII, and Characters cost more to walk.
    let utf8 = text.utf8
    if utf8.contains(UInt8(ascii: "e")) { return text }
    if let dot = utf8.firstIndex(of: UInt8(ascii: ".")) {
        if utf8.distance(from: dot, to: utf8.endIndex) - 1 > 6 {
            let scaled = (value * 1_000_000).rounded() / 1_000_000
            text = String(scaled)
        }
    }
    return text
}

/// Strict base64 and base64url, as signatures need: anything but the canonical encoding of some
/// bytes is refused rather than repaired.
package enum Base64 {
    package enum Alphabet: Sendable {
        /// RFC 4648 section 4 (`+`, `/`): `attribution-signature`.
        case standard
        /// RFC 4648 section 5 (`-`, `_`), no padding: JWS segments.
        case url
    }

    private static let standardDecoding: [UInt8] = decodingTable(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    )
    private static let urlDecoding: [UInt8] = decodingTable(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    )
    private static let standardEncoding = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlEncoding = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func decodingTable(_ alphabet: String) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.utf8.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }

    /// Decodes `text`, or returns nil when it is not canonical base64 in `alphabet`.
    ///
    /// Standard base64 may omit its `=` padding; base64url must. Whitespace, characters of the
    /// other alphabet, impossible lengths and non-zero bits in the last character are refused.
    package static func decode<Text: Collection<UInt8>>(_ text: Text, alphabet: Alphabet = .standard) -> [UInt8]? {
        var characters = Array(text)
        if alphabet == .standard, characters.count % 4 == 0 {
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
        }
        let remainder = characters.count % 4
        if remainder == 1 { return nil }
        let table = alphabet == .standard ? standardDecoding : urlDecoding
        var out: [UInt8] = []
        out.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = table[Int(character)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Left-over bits must be zero, or two encodings would decode to the same bytes.
        if bits > 0 && accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    /// Encodes `bytes`; standard base64 is padded, base64url is not.
    package static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes, alphabet: Alphabet = .standard) -> String {
        let table = alphabet == .standard ? standardEncoding : urlEncoding
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(table[Int((accumulator >> UInt32(bits)) & 0x3F)])
            }
        }
        if bits > 0 {
            out.append(table[Int((accumulator << UInt32(6 - bits)) & 0x3F)])
        }
        if alphabet == .standard {
            while out.count % 4 != 0 { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Decodes a base64 constant; empty when it is not base64 (constants are checked by tests).
func base64Decode(_ text: String) -> [UInt8] {
    Base64.decode(text.utf8) ?? []
}

// Byte tests and hexadecimal spelling the JSON readers share.

@inline(__always)
func isDigit(_ byte: UInt8) -> Bool {
    byte &- UInt8(ascii: "0") < 10
}

/// The value of a hexadecimal digit (either case), or nil.
@inline(__always)
package func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

func hex2(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
}

func hex4(_ value: UInt16) -> String {
    hex2(UInt8(value >> 8)) + hex2(UInt8(value & 0xFF))
}

@inline(__always)
func isJSONWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
}

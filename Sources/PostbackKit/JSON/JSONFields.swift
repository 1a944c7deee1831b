/// A closed set of JSON keys a decoder reads.
protocol JSONFieldKey: CaseIterable, RawRepresentable<Int> {
    /// The key as it appears in JSON.
    var name: String { get }
    /// The UTF-8 names, indexed by raw value (cache them in a `static let`).
    static var utf8Names: [[UInt8]] { get }
}

extension JSONFieldKey {
    /// The key whose name is exactly `bytes[range]`, if it is one of this set.
    static func match(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Self? {
        let length = range.count
        nameLoop: for (index, name) in utf8Names.enumerated() where name.count == length {
            var offset = 0
            while offset < length {
                if name[offset] != bytes[range.lowerBound + offset] { continue nameLoop }
                offset += 1
            }
            return Self(rawValue: index)
        }
        return nil
    }
}

/// The members of a scanned object that belong to a key set, by key; others are ignored (and
/// stay in the raw bytes).
struct JSONFields<Key: JSONFieldKey> {
    private var slots: [JSONSlice?]

    init(_ bytes: UnsafeBufferPointer<UInt8>, _ members: [JSONMember]) {
        slots = Array(repeating: nil, count: Key.allCases.count)
        for member in members {
            // An escaped key ("app\u002did") names the same field as its plain spelling.
            let key: Key?
            if member.keyEscaped {
                let unescaped = JSONText.unescape(bytes, member.keyStart..<member.keyEnd)
                key = unescaped.withUnsafeBufferPointer { Key.match($0, 0..<$0.count) }
            } else {
                key = Key.match(bytes, member.keyStart..<member.keyEnd)
            }
            if let key { slots[key.rawValue] = member.value }
        }
    }

    subscript(_ key: Key) -> JSONSlice? {
        slots[key.rawValue]
    }
}

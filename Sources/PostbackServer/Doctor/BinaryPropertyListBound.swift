/// How many values a binary property list holds when read as a tree, counted from its object
/// table without building any (Apple's `bplist00` format, as CFBinaryPList.c writes it).
///
/// A binary property list refers to its objects by index, so one container can be reached
/// from many places: 40 arrays each holding the next one twice are a few hundred bytes and
/// 2^40 values, and Foundation on Linux builds each of them. ``PropertyListReader`` counts
/// first and refuses such a file before Foundation reads it.
enum BinaryPropertyListBound {
    /// Why the count stopped: more than the bound, deeper than the bound, or not a binary
    /// property list this walk can read (Foundation then says what is wrong with it).
    enum Outcome: Equatable {
        case within
        case tooManyValues
        case tooDeep
        case unreadable
    }

    static func check(_ bytes: [UInt8], maximumValues: Int, maximumDepth: Int) -> Outcome {
        guard bytes.count >= 40, bytes.starts(with: Array("bplist00".utf8)) else { return .unreadable }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            let objectCount = integer(bytes, at: trailer + 8, size: 8),
            let top = integer(bytes, at: trailer + 16, size: 8),
            let tableOffset = integer(bytes, at: trailer + 24, size: 8),
            objectCount > 0, objectCount <= bytes.count, top < objectCount,
            tableOffset <= trailer, objectCount <= (trailer - tableOffset) / offsetSize
        else { return .unreadable }

        func offset(of object: Int) -> Int? {
            guard object < objectCount,
                let value = integer(bytes, at: tableOffset + object * offsetSize, size: offsetSize),
                value < trailer
            else { return nil }
            return value
        }

        var values = 0
        var stack: [(object: Int, depth: Int)] = [(top, 0)]
        while let (object, depth) = stack.popLast() {
            values += 1
            guard values <= maximumValues else { return .tooManyValues }
            guard depth <= maximumDepth else { return .tooDeep }
            guard let start = offset(of: object) else { return .unreadable }
            let marker = bytes[start]
            let kind = marker >> 4
            // Arrays (0xA), sets (0xC) and dictionaries (0xD) hold references; the rest are leaves.
            guard kind == 0xA || kind == 0xC || kind == 0xD else { continue }
            var count = Int(marker & 0x0F)
            var position = start + 1
            if count == 0x0F {
                guard position < trailer, bytes[position] >> 4 == 0x1 else { return .unreadable }
                let size = 1 << Int(bytes[position] & 0x0F)
                guard size <= 8, let value = integer(bytes, at: position + 1, size: size) else { return .unreadable }
                count = value
                position += 1 + size
            }
            let references =
                kind == 0xD ? count.multipliedReportingOverflow(by: 2) : (partialValue: count, overflow: false)
            guard !references.overflow, position <= trailer,
                references.partialValue <= (trailer - position) / referenceSize
            else {
                return .unreadable
            }
            for index in 0..<references.partialValue {
                guard let child = integer(bytes, at: position + index * referenceSize, size: referenceSize) else {
                    return .unreadable
                }
                stack.append((child, depth + 1))
                // The stack never outgrows what remains to count.
                guard stack.count <= maximumValues else { return .tooManyValues }
            }
        }
        return .within
    }

    /// A big-endian unsigned integer of `size` bytes at `position`, if it is in `bytes` and
    /// fits an `Int`.
    private static func integer(_ bytes: [UInt8], at position: Int, size: Int) -> Int? {
        guard position >= 0, size <= 8, position <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for byte in bytes[position..<position + size] { value = value << 8 | UInt64(byte) }
        return value <= UInt64(Int.max) ? Int(value) : nil
    }
}

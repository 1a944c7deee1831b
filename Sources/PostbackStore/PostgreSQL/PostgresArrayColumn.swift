import NIOCore
import PostbackKit
import PostgresNIO

/// One column of a multi-row write, built as a PostgreSQL array in its binary wire format, so
/// that a batch of rows is one statement (`INSERT … SELECT * FROM unnest($1::text[], …)`): one
/// round trip and one bind per column, not one per row.
///
/// PostgresNIO's own array encoding has no NULL elements, which most of our columns need.
/// The format is `array_send`'s: dimensions, a has-nulls flag, the element type, the length
/// and lower bound of the one dimension, then each element as a 4-byte length (-1 for NULL)
/// and its binary value.
struct PostgresArrayColumn: PostgresDynamicTypeEncodable {
    /// The element type.
    enum Element {
        case text, int8, int4, bool, bytea, timestamptz, float8, date

        var type: PostgresDataType {
            switch self {
            case .text: .text
            case .int8: .int8
            case .int4: .int4
            case .bool: .bool
            case .bytea: .bytea
            case .timestamptz: .timestamptz
            case .float8: .float8
            case .date: .date
            }
        }

        var arrayType: PostgresDataType {
            switch self {
            case .text: .textArray
            case .int8: .int8Array
            case .int4: .int4Array
            case .bool: .boolArray
            case .bytea: .byteaArray
            case .timestamptz: .timestamptzArray
            case .float8: .float8Array
            case .date: .dateArray
            }
        }
    }

    let element: Element
    private(set) var count = 0
    private var hasNulls = false
    private var elements: ByteBuffer

    init(_ element: Element, capacity: Int = 256) {
        self.element = element
        self.elements = ByteBufferAllocator().buffer(capacity: capacity * 12)
    }

    var psqlType: PostgresDataType { element.arrayType }
    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer,
        context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(Int32(count == 0 ? 0 : 1))
        byteBuffer.writeInteger(Int32(hasNulls ? 1 : 0))
        byteBuffer.writeInteger(Int32(bitPattern: element.type.rawValue))
        if count > 0 {
            byteBuffer.writeInteger(Int32(count))
            byteBuffer.writeInteger(Int32(1))
            var elements = self.elements
            byteBuffer.writeBuffer(&elements)
        }
    }

    private mutating func appendNull() {
        count += 1
        hasNulls = true
        elements.writeInteger(Int32(-1))
    }

    mutating func append(_ value: String?) {
        precondition(element == .text)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(value.utf8.count))
        elements.writeString(value)
    }

    mutating func append(_ value: Int64?) {
        guard let value else { return appendNull() }
        count += 1
        switch element {
        case .int8:
            elements.writeInteger(Int32(8))
            elements.writeInteger(value)
        case .int4:
            elements.writeInteger(Int32(4))
            elements.writeInteger(Int32(truncatingIfNeeded: value))
        default:
            preconditionFailure("an integer in a \(element) column")
        }
    }

    mutating func append(_ value: Int?) {
        append(value.map(Int64.init))
    }

    mutating func append(_ value: Bool?) {
        precondition(element == .bool)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(1))
        elements.writeInteger(UInt8(value ? 1 : 0))
    }

    mutating func append(_ value: Double?) {
        precondition(element == .float8)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(8))
        elements.writeInteger(value.bitPattern)
    }

    mutating func append<Bytes: Collection<UInt8>>(bytes value: Bytes?) {
        precondition(element == .bytea)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(value.count))
        elements.writeBytes(value)
    }

    /// A time, as `timestamptz` holds it: microseconds since 2000-01-01 UTC.
    mutating func append(_ value: UTCInstant?) {
        precondition(element == .timestamptz)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(8))
        elements.writeInteger((value.milliseconds - Self.postgresEpochMilliseconds) * 1000)
    }

    /// A day, as `date` holds it: days since 2000-01-01.
    mutating func append(_ value: UTCDay?) {
        precondition(element == .date)
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(4))
        elements.writeInteger(Int32(truncatingIfNeeded: value.daysSinceEpoch - 10_957))
    }

    /// 2000-01-01T00:00:00Z in milliseconds since 1970.
    static let postgresEpochMilliseconds: Int64 = 946_684_800_000
}

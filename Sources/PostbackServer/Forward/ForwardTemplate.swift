import PostbackKit
import PostbackStore

/// A destination's body template (`"payload": "template"`): any JSON object, nested objects and
/// arrays allowed, whose string values may hold `{{name}}` placeholders, `name` one of
/// ``placeholders``. Checked when the config is read; filled for each postback by
/// ``render(_:)``.
///
/// Typing: a string that is exactly one placeholder (`"{{fine_value}}"`) becomes the value's
/// own JSON type (a number, a boolean, a string or `null`); a placeholder inside a longer string
/// (`"id-{{transaction_id}}"`) is replaced by the value as text, `null` by nothing. Keys and
/// every other value are sent as written.
package struct ForwardTemplate: Sendable {
    /// The largest template, as compact JSON text.
    static let maximumBytes = 65_536
    /// The deepest nesting of objects and arrays, the template itself being 1.
    static let maximumDepth = 16
    /// The most placeholders in a template.
    static let maximumPlaceholders = 256
    /// The largest body a template may give (a delivery whose body would be larger is
    /// rejected).
    static let maximumBodyBytes = 1 << 20

    /// What a placeholder may name: export's postbacks columns (`postbackd export`), then the
    /// campaign mapping's `campaign`, `ad_group` and `creative` (null when the postback is
    /// unmapped).
    package static let placeholders = ExportTable.postbackColumnNames + PartnerValues.mappingNames

    let root: JSONValue

    /// Checks `value` (at `path` in the config): an object within the bounds whose placeholders
    /// all name a column.
    package init(_ value: JSONValue, path: String) throws(ForwardConfig.Problem) {
        guard case .object = value else {
            throw ForwardConfig.Problem(
                .invalidValue,
                path: path,
                message: "expected a JSON object (the body to send), found \(value.kindName)"
            )
        }
        let size = value.text.utf8.count
        guard size <= Self.maximumBytes else {
            throw ForwardConfig.Problem(
                .invalidValue,
                path: path,
                message: "\(size) bytes as compact JSON; at most \(Self.maximumBytes)"
            )
        }
        var placeholders = 0
        try Self.check(value, path: path, depth: 1, placeholders: &placeholders)
        root = value
    }

    /// One part of a template string.
    enum Piece: Equatable {
        case text(String)
        case placeholder(String)
    }

    /// `text` cut at its placeholders: `{{`, a name (spaces around it ignored), `}}`. A `{{`
    /// without a `}}` after it is text.
    static func pieces(_ text: String) -> [Piece] {
        var pieces: [Piece] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{") {
            guard let close = rest[open.upperBound...].firstRange(of: "}}") else { break }
            if open.lowerBound > rest.startIndex { pieces.append(.text(String(rest[..<open.lowerBound]))) }
            let name = rest[open.upperBound..<close.lowerBound].drop { $0 == " " }
            pieces.append(.placeholder(String(name.reversed().drop { $0 == " " }.reversed())))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { pieces.append(.text(String(rest))) }
        return pieces
    }

    private static let known = Set(placeholders)

    private static func check(
        _ value: JSONValue,
        path: String,
        depth: Int,
        placeholders count: inout Int
    ) throws(ForwardConfig.Problem) {
        switch value {
        case .string(let text):
            for case .placeholder(let name) in pieces(text) {
                guard known.contains(name) else {
                    throw ForwardConfig.Problem(
                        .invalidValue,
                        path: path,
                        message:
                            "unknown placeholder {{\(name)}}; the columns are \(placeholders.joined(separator: ", "))"
                    )
                }
                count += 1
                guard count <= maximumPlaceholders else {
                    throw ForwardConfig.Problem(
                        .invalidValue,
                        path: path,
                        message: "more than \(maximumPlaceholders) placeholders in the template"
                    )
                }
            }
        case .array(let items):
            guard depth <= maximumDepth else { throw tooDeep(path) }
            for (index, item) in items.enumerated() {
                try check(item, path: "\(path)[\(index)]", depth: depth + 1, placeholders: &count)
            }
        case .object(let members):
            guard depth <= maximumDepth else { throw tooDeep(path) }
            for (key, member) in members {
                try check(member, path: memberPath(path, key), depth: depth + 1, placeholders: &count)
            }
        case .null, .bool, .number:
            break
        }
    }

    private static func tooDeep(_ path: String) -> ForwardConfig.Problem {
        ForwardConfig.Problem(
            .invalidValue,
            path: path,
            message: "nested deeper than \(maximumDepth) objects and arrays"
        )
    }

    /// `path.key`, or `path["key"]` for a key that is not a plain name.
    private static func memberPath(_ path: String, _ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x5F || byte == 0x2D
            }
        return plain ? "\(path).\(key)" : "\(path)[\(jsonQuoted(key))]"
    }

    /// The body for one postback: the template with each placeholder replaced by `value(name)`.
    package func render(_ value: (String) -> ExportValue) -> [UInt8] {
        Array(Self.fill(root, value).text.utf8)
    }

    private static func fill(_ template: JSONValue, _ value: (String) -> ExportValue) -> JSONValue {
        switch template {
        case .string(let text):
            let pieces = pieces(text)
            if pieces.count == 1, case .placeholder(let name) = pieces[0] {
                switch value(name) {
                case .null: return .null
                case .integer(let number): return .number(String(number))
                case .text(let text): return .string(text)
                case .bool(let flag): return .bool(flag)
                }
            }
            var filled = ""
            for piece in pieces {
                switch piece {
                case .text(let text):
                    filled += text
                case .placeholder(let name):
                    switch value(name) {
                    case .null: break
                    case .integer(let number): filled += String(number)
                    case .text(let text): filled += text
                    case .bool(let flag): filled += flag ? "true" : "false"
                    }
                }
            }
            return .string(filled)
        case .array(let items):
            return .array(items.map { fill($0, value) })
        case .object(let members):
            return .object(members.map { (key: $0.key, value: fill($0.value, value)) })
        case .null, .bool, .number:
            return template
        }
    }
}

/// Typed reads of the fields of one scanned JSON object, each failure a ``PostbackProblem``
/// that names the field and says what was wrong.
struct FieldReader<Key: JSONFieldKey> {
    let bytes: UnsafeBufferPointer<UInt8>
    let fields: JSONFields<Key>
    /// Where the object is, for messages: nil for the postback itself, or e.g. "JWS payload".
    let context: String?
    /// Why a field is required, for messages (`version 4.0`, `AdAttributionKit`).
    var requirement: String

    init(_ bytes: UnsafeBufferPointer<UInt8>, _ members: [JSONMember], context: String? = nil, requirement: String) {
        self.bytes = bytes
        self.fields = JSONFields(bytes, members)
        self.context = context
        self.requirement = requirement
    }

    /// A problem with `key`.
    func problem(_ code: PostbackProblem.Code, _ key: Key, _ message: String) -> PostbackProblem {
        PostbackProblem(code, field: key.name, context.map { "\(message) (in the \($0))" } ?? message)
    }

    /// Whether the field appears at all (even as `null`).
    func has(_ key: Key) -> Bool { fields[key] != nil }

    /// The slice of a field that is present and not `null`.
    func present(_ key: Key) -> JSONSlice? {
        guard let slice = fields[key], slice.kind != .null else { return nil }
        return slice
    }

    func required(_ key: Key) throws(PostbackProblem) -> JSONSlice {
        guard let slice = present(key) else {
            throw problem(
                .missingField,
                key,
                "\(fields[key] == nil ? "missing" : "null"), but \(requirement) requires it"
            )
        }
        return slice
    }

    func requiredString(_ key: Key, maximumLength: Int) throws(PostbackProblem) -> String {
        try string(key, required(key), maximumLength: maximumLength)
    }

    func optionalString(_ key: Key, maximumLength: Int) throws(PostbackProblem) -> String? {
        guard let slice = present(key) else { return nil }
        return try string(key, slice, maximumLength: maximumLength)
    }

    func string(_ key: Key, _ slice: JSONSlice, maximumLength: Int) throws(PostbackProblem) -> String {
        guard slice.kind == .string else { throw problem(.wrongType, key, "expected a string, found \(found(slice))") }
        let value = JSONText.string(bytes, slice)
        guard !value.isEmpty else { throw problem(.invalidValue, key, "is an empty string") }
        guard value.utf8.count <= maximumLength else {
            throw problem(.invalidValue, key, "is \(value.utf8.count) bytes long; at most \(maximumLength) expected")
        }
        return value
    }

    func requiredInteger(_ key: Key, in range: ClosedRange<Int64>) throws(PostbackProblem) -> Int64 {
        try integer(key, required(key), in: range)
    }

    func optionalInteger(_ key: Key, in range: ClosedRange<Int64>) throws(PostbackProblem) -> Int64? {
        guard let slice = present(key) else { return nil }
        return try integer(key, slice, in: range)
    }

    func integer(_ key: Key, _ slice: JSONSlice, in range: ClosedRange<Int64>) throws(PostbackProblem) -> Int64 {
        switch JSONText.integer(bytes, slice) {
        case .value(let value) where range.contains(value):
            return value
        case .value(let value):
            throw problem(.invalidValue, key, "\(value) is out of range (\(describe(range)))")
        case .notANumber:
            throw problem(.wrongType, key, "expected an integer, found \(found(slice))")
        case .notAnInteger:
            throw problem(.invalidValue, key, "expected a plain integer, found \(JSONText.excerpt(bytes, slice))")
        case .outOfRange:
            throw problem(.invalidValue, key, "\(JSONText.excerpt(bytes, slice)) is out of range (\(describe(range)))")
        }
    }

    func requiredBoolean(_ key: Key) throws(PostbackProblem) -> Bool {
        let slice = try required(key)
        switch slice.kind {
        case .true: return true
        case .false: return false
        default: throw problem(.wrongType, key, "expected true or false, found \(found(slice))")
        }
    }

    /// A string of 2, 3 or 4 ASCII digits (a 4.0 or AdAttributionKit source identifier).
    func requiredSourceIdentifier(_ key: Key) throws(PostbackProblem) -> String {
        let value = try requiredString(key, maximumLength: 4)
        guard (2...4).contains(value.utf8.count), value.utf8.allSatisfy(isDigit) else {
            throw problem(.invalidValue, key, "expected a string of 2, 3 or 4 digits, found \"\(value)\"")
        }
        return value
    }

    /// A string read leniently (for identifying a malformed postback in reports).
    func lenientString(_ key: Key) -> String? {
        guard let slice = fields[key], slice.kind == .string, slice.end - slice.start <= 255 else { return nil }
        return JSONText.string(bytes, slice)
    }

    func found(_ slice: JSONSlice) -> String {
        switch slice.kind {
        case .null, .true, .false, .number, .string: "\(slice.kind.name) (\(JSONText.excerpt(bytes, slice)))"
        case .array, .object: slice.kind.name
        }
    }

    private func describe(_ range: ClosedRange<Int64>) -> String {
        if range.upperBound == Int64.max { return "at least \(range.lowerBound)" }
        return "\(range.lowerBound)–\(range.upperBound)"
    }
}

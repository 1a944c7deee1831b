/// Why some bytes are not the JSON postbackd accepts, and where.
package struct JSONSyntaxError: CodedError, Sendable {
    package typealias Code = ErrorCode<Self>

    package let code: Code
    /// Byte offset of the problem from the start of the scanned bytes.
    package let offset: Int
    /// What is wrong, for a person; callers say where (a line and column, a field).
    package let message: String
    /// The same as ``message``.
    package var reason: String { message }

    init(_ code: Code, _ message: String, at offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }
}

extension ErrorCode where Domain == JSONSyntaxError {
    /// The input ends where more is needed: empty, or inside a value, a string, an object
    /// or an array.
    package static let unexpectedEnd = Self("unexpectedEnd")
    /// A character that cannot be where it is: not a value, a quoted key, `:`, `,` or the
    /// closing bracket expected, or anything after the end of the value.
    package static let unexpectedCharacter = Self("unexpectedCharacter")
    /// An object names a key twice.
    package static let duplicateKey = Self("duplicateKey")
    /// Arrays and objects nest deeper than the scanner follows.
    package static let tooDeep = Self("tooDeep")
    /// A string holds an unescaped control character or line end, an unknown escape, or a
    /// `\u` escape that is not four hexadecimal digits or a whole surrogate pair.
    package static let invalidString = Self("invalidString")
    /// Bytes that are not UTF-8.
    package static let invalidUTF8 = Self("invalidUTF8")
    /// A number JSON does not allow (a leading zero, no digit after `.` or in the exponent).
    package static let invalidNumber = Self("invalidNumber")
}

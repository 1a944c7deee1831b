/// Why a postback is malformed or unsupported: which field, and what was wrong with it.
///
/// Not thrown out of verification: it becomes the entry's ``VerificationResult`` (its verdict,
/// field and reason).
struct PostbackProblem: CodedError, Sendable {
    typealias Code = ErrorCode<Self>

    let code: Code
    /// The JSON field at fault, when one is.
    package var field: String?
    /// What was wrong, for a person; names the field first when there is one.
    package var reason: String

    init(_ code: Code, field: String? = nil, _ message: String) {
        self.code = code
        self.field = field
        self.reason = field.map { "\($0): \(message)" } ?? message
    }

    /// An entry the reader could not read whole.
    init(_ problem: EntryReadProblem) {
        switch problem {
        case .postbackTooLarge, .lineTooLong: self.init(.tooLarge, problem.description)
        case .truncated, .brokenArray: self.init(.notJSON, problem.description)
        }
    }

    /// `.unsupported` for a version postbackd cannot verify, else `.malformed`.
    package var verdict: Verdict { code == .unsupportedVersion ? .unsupported : .malformed }
}

extension ErrorCode where Domain == PostbackProblem {
    /// The entry (or a JWS segment) is not JSON, or its file or array ended or broke inside it.
    static let notJSON = Self("notJSON")
    /// The entry is over the size limit, or its JSON Lines line is.
    static let tooLarge = Self("tooLarge")
    /// The entry, or a field, holds another kind of JSON value than it takes (an array for
    /// the postback, a number for a string).
    static let wrongType = Self("wrongType")
    /// A field the postback's version requires is missing or null.
    static let missingField = Self("missingField")
    /// A field's value cannot be what it says: out of range, empty, too long, not a known
    /// spelling, not canonical base64url.
    static let invalidValue = Self("invalidValue")
    /// Two fields that exclude each other are both present (a fine and a coarse value, a
    /// source app and a source domain).
    static let conflictingFields = Self("conflictingFields")
    /// A SKAdNetwork version postbackd cannot verify: the verdict is `unsupported`.
    static let unsupportedVersion = Self("unsupportedVersion")
}

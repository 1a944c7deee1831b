/// Why a postback is malformed or unsupported: which field, and what was wrong with it.
struct PostbackProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// `.malformed` or `.unsupported`.
    package var verdict: Verdict
    /// The JSON field at fault, when one is.
    package var field: String?
    /// What was wrong, for a person; names the field first when there is one.
    package var reason: String

    /// A malformed postback.
    init(field: String? = nil, _ message: String) {
        self.init(.malformed, field: field, message)
    }

    init(_ verdict: Verdict, field: String?, _ message: String) {
        self.verdict = verdict
        self.field = field
        self.reason = field.map { "\($0): \(message)" } ?? message
    }

    package var description: String { reason }
}

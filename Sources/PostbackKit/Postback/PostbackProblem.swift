/// Why a postback is malformed or unsupported: which field, and what was wrong with it.
public struct PostbackProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// `.malformed` or `.unsupported`.
    public var verdict: Verdict
    /// The JSON field at fault, when one is.
    public var field: String?
    /// What was wrong, for a person; names the field first when there is one.
    public var reason: String

    /// A malformed postback.
    init(field: String? = nil, _ message: String) {
        self.init(.malformed, field: field, message)
    }

    init(_ verdict: Verdict, field: String?, _ message: String) {
        self.verdict = verdict
        self.field = field
        self.reason = field.map { "\($0): \(message)" } ?? message
    }

    public var description: String { reason }
}

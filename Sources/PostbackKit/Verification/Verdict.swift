/// What postbackd concluded about one postback.
public enum Verdict: String, Sendable, Hashable, CaseIterable, Codable {
    /// Apple's signature (or the signature of a key passed with `--keys`) verifies.
    case valid
    /// A well-formed postback whose signature does not verify (including a signature that is
    /// not base64 or not DER).
    case invalid
    /// Not a well-formed postback of its version: bad JSON, a missing signed field, a field of
    /// the wrong type or out of range, contradictory fields, an oversized entry.
    case malformed
    /// A version postbackd does not know the signed layout of.
    case unsupported
}

/// What postbackd concluded about one entry, with everything a report or the store needs.
public struct VerificationResult: Sendable {
    public var verdict: Verdict
    /// `skan` or `aak`, when the entry was a JSON object of either shape.
    public var kind: PostbackKind?
    /// The field at fault, when one is (`attribution-signature` or `jws-string` for a bad
    /// signature).
    public var field: String?
    /// Why the postback is not valid, for a person; nil when valid.
    public var reason: String?
    /// The typed postback, when it could be read (valid and invalid verdicts).
    public var postback: Postback?
    /// Identifying fields as far as they could be read, for reporting even malformed entries.
    package var identity: PostbackIdentity
    /// The name of the key that verified the signature (`apple-p256`).
    public var keyName: String?
    /// Verified as a test-mode SKAdNetwork postback (`source-app-id` 0): never a production
    /// install.
    public var testMode: Bool = false
    /// The signature verified only over the message without `source-app-id` 0 (how a device
    /// signs a test postback).
    package var verifiedWithoutSourceAppID: Bool = false
    /// Verified with an AdAttributionKit development key: never a production install.
    public var development: Bool = false
    /// Oddities in a valid postback that Apple would not send but that are no reason to reject it.
    public var warnings: [String] = []

    static func rejected(
        _ problem: PostbackProblem,
        kind: PostbackKind?,
        identity: PostbackIdentity
    ) -> VerificationResult {
        VerificationResult(
            verdict: problem.verdict,
            kind: kind,
            field: problem.field,
            reason: problem.reason,
            postback: nil,
            identity: identity,
            keyName: nil
        )
    }
}

/// The outcome of checking a postback's signature.
struct SignatureResult: Sendable, Hashable {
    /// `.valid` or `.invalid`.
    public var verdict: Verdict
    /// The key that verified it.
    public var keyName: String?
    /// Verified with `source-app-id` 0 (see ``PostbackVerifier``).
    public var testMode: Bool = false
    /// The signature verified only once `source-app-id` 0 was left out of the message.
    package var verifiedWithoutSourceAppID: Bool = false
    /// Verified with an AdAttributionKit development key.
    public var development: Bool = false
    /// Why it did not verify.
    public var reason: String?
}

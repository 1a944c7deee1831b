// The entry points of PostbackKit's public API, for a server of one's own that verifies,
// explains, decodes and encodes postbacks (see the DocC catalog's getting-started article).
// Each is a thin door onto what postbackd's commands use, so the two never disagree.

extension VerifierPool {
    /// Verifiers with `keys`: Apple's production and development keys by default. Make one
    /// and share it: the keys are parsed once, and each task verifies with a verifier of its own.
    public convenience init(keys: KeyRing = .apple) {
        self.init(keyRing: keys)
    }

    /// Parses and verifies one postback as a device sent it (the HTTP body of a SKAdNetwork
    /// or AdAttributionKit postback). Safe to call from any number of tasks at once.
    ///
    /// - Returns: the verdict (valid, invalid, malformed, unsupported), the field and reason
    ///   when not valid, and the typed postback when it could be read.
    public func verify(_ body: [UInt8]) -> VerificationResult {
        withVerifier { $0.check(body) }
    }
}

extension VerificationResult {
    /// What a person debugging the signature needs, as `postbackd verify --explain` prints it:
    /// the signed fields, the exact message with its separators made visible, its SHA-256 and
    /// the key that verified it. Nil when the entry was not a postback that could be read.
    public var explanation: String? {
        VerificationReport.explanationText(self)
    }
}

extension ConversionModel {
    /// Reads a conversion model (the JSON of `spec/conversion-model.md`), checking all of it.
    ///
    /// - Throws: ``ConversionModelError`` listing each problem with its JSON path.
    public init(json: [UInt8]) throws(ConversionModelError) {
        self = try ConversionModelParser.parse(json)
    }
}

extension UserState {
    /// Reads a user's state as `postbackd encode` and `POST /v1/conversion-value` read it:
    /// `{"elapsed_hours": 30, "events": [{"name": "purchase", "hours": 2, "revenue": 4.99,
    /// "currency": "USD"}]}`.
    ///
    /// - Throws: ``UserStateError`` naming the field at fault.
    public init(json: [UInt8]) throws(UserStateError) {
        self = try UserStateParser.parse(json)
    }
}

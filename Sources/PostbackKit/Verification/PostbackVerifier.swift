/// Turns the bytes of one entry into a verdict: parse, check types, verify the signature.
///
/// Holds per-thread OpenSSL state, so each worker owns one (``VerifierPool`` hands them out);
/// the keys are shared.
///
/// SKAdNetwork test mode: a real device signs a test postback's message *without* its
/// `source-app-id` of 0. The rule (spec section 4): verify as received; if that fails and
/// `source-app-id` is 0, verify again without it; if that passes, the postback is valid and
/// marked test-mode. A postback that verifies with a `source-app-id` of 0 in its message is
/// marked test-mode too: 0 is no App Store app, and test postbacks must never count as
/// production installs.
///
/// AdAttributionKit: an object with a `jws-string` is an AdAttributionKit envelope. Its JWS is
/// verified with ES256 over the header and payload segments exactly as received, with the key
/// its header's `kid` names; any `alg` but ES256 and any unknown `kid` are refused.
// @unchecked: a verifier is used by one task at a time; VerifierPool hands it from task to task.
public final class PostbackVerifier: @unchecked Sendable {
    public let keyRing: KeyRing
    private let ecdsa: ECDSAVerifier

    /// - Parameter fixedBaseThreshold: uses of a key after which its signatures are verified
    ///   with its precomputed table (``ECDSAVerifier``).
    public init(keyRing: KeyRing, fixedBaseThreshold: Int = ECDSAVerifier.defaultFixedBaseThreshold) {
        self.keyRing = keyRing
        self.ecdsa = ECDSAVerifier(fixedBaseThreshold: fixedBaseThreshold)
    }

    /// Checks one entry as read from its file.
    ///
    /// - Parameters:
    ///   - bytes: the entry's bytes.
    ///   - problem: a reason the reader already refused the entry for.
    ///   - line: the line the entry starts on in its file, so JSON errors name the file's line.
    public func check(
        _ bytes: UnsafeBufferPointer<UInt8>,
        problem: EntryReadProblem? = nil,
        line: Int = 1
    )
        -> VerificationResult
    {
        if let problem {
            return .rejected(PostbackProblem(problem.description), kind: nil, identity: PostbackIdentity())
        }
        var scanner = JSONScanner(bytes)
        let document: JSONDocument
        do {
            document = try scanner.scanDocument()
        } catch {
            let position = lineAndColumn(of: error.offset, in: bytes)
            let reason =
                "not valid JSON at line \(line + position.line - 1), column \(position.column): \(error.message)"
            return .rejected(PostbackProblem(reason), kind: nil, identity: PostbackIdentity())
        }
        guard case .object(let members) = document else {
            let found = if case .other(let kind) = document { kind.name } else { "another value" }
            return .rejected(
                PostbackProblem("expected a JSON object, found \(found)"),
                kind: nil,
                identity: PostbackIdentity()
            )
        }
        let fields = FieldReader<PostbackKey>(bytes, members, requirement: "a postback")
        if fields.has(.jwsString) {
            return checkAAK(AAKPostbackDecoder(envelope: fields))
        }
        return checkSKAN(SKANPostbackDecoder(fields))
    }

    /// The SHA-256 of `bytes`, with this verifier's OpenSSL context.
    public func sha256(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        ecdsa.sha256(UnsafeRawBufferPointer(bytes))
    }

    /// Checks one entry held in an array.
    public func check(_ bytes: [UInt8], problem: EntryReadProblem? = nil, line: Int = 1) -> VerificationResult {
        bytes.withUnsafeBufferPointer { check($0, problem: problem, line: line) }
    }

    private func checkSKAN(_ decoder: SKANPostbackDecoder) -> VerificationResult {
        var decoder = decoder
        let postback: SKANPostback
        do {
            postback = try decoder.decode()
        } catch {
            return .rejected(error, kind: .skan, identity: decoder.identity)
        }
        return result(.skan(postback), verifySignature(of: postback), field: PostbackKey.attributionSignature.name)
    }

    private func checkAAK(_ decoder: AAKPostbackDecoder) -> VerificationResult {
        let postback: AAKPostback
        do {
            postback = try decoder.decode()
        } catch {
            return .rejected(error, kind: .aak, identity: decoder.identity)
        }
        return result(.aak(postback), verifySignature(of: postback), field: PostbackKey.jwsString.name)
    }

    private func result(_ postback: Postback, _ signature: SignatureResult, field: String) -> VerificationResult {
        let valid = signature.verdict == .valid
        return VerificationResult(
            verdict: signature.verdict,
            kind: postback.kind,
            field: valid ? nil : field,
            reason: signature.reason,
            postback: postback,
            identity: postback.identity,
            keyName: signature.keyName,
            testMode: signature.testMode,
            verifiedWithoutSourceAppID: signature.verifiedWithoutSourceAppID,
            development: signature.development,
            warnings: valid ? postback.warnings : []
        )
    }

    /// Verifies the signature of a well-formed SKAdNetwork postback with the keys for its
    /// version.
    public func verifySignature(of postback: SKANPostback) -> SignatureResult {
        let curve = postback.version.curve
        let keys = keyRing.keys(for: curve)
        guard !keys.isEmpty else {
            return invalid(
                .attributionSignature,
                "no \(curve) key is loaded, so version \(postback.version) cannot be verified (a --keys folder needs \(curve.rawValue).pem)"
            )
        }
        guard let signature = Base64.decode(postback.attributionSignature.utf8) else {
            return invalid(.attributionSignature, "not canonical base64")
        }
        guard signature.count <= curve.maximumDERSignatureLength else {
            return invalid(
                .attributionSignature,
                "\(signature.count) bytes; a \(curve) DER signature has at most \(curve.maximumDERSignatureLength)"
            )
        }
        switch check(signature, postback.signedMessage(), keys.map { ($0.name, $0.key) }) {
        case .verified(let name):
            return SignatureResult(verdict: .valid, keyName: name, testMode: postback.sourceAppID == 0)
        case .notDER:
            return invalid(.attributionSignature, "not a DER-encoded ECDSA signature")
        case .mismatch:
            break
        }
        if postback.sourceAppID == 0,
            case .verified(let name) = check(
                signature,
                postback.signedMessage(omittingSourceAppID: true),
                keys.map { ($0.name, $0.key) }
            )
        {
            return SignatureResult(verdict: .valid, keyName: name, testMode: true, verifiedWithoutSourceAppID: true)
        }
        return invalid(.attributionSignature, "does not verify with \(keys.map(\.name).joined(separator: ", "))")
    }

    /// Verifies an AdAttributionKit postback's JWS (ES256, key by `kid`).
    public func verifySignature(of postback: AAKPostback) -> SignatureResult {
        guard postback.algorithm == "ES256" else {
            return invalid(
                .jwsString,
                "JWS alg \"\(visible(postback.algorithm))\" is refused; AdAttributionKit postbacks are signed with ES256"
            )
        }
        guard let key = keyRing.aak[postback.keyID] else {
            let known = keyRing.aak.keys.sorted().joined(separator: ", ")
            return invalid(
                .jwsString,
                "no key for JWS kid \"\(visible(postback.keyID))\" (known: \(known.isEmpty ? "none" : known))"
            )
        }
        guard let raw = Base64.decode(postback.signatureSegment.utf8, alphabet: .url) else {
            return invalid(.jwsString, "the JWS signature segment is not canonical base64url")
        }
        guard raw.count == 2 * ECCurve.p256.coordinateLength, let der = ECDSASignatureEncoding.der(fromRaw: raw) else {
            return invalid(.jwsString, "the ES256 signature is \(raw.count) bytes; expected 64 (R‖S)")
        }
        switch check(der, Array(postback.signingInput.utf8), [(key.name, key.key)]) {
        case .verified(let name):
            return SignatureResult(verdict: .valid, keyName: name, development: key.isDevelopment)
        case .notDER, .mismatch:
            return invalid(.jwsString, "the JWS signature does not verify with \(key.name)")
        }
    }

    private enum KeyCheck {
        case verified(String)
        case mismatch
        case notDER
    }

    private func check(_ signature: [UInt8], _ message: [UInt8], _ keys: [(name: String, key: ECPublicKey)]) -> KeyCheck
    {
        let digest = ecdsa.sha256(message)
        for named in keys {
            switch ecdsa.verify(signature: signature, digest: digest, key: named.key) {
            case .verified: return .verified(named.name)
            case .notDER: return .notDER
            case .mismatch: continue
            }
        }
        return .mismatch
    }

    private func invalid(_ field: PostbackKey, _ reason: String) -> SignatureResult {
        SignatureResult(verdict: .invalid, keyName: nil, reason: "\(field.name): \(reason)")
    }
}

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
/// its header's `kid` names; any `alg` but ES256, any unknown `kid` and any `crit` (RFC 7515
/// §4.1.11: no extension is understood here) are refused.
// @unchecked: a verifier is used by one task at a time; VerifierPool hands it from task to task.
package final class PostbackVerifier: @unchecked Sendable {
    package let keyRing: KeyRing
    private let ecdsa: ECDSAVerifier

    /// - Parameter fixedBaseThreshold: uses of a key after which its signatures are verified
    ///   with its precomputed table (``ECDSAVerifier``).
    package init(keyRing: KeyRing, fixedBaseThreshold: Int = ECDSAVerifier.defaultFixedBaseThreshold) {
        self.keyRing = keyRing
        self.ecdsa = ECDSAVerifier(fixedBaseThreshold: fixedBaseThreshold)
    }

    /// Checks one entry as read from its file.
    ///
    /// - Parameters:
    ///   - bytes: the entry's bytes.
    ///   - problem: a reason the reader already refused the entry for.
    ///   - line: the line the entry starts on in its file, so JSON errors name the file's line.
    ///   - path: the kind of postback the place it arrived at takes (`serve`'s two report
    ///     paths), so that a body that is neither kind is told what that kind misses.
    package func check(
        _ bytes: UnsafeBufferPointer<UInt8>,
        problem: EntryReadProblem? = nil,
        line: Int = 1,
        path: PostbackKind? = nil
    )
        -> VerificationResult
    {
        finish(prepare(bytes, problem: problem, line: line, path: path), verified: nil)
    }

    /// Checks every entry of a batch held in `bytes`: the same results as
    /// ``check(_:problem:line:)-(UnsafeBufferPointer<UInt8>,_,_)`` one by one, but the likely
    /// signature check of every postback (as received, with the first key for its version or
    /// `kid`) is made for all of them at once, sharing the modular inversion
    /// (``ECDSAVerifier/verify(_:)``). A postback that does not verify that way takes the
    /// one-by-one path (other keys, test mode) for its verdict and reason.
    package func check(_ entries: [RawEntry], in bytes: UnsafeBufferPointer<UInt8>) -> [VerificationResult] {
        let prepared = entries.map { entry in
            prepare(
                UnsafeBufferPointer(rebasing: bytes[entry.range]),
                problem: entry.problem,
                line: entry.location.line
            )
        }
        var requests: [ECDSAVerifier.Request] = []
        var firstChecks: [(index: Int, valid: SignatureResult)] = []
        for (index, item) in prepared.enumerated() {
            switch item {
            case .done:
                continue
            case .skan(let postback):
                guard case .ready(let (signature, keys)) = signatureAndKeys(of: postback), let key = keys.first
                else { continue }
                requests.append(
                    .init(signature: signature, digest: ecdsa.sha256(postback.signedMessage()), key: key.key)
                )
                firstChecks.append((index, validSignature(of: postback, keyName: key.name)))
            case .aak(let postback):
                guard case .ready(let (signature, key)) = signatureAndKey(of: postback) else { continue }
                requests.append(
                    .init(signature: signature, digest: ecdsa.sha256(Array(postback.signingInput.utf8)), key: key.key)
                )
                firstChecks.append((index, validSignature(key: key)))
            }
        }
        var verified = [SignatureResult?](repeating: nil, count: prepared.count)
        for (check, first) in zip(ecdsa.verify(requests), firstChecks) where check == .verified {
            verified[first.index] = first.valid
        }
        return prepared.indices.map { finish(prepared[$0], verified: verified[$0]) }
    }

    /// The result of a prepared entry: `verified` when a batch already verified its signature,
    /// else its signature checked one by one (every key, test mode).
    private func finish(_ prepared: Prepared, verified: SignatureResult?) -> VerificationResult {
        switch prepared {
        case .done(let result): result
        case .skan(let postback): result(postback, verified ?? verifySignature(of: postback))
        case .aak(let postback): result(postback, verified ?? verifySignature(of: postback))
        }
    }

    /// An entry read as far as its signature.
    private enum Prepared {
        /// Refused before any signature check.
        case done(VerificationResult)
        case skan(SKANPostback)
        case aak(AAKPostback)
    }

    private func prepare(
        _ bytes: UnsafeBufferPointer<UInt8>,
        problem: EntryReadProblem?,
        line: Int,
        path: PostbackKind? = nil
    ) -> Prepared {
        if let problem {
            return .done(.rejected(PostbackProblem(problem), kind: nil, identity: PostbackIdentity()))
        }
        var scanner = JSONScanner(bytes)
        let document: JSONDocument
        do {
            document = try scanner.scanDocument()
        } catch {
            let position = lineAndColumn(of: error.offset, in: bytes)
            let reason =
                "not valid JSON at line \(line + position.line - 1), column \(position.column): \(error.message)"
            return .done(.rejected(PostbackProblem(.notJSON, reason), kind: nil, identity: PostbackIdentity()))
        }
        guard case .object(let members) = document else {
            let found = if case .other(let kind) = document { kind.name } else { "another value" }
            return .done(
                .rejected(
                    PostbackProblem(.wrongType, "expected a JSON object, found \(found)"),
                    kind: nil,
                    identity: PostbackIdentity()
                )
            )
        }
        let fields = FieldReader<PostbackKey>(bytes, members, requirement: "a postback")
        if fields.has(.jwsString) {
            let decoder = AAKPostbackDecoder(envelope: fields)
            do {
                return .aak(try decoder.decode())
            } catch {
                return .done(.rejected(error, kind: .aak, identity: decoder.identity))
            }
        }
        // A body is read as the kind its signature field says, wherever it arrived (networks
        // forward both kinds to one URL). One with neither, sent to the AdAttributionKit path,
        // lacks what that path takes: SKAdNetwork 1.0's missing fields would say nothing useful.
        if path == .aak && !fields.has(.attributionSignature) {
            return .done(
                .rejected(
                    PostbackProblem(
                        .missingField,
                        field: PostbackKey.jwsString.name,
                        "missing, but the AdAttributionKit path requires it: a postback sent there is {\"jws-string\": \"<compact JWS>\", …} (a SKAdNetwork postback, with its attribution-signature, goes to /.well-known/skadnetwork/report-attribution/)"
                    ),
                    kind: .aak,
                    identity: PostbackIdentity()
                )
            )
        }
        var decoder = SKANPostbackDecoder(fields)
        do {
            return .skan(try decoder.decode())
        } catch {
            return .done(.rejected(error, kind: .skan, identity: decoder.identity))
        }
    }

    /// The SHA-256 of `bytes`, with this verifier's OpenSSL context.
    package func sha256(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        ecdsa.sha256(UnsafeRawBufferPointer(bytes))
    }

    /// Checks one entry held in an array.
    package func check(_ bytes: [UInt8], problem: EntryReadProblem? = nil, line: Int = 1) -> VerificationResult {
        bytes.withUnsafeBufferPointer { check($0, problem: problem, line: line) }
    }

    private func result(_ postback: SKANPostback, _ signature: SignatureResult) -> VerificationResult {
        result(.skan(postback), signature, field: PostbackKey.attributionSignature.name)
    }

    private func result(_ postback: AAKPostback, _ signature: SignatureResult) -> VerificationResult {
        result(.aak(postback), signature, field: PostbackKey.jwsString.name)
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
    func verifySignature(of postback: SKANPostback) -> SignatureResult {
        let signature: [UInt8]
        let keys: [NamedKey]
        switch signatureAndKeys(of: postback) {
        case .ready(let found): (signature, keys) = found
        case .refused(let result): return result
        }
        switch check(signature, postback.signedMessage(), keys.map { ($0.name, $0.key) }) {
        case .verified(let name):
            return validSignature(of: postback, keyName: name)
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

    /// What checking a signature needs, or the verdict given before any key was tried (a
    /// failed signature is an outcome, not an error).
    private enum Prechecked<Found> {
        case ready(Found)
        case refused(SignatureResult)
    }

    /// The DER signature of a SKAdNetwork postback and the keys for its version.
    private func signatureAndKeys(of postback: SKANPostback) -> Prechecked<([UInt8], [NamedKey])> {
        let curve = postback.version.curve
        let keys = keyRing.keys(for: curve)
        guard !keys.isEmpty else {
            return refused(
                .attributionSignature,
                "no \(curve) key is loaded, so version \(postback.version) cannot be verified (a --keys folder needs \(curve.rawValue).pem)"
            )
        }
        guard let signature = Base64.decode(postback.attributionSignature.utf8) else {
            return refused(.attributionSignature, "not canonical base64")
        }
        guard signature.count <= curve.maximumDERSignatureLength else {
            return refused(
                .attributionSignature,
                "\(signature.count) bytes; a \(curve) DER signature has at most \(curve.maximumDERSignatureLength)"
            )
        }
        return .ready((signature, keys))
    }

    /// A SKAdNetwork signature that verified as received: test mode when `source-app-id` is 0.
    private func validSignature(of postback: SKANPostback, keyName: String) -> SignatureResult {
        SignatureResult(verdict: .valid, keyName: keyName, testMode: postback.sourceAppID == 0)
    }

    /// Verifies an AdAttributionKit postback's JWS (ES256, key by `kid`).
    func verifySignature(of postback: AAKPostback) -> SignatureResult {
        let der: [UInt8]
        let key: AAKKey
        switch signatureAndKey(of: postback) {
        case .ready(let found): (der, key) = found
        case .refused(let result): return result
        }
        switch check(der, Array(postback.signingInput.utf8), [(key.name, key.key)]) {
        case .verified:
            return validSignature(key: key)
        case .notDER, .mismatch:
            return invalid(.jwsString, "the JWS signature does not verify with \(key.name)")
        }
    }

    /// The JWS signature of an AdAttributionKit postback as DER, and the key its `kid` names.
    private func signatureAndKey(of postback: AAKPostback) -> Prechecked<([UInt8], AAKKey)> {
        guard postback.algorithm == "ES256" else {
            return refused(
                .jwsString,
                "JWS alg \"\(visible(postback.algorithm))\" is refused; AdAttributionKit postbacks are signed with ES256"
            )
        }
        if let critical = postback.criticalHeader {
            // RFC 7515 §4.1.11: a recipient that does not understand every extension `crit`
            // lists must refuse the JWS. Apple's headers carry only kid and alg.
            return refused(
                .jwsString,
                "the JWS header carries crit (\(visible(critical))), extensions that must be understood; postbackd understands none, so the JWS is refused (RFC 7515 §4.1.11)"
            )
        }
        guard let key = keyRing.aak[postback.keyID] else {
            let known = keyRing.aak.keys.sorted().joined(separator: ", ")
            return refused(
                .jwsString,
                "no key for JWS kid \"\(visible(postback.keyID))\" (known: \(known.isEmpty ? "none" : known))"
            )
        }
        guard let raw = Base64.decode(postback.signatureSegment.utf8, alphabet: .url) else {
            return refused(.jwsString, "the JWS signature segment is not canonical base64url")
        }
        guard raw.count == 2 * ECCurve.p256.coordinateLength, let der = ECDSASignatureEncoding.der(fromRaw: raw) else {
            return refused(.jwsString, "the ES256 signature is \(raw.count) bytes; expected 64 (R‖S)")
        }
        return .ready((der, key))
    }

    private func validSignature(key: AAKKey) -> SignatureResult {
        SignatureResult(verdict: .valid, keyName: key.name, development: key.isDevelopment)
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

    private func refused<Found>(_ field: PostbackKey, _ reason: String) -> Prechecked<Found> {
        .refused(invalid(field, reason))
    }

    private func invalid(_ field: PostbackKey, _ reason: String) -> SignatureResult {
        SignatureResult(verdict: .invalid, keyName: nil, reason: "\(field.name): \(reason)")
    }
}

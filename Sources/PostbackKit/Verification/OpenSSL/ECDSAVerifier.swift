import CPostbackdOpenSSL

/// What OpenSSL said about one signature.
package enum SignatureCheck: Sendable, Hashable {
    /// The signature verifies with the key.
    case verified
    /// A well-formed signature that does not verify with the key.
    case mismatch
    /// The bytes are not a DER-encoded ECDSA signature (OpenSSL also refuses non-minimal DER and
    /// trailing bytes).
    case notDER
}

/// Verifies ECDSA signatures over SHA-256 digests; one per thread.
///
/// Holds the mutable OpenSSL state a verification needs: a digest context, a big-number
/// context and, per key, an `EVP_PKEY_CTX` initialised for verification once and reused for
/// every signature (which is how `openssl speed` measures its verify rate).
///
/// A key that verifies many signatures switches to fixed-base verification: once it has been
/// used ``fixedBaseThreshold`` times, its table of precomputed multiples is built (once per
/// process, ``ECFixedBase``) and u1·G + u2·Q is computed as two fixed-base multiplications
/// with OpenSSL's EC arithmetic, with exactly OpenSSL's checks (strict DER, 0 < r, s < n, the
/// digest truncated to the order's length, x(R) mod n = r). A one-off verify never pays the
/// table's 25 ms. Not `Sendable`: give each worker its own (see ``VerifierPool``).
package final class ECDSAVerifier {
    /// Uses of one key, by this verifier, after which it verifies with the key's fixed-base
    /// table: the table costs about as much as 700 P-256 verifies and saves about half of each.
    static let defaultFixedBaseThreshold = 1024

    private struct KeyState {
        /// Keeps the key alive as long as its cached state (the dictionary is keyed by identity).
        let key: ECPublicKey
        var context: OpaquePointer?
        var uses = 0
        var fixedBase: ECFixedBase?
    }

    private let digestContext: OpaquePointer
    private let numberContext: OpaquePointer
    private var keys: [ObjectIdentifier: KeyState] = [:]
    private let fixedBaseThreshold: Int

    /// Creates a verifier with its own OpenSSL contexts.
    ///
    /// - Parameter fixedBaseThreshold: uses of a key after which it is verified through its
    ///   fixed-base table (0: from the first signature; `Int.max`: never).
    package init(fixedBaseThreshold: Int = ECDSAVerifier.defaultFixedBaseThreshold) {
        // Both fail only when the process is out of memory.
        guard let digest = EVP_MD_CTX_new(), let numbers = BN_CTX_new() else {
            fatalError("OpenSSL could not allocate a digest or big-number context")
        }
        digestContext = digest
        numberContext = numbers
        self.fixedBaseThreshold = fixedBaseThreshold
    }

    deinit {
        for state in keys.values { if let context = state.context { EVP_PKEY_CTX_free(context) } }
        BN_CTX_free(numberContext)
        EVP_MD_CTX_free(digestContext)
    }

    /// The SHA-256 digest of `message`.
    @inline(__always)
    package func sha256(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok =
            EVP_DigestInit_ex2(digestContext, SHA256Algorithm.shared.pointer, nil) == 1
            && EVP_DigestUpdate(digestContext, message.baseAddress, message.count) == 1
            && output.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(digestContext, $0.baseAddress, &length) } == 1
        if !ok { OpenSSLErrorQueue.clear() }
        return output
    }

    /// The SHA-256 digest of `message`.
    package func sha256(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { sha256($0) }
    }

    /// Checks a DER ECDSA `signature` over a SHA-256 `digest` with `key`.
    package func verify(signature: UnsafeRawBufferPointer, digest: [UInt8], key: ECPublicKey) -> SignatureCheck {
        if let base = fixedBase(for: key), let generator = ECFixedBase.generator(of: key.curve) {
            switch parseStrictly(signature, order: generator) {
            case .decided(let check):
                return check
            case .parsed(let parsed):
                defer { ECDSA_SIG_free(parsed) }
                if let check = finish(parsed, sInverse: nil, digest, key: base, generator: generator) { return check }
            case .failed:
                break
            }
        }
        return verifyThroughEVP(signature: signature, digest: digest, key: key)
    }

    /// One signature of a batch: DER `signature` over a SHA-256 `digest` by `key`.
    package struct Request {
        package var signature: [UInt8]
        package var digest: [UInt8]
        package var key: ECPublicKey

        package init(signature: [UInt8], digest: [UInt8], key: ECPublicKey) {
            self.signature = signature
            self.digest = digest
            self.key = key
        }
    }

    /// Checks many signatures; the same verdicts as ``verify(signature:digest:key:)`` one by one.
    ///
    /// Fixed-base verification needs s⁻¹ mod n for every signature, a modular inversion that
    /// costs a third of the rest of the verify (about 13 µs on P-256). Here the signatures of
    /// each curve share one inversion (Montgomery's trick: invert the product of all the s
    /// values, then recover each inverse with two multiplications).
    package func verify(_ requests: [Request]) -> [SignatureCheck] {
        var results = [SignatureCheck?](repeating: nil, count: requests.count)
        for curve in ECCurve.allCases {
            guard let generator = ECFixedBase.generator(of: curve) else { continue }
            var batch: [(index: Int, parsed: OpaquePointer, key: ECFixedBase)] = []
            defer { for item in batch { ECDSA_SIG_free(item.parsed) } }
            for (index, request) in requests.enumerated() where request.key.curve == curve {
                guard let base = fixedBase(for: request.key) else { continue }
                switch request.signature.withUnsafeBytes({ parseStrictly($0, order: generator) }) {
                case .decided(let check): results[index] = check
                case .parsed(let parsed): batch.append((index, parsed, base))
                case .failed: break
                }
            }
            let inverses = batchInverses(batch.map { ECDSA_SIG_get0_s($0.parsed) }, generator: generator)
            defer { for inverse in inverses { BN_free(inverse) } }
            for (position, item) in batch.enumerated() {
                let inverse = inverses.count == batch.count ? inverses[position] : nil
                results[item.index] = finish(
                    item.parsed,
                    sInverse: inverse,
                    requests[item.index].digest,
                    key: item.key,
                    generator: generator
                )
            }
        }
        // Keys below the threshold, and any signature OpenSSL failed on, go through EVP.
        return requests.indices.map { index in
            results[index]
                ?? requests[index].signature.withUnsafeBytes {
                    verifyThroughEVP(signature: $0, digest: requests[index].digest, key: requests[index].key)
                }
        }
    }

    /// The inverses mod n of `values` (each in 1..<n), through one modular inversion; empty
    /// when OpenSSL fails (each signature then inverts its own).
    private func batchInverses(_ values: [OpaquePointer?], generator: ECFixedBase) -> [OpaquePointer] {
        guard !values.isEmpty, let order = EC_GROUP_get0_order(generator.group) else { return [] }
        let context = numberContext
        // prefix[i] = values[0] · … · values[i] mod n
        var prefix: [OpaquePointer] = []
        defer { for value in prefix { BN_free(value) } }
        for value in values {
            guard let value, let product = BN_dup(prefix.last ?? value) else { return [] }
            prefix.append(product)
            if prefix.count > 1, BN_mod_mul(product, product, value, order, context) != 1 { return [] }
        }
        guard let running = BN_new() else { return [] }
        defer { BN_free(running) }
        guard let last = prefix.last, BN_mod_inverse(running, last, order, context) != nil else {
            OpenSSLErrorQueue.clear()
            return []
        }
        // Walking back: running = (values[0] · … · values[i])⁻¹, so values[i]⁻¹ = running · prefix[i-1].
        var inverses = [OpaquePointer?](repeating: nil, count: values.count)
        var complete = true
        for index in stride(from: values.count - 1, through: 0, by: -1) {
            guard let inverse = BN_new() else {
                complete = false
                break
            }
            inverses[index] = inverse
            if index == 0 {
                complete = BN_copy(inverse, running) != nil
            } else {
                complete =
                    BN_mod_mul(inverse, running, prefix[index - 1], order, context) == 1
                    && BN_mod_mul(running, running, values[index], order, context) == 1
            }
            if !complete { break }
        }
        let built = inverses.compactMap { $0 }
        guard complete, built.count == values.count else {
            for inverse in built { BN_free(inverse) }
            return []
        }
        return built
    }

    /// The key's fixed-base table once this verifier has used the key more than
    /// ``fixedBaseThreshold`` times; nil before, or when there is none.
    private func fixedBase(for key: ECPublicKey) -> ECFixedBase? {
        let threshold = fixedBaseThreshold
        return withState(of: key) { state in
            state.uses += 1
            if state.fixedBase == nil && state.uses > threshold {
                state.fixedBase = key.fixedBase
            }
            return state.fixedBase
        }
    }

    /// Runs `body` on what this verifier keeps for `key`, in place.
    private func withState<Result>(of key: ECPublicKey, _ body: (inout KeyState) -> Result) -> Result {
        body(&keys[ObjectIdentifier(key), default: KeyState(key: key)])
    }

    private func verifyThroughEVP(
        signature: UnsafeRawBufferPointer,
        digest: [UInt8],
        key: ECPublicKey
    )
        -> SignatureCheck
    {
        let verifyContext = withState(of: key) { state in
            if state.context == nil { state.context = Self.verifyContext(for: key) }
            return state.context
        }
        guard let context = verifyContext else { return .mismatch }
        let status = digest.withUnsafeBufferPointer { digestBuffer in
            EVP_PKEY_verify(
                context,
                signature.baseAddress?.assumingMemoryBound(to: UInt8.self),
                signature.count,
                digestBuffer.baseAddress,
                digestBuffer.count
            )
        }
        switch status {
        case 1:
            return .verified
        case 0:
            OpenSSLErrorQueue.clear()
            return .mismatch
        default:
            OpenSSLErrorQueue.clear()
            return .notDER
        }
    }

    /// Checks a DER ECDSA `signature` over a SHA-256 `digest` with `key`.
    package func verify(signature: [UInt8], digest: [UInt8], key: ECPublicKey) -> SignatureCheck {
        signature.withUnsafeBytes { verify(signature: $0, digest: digest, key: key) }
    }

    private static func verifyContext(for key: ECPublicKey) -> OpaquePointer? {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        guard EVP_PKEY_verify_init(context) == 1 else {
            EVP_PKEY_CTX_free(context)
            OpenSSLErrorQueue.clear()
            return nil
        }
        return context
    }

    private enum ParsedSignature {
        /// The verdict is known from the encoding alone.
        case decided(SignatureCheck)
        /// A well-formed signature with 0 < r, s < n (the caller frees it).
        case parsed(OpaquePointer)
        /// OpenSSL failed for want of memory.
        case failed
    }

    /// Reads a DER signature as OpenSSL's `ECDSA_verify` does: parse, encode again and refuse
    /// any difference (non-minimal integers, trailing bytes); then r and s must lie in 1..<n.
    private func parseStrictly(_ signature: UnsafeRawBufferPointer, order generator: ECFixedBase) -> ParsedSignature {
        defer { OpenSSLErrorQueue.clear() }
        guard let start = signature.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return .decided(.notDER) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(start)
        guard let parsed = d2i_ECDSA_SIG(nil, &cursor, signature.count) else { return .decided(.notDER) }
        var encoded: UnsafeMutablePointer<UInt8>? = nil
        let encodedLength = i2d_ECDSA_SIG(parsed, &encoded)
        guard encodedLength > 0, let encoded else {
            ECDSA_SIG_free(parsed)
            return .failed
        }
        defer { CPostbackdOpenSSL_free(encoded) }
        let reencoded = UnsafeBufferPointer(start: encoded, count: Int(encodedLength))
        guard reencoded.elementsEqual(UnsafeBufferPointer(start: start, count: signature.count)) else {
            ECDSA_SIG_free(parsed)
            return .decided(.notDER)
        }
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed),
            let order = EC_GROUP_get0_order(generator.group)
        else {
            ECDSA_SIG_free(parsed)
            return .failed
        }
        for value in [r, s] where BN_is_zero(value) == 1 || BN_is_negative(value) == 1 || BN_ucmp(value, order) >= 0 {
            ECDSA_SIG_free(parsed)
            return .decided(.mismatch)
        }
        return .parsed(parsed)
    }

    /// The rest of ECDSA verification (SEC 1 section 4.1.4) for a strictly parsed signature,
    /// with both points multiplied through their precomputed tables: u1 = e·s⁻¹, u2 = r·s⁻¹
    /// mod n, R = u1·G + u2·Q, valid when R is not infinity and x(R) mod n = r.
    ///
    /// - Parameter sInverse: s⁻¹ mod n when a batch computed it; nil inverts s here.
    /// - Returns: nil when OpenSSL fails for want of memory (the caller falls back to
    ///   `EVP_PKEY_verify`).
    private func finish(
        _ parsed: OpaquePointer,
        sInverse known: OpaquePointer?,
        _ digest: [UInt8],
        key: ECFixedBase,
        generator: ECFixedBase
    ) -> SignatureCheck? {
        defer { OpenSSLErrorQueue.clear() }
        let group = generator.group
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed),
            let order = EC_GROUP_get0_order(group)
        else { return nil }
        let context = numberContext
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        let message = BN_CTX_get(context)
        let computedInverse = BN_CTX_get(context)
        let u1 = BN_CTX_get(context)
        let u2 = BN_CTX_get(context)
        guard let x = BN_CTX_get(context) else { return nil }

        // The digest's leftmost bits, as many as the order has (P-192 keeps 192 of SHA-256's 256).
        let orderBits = Int(BN_num_bits(order))
        let digestLength = min(digest.count, (orderBits + 7) / 8)
        guard digest.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32(digestLength), message) }) != nil
        else { return nil }
        if 8 * digestLength > orderBits, BN_rshift(message, message, Int32(8 * digestLength - orderBits)) != 1 {
            return nil
        }

        let sInverse: OpaquePointer
        if let known {
            sInverse = known
        } else {
            guard let computedInverse else { return nil }
            if let inverter = OrderInverter.forCurve(generator.curve) {
                guard inverter.invert(s, into: computedInverse, context: context) else { return nil }
            } else if BN_mod_inverse(computedInverse, s, order, context) == nil {
                return nil
            }
            sInverse = computedInverse
        }
        guard BN_mod_mul(u1, message, sInverse, order, context) == 1,
            BN_mod_mul(u2, r, sInverse, order, context) == 1,
            let point = EC_POINT_new(group)
        else { return nil }
        defer { EC_POINT_free(point) }
        guard let keyMultiple = EC_POINT_new(group) else { return nil }
        defer { EC_POINT_free(keyMultiple) }
        guard EC_POINT_mul(group, point, u1, nil, nil, context) == 1,
            EC_POINT_mul(key.group, keyMultiple, u2, nil, nil, context) == 1,
            EC_POINT_add(group, point, point, keyMultiple, context) == 1
        else { return nil }
        if EC_POINT_is_at_infinity(group, point) == 1 { return .mismatch }
        guard EC_POINT_get_affine_coordinates(group, point, x, nil, context) == 1,
            BN_nnmod(x, x, order, context) == 1
        else { return nil }
        return BN_ucmp(x, r) == 0 ? .verified : .mismatch
    }
}

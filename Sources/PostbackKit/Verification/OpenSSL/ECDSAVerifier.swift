import CPostbackdOpenSSL

/// What OpenSSL said about one signature.
public enum SignatureCheck: Sendable, Hashable {
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
public final class ECDSAVerifier {
    /// Uses of one key, by this verifier, after which it verifies with the key's fixed-base
    /// table: the table costs about as much as 700 P-256 verifies and saves about half of each.
    public static let defaultFixedBaseThreshold = 1024

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
    public init(fixedBaseThreshold: Int = ECDSAVerifier.defaultFixedBaseThreshold) {
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
    public func sha256(_ message: UnsafeRawBufferPointer) -> [UInt8] {
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
    public func sha256(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { sha256($0) }
    }

    /// Checks a DER ECDSA `signature` over a SHA-256 `digest` with `key`.
    public func verify(signature: UnsafeRawBufferPointer, digest: [UInt8], key: ECPublicKey) -> SignatureCheck {
        let id = ObjectIdentifier(key)
        var state = keys.removeValue(forKey: id) ?? KeyState(key: key)
        defer { keys[id] = state }
        state.uses += 1
        if state.fixedBase == nil && state.uses > fixedBaseThreshold {
            state.fixedBase = key.fixedBase
        }
        if let base = state.fixedBase, let generator = ECFixedBase.generator(of: key.curve),
            let check = verifyWithFixedBases(signature, digest, key: base, generator: generator)
        {
            return check
        }
        if state.context == nil { state.context = Self.verifyContext(for: key) }
        guard let context = state.context else { return .mismatch }
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
    public func verify(signature: [UInt8], digest: [UInt8], key: ECPublicKey) -> SignatureCheck {
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

    /// ECDSA verification (SEC 1 section 4.1.4) with both points multiplied through their
    /// precomputed tables, checking exactly what OpenSSL's `ECDSA_verify` checks.
    ///
    /// Returns nil when OpenSSL fails for want of memory, so that the caller falls back to
    /// `EVP_PKEY_verify`.
    private func verifyWithFixedBases(
        _ signature: UnsafeRawBufferPointer,
        _ digest: [UInt8],
        key: ECFixedBase,
        generator: ECFixedBase
    ) -> SignatureCheck? {
        defer { OpenSSLErrorQueue.clear() }
        // Strict DER as ECDSA_verify wants it: parse, encode again, and refuse any difference
        // (non-minimal integers, trailing bytes).
        guard let start = signature.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return .notDER }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(start)
        guard let parsed = d2i_ECDSA_SIG(nil, &cursor, signature.count) else { return .notDER }
        defer { ECDSA_SIG_free(parsed) }
        var encoded: UnsafeMutablePointer<UInt8>? = nil
        let encodedLength = i2d_ECDSA_SIG(parsed, &encoded)
        guard encodedLength > 0, let encoded else { return nil }
        defer { CPostbackdOpenSSL_free(encoded) }
        let reencoded = UnsafeBufferPointer(start: encoded, count: Int(encodedLength))
        guard reencoded.elementsEqual(UnsafeBufferPointer(start: start, count: signature.count)) else {
            return .notDER
        }

        let group = generator.group
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed),
            let order = EC_GROUP_get0_order(group)
        else { return nil }
        for value in [r, s] where BN_is_zero(value) == 1 || BN_is_negative(value) == 1 || BN_ucmp(value, order) >= 0 {
            return .mismatch
        }

        let context = numberContext
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        let message = BN_CTX_get(context)
        let sInverse = BN_CTX_get(context)
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

        // u1 = e·s⁻¹ mod n, u2 = r·s⁻¹ mod n, R = u1·G + u2·Q.
        guard BN_mod_inverse(sInverse, s, order, context) != nil,
            BN_mod_mul(u1, message, sInverse, order, context) == 1,
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

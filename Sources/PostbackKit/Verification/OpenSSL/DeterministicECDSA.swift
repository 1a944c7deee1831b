import CPostbackdOpenSSL

/// ECDSA signing with RFC 6979 deterministic nonces, built from OpenSSL's big-number and
/// curve primitives.
///
/// OpenSSL 3.0 (Debian 12's) signs with a random nonce; `postbackd generate` promises the same
/// file for the same seed, which needs the same signature for the same message and key.
/// RFC 6979 derives the nonce from the key and the digest with HMAC-SHA-256 (its published
/// test vectors for P-192 and P-256 are checked by the test suite).
enum DeterministicECDSA {
    /// Signs a SHA-256 `digest` with the private key of `key` and returns DER.
    static func sign(digest: [UInt8], key: OpaquePointer, curve: ECCurve) -> [UInt8]? {
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        let nid = curve == .p256 ? NID_X9_62_prime256v1 : NID_X9_62_prime192v1
        guard let group = EC_GROUP_new_by_curve_name(nid) else { return nil }
        defer { EC_GROUP_free(group) }
        guard let order = EC_GROUP_get0_order(group) else { return nil }
        var privateScalar: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(key, "priv", &privateScalar) == 1, let d = privateScalar else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { BN_clear_free(d) }

        let qlen = Int(BN_num_bits(order))
        let rlen = (qlen + 7) / 8
        let x = octets(d, rlen)
        guard let e = bits2int(digest, qlen) else { return nil }
        defer { BN_free(e) }
        guard let h1 = reduced(e, order, context) else { return nil }
        let h1Octets = octets(h1, rlen)
        BN_free(h1)

        // RFC 6979 section 3.2, steps b–f.
        var v = [UInt8](repeating: 0x01, count: 32)
        var k = [UInt8](repeating: 0x00, count: 32)
        k = hmac(k, v + [0x00] + x + h1Octets)
        v = hmac(k, v)
        k = hmac(k, v + [0x01] + x + h1Octets)
        v = hmac(k, v)

        for _ in 0..<64 {
            // Step h: generate T until it holds qlen bits; k = bits2int(T).
            var t: [UInt8] = []
            while t.count * 8 < qlen {
                v = hmac(k, v)
                t += v
            }
            if let nonce = bits2int(t, qlen) {
                defer { BN_clear_free(nonce) }
                if BN_is_zero(nonce) == 0 && BN_cmp(nonce, order) < 0,
                    let signature = signature(nonce: nonce, e: e, d: d, order: order, group: group, context: context)
                {
                    return signature
                }
            }
            k = hmac(k, v + [0x00])
            v = hmac(k, v)
        }
        return nil
    }

    /// r = (k·G).x mod n, s = k⁻¹(e + r·d) mod n, as DER; nil if r or s is 0 (try the next k).
    private static func signature(
        nonce: OpaquePointer,
        e: OpaquePointer,
        d: OpaquePointer,
        order: OpaquePointer,
        group: OpaquePointer,
        context: OpaquePointer
    ) -> [UInt8]? {
        guard let point = EC_POINT_new(group) else { return nil }
        defer { EC_POINT_free(point) }
        guard let x = BN_new(), let r = BN_new(), let s = BN_new(), let product = BN_new() else { return nil }
        defer { BN_free(x) }
        defer { BN_free(product) }
        var rOwned = true
        var sOwned = true
        defer {
            if rOwned { BN_free(r) }
            if sOwned { BN_free(s) }
        }
        guard EC_POINT_mul(group, point, nonce, nil, nil, context) == 1,
            EC_POINT_get_affine_coordinates(group, point, x, nil, context) == 1,
            BN_nnmod(r, x, order, context) == 1, BN_is_zero(r) == 0,
            let inverse = BN_mod_inverse(nil, nonce, order, context)
        else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { BN_clear_free(inverse) }
        guard BN_mod_mul(product, r, d, order, context) == 1,
            BN_mod_add(product, product, e, order, context) == 1,
            BN_mod_mul(s, inverse, product, order, context) == 1, BN_is_zero(s) == 0,
            let ecdsa = ECDSA_SIG_new()
        else { return nil }
        defer { ECDSA_SIG_free(ecdsa) }
        guard ECDSA_SIG_set0(ecdsa, r, s) == 1 else { return nil }
        rOwned = false
        sOwned = false
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(ecdsa, &der)
        guard length > 0, let der else { return nil }
        defer { CPostbackdOpenSSL_free(der) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// RFC 6979 bits2int: the leftmost `qlen` bits of `bytes` as an integer.
    private static func bits2int(_ bytes: [UInt8], _ qlen: Int) -> OpaquePointer? {
        guard let value = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            return nil
        }
        let excess = bytes.count * 8 - qlen
        if excess > 0 { BN_rshift(value, value, Int32(excess)) }
        return value
    }

    private static func reduced(
        _ value: OpaquePointer,
        _ order: OpaquePointer,
        _ context: OpaquePointer
    ) -> OpaquePointer? {
        guard let result = BN_new() else { return nil }
        guard BN_nnmod(result, value, order, context) == 1 else {
            BN_free(result)
            return nil
        }
        return result
    }

    /// RFC 6979 int2octets: big-endian, left-padded to `length` bytes.
    private static func octets(_ value: OpaquePointer, _ length: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        _ = out.withUnsafeMutableBufferPointer { BN_bn2binpad(value, $0.baseAddress, Int32(length)) }
        return out
    }

    private static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBuffer in
            data.withUnsafeBufferPointer { dataBuffer in
                out.withUnsafeMutableBufferPointer { outBuffer in
                    _ = HMAC(
                        EVP_sha256(),
                        keyBuffer.baseAddress,
                        Int32(keyBuffer.count),
                        dataBuffer.baseAddress,
                        dataBuffer.count,
                        outBuffer.baseAddress,
                        &length
                    )
                }
            }
        }
        return out
    }
}

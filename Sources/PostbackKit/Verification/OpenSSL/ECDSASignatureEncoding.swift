import CPostbackdOpenSSL

/// Conversions between ECDSA signature encodings.
package enum ECDSASignatureEncoding {
    /// Converts a raw `R‖S` signature (JWS ES256: 64 bytes) to the DER SEQUENCE OpenSSL
    /// verifies. Returns nil when the length is odd or OpenSSL cannot encode it.
    package static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard !raw.isEmpty, raw.count % 2 == 0 else { return nil }
        let half = raw.count / 2
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(half), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + half }, Int32(half), nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(signature, &der)
        guard length > 0, let der else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { CPostbackdOpenSSL_free(der) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// Converts a DER ECDSA signature to raw `R‖S` with each half `coordinateLength` bytes
    /// (for signing JWS test postbacks).
    package static func raw(fromDER der: [UInt8], coordinateLength: Int) -> [UInt8]? {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else { return nil }
        var out = [UInt8](repeating: 0, count: coordinateLength * 2)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, Int32(coordinateLength)) == coordinateLength
                && BN_bn2binpad(s, base + coordinateLength, Int32(coordinateLength)) == coordinateLength
        }
        return ok ? out : nil
    }
}

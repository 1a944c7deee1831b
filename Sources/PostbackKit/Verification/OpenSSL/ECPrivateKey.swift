import CPostbackdOpenSSL

/// An elliptic-curve private key, for signing test postbacks (`postbackd generate`, tests).
///
/// Apple's private keys are, of course, not available: postbacks signed with this type verify
/// only against the matching public key passed with `--keys`.
// @unchecked: the EVP_PKEY is immutable after init; each signature uses its own EVP_PKEY_CTX.
package final class ECPrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The curve the key lies on.
    package let curve: ECCurve
    /// The matching public key.
    package let publicKey: ECPublicKey

    /// Reads a key from a PEM `PRIVATE KEY` or `EC PRIVATE KEY` block.
    package init(pemRepresentation pem: String) throws {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            OpenSSLErrorQueue.clear()
            throw PostbackKitError(.unreadable, "not a PEM private key")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, let curve = openSSLCurve(of: key) else {
            EVP_PKEY_free(key)
            throw PostbackKitError(.unsupportedCurve, "not a P-192 or P-256 private key")
        }
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(key, &der)
        guard length > 0, let der else {
            EVP_PKEY_free(key)
            throw PostbackKitError(.unreadable, "could not derive the public key")
        }
        let publicDER = Array(UnsafeBufferPointer(start: der, count: Int(length)))
        CPostbackdOpenSSL_free(der)
        self.pointer = key
        self.curve = curve
        self.publicKey = try ECPublicKey(derRepresentation: publicDER)
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Signs a SHA-256 digest and returns the DER ECDSA signature.
    ///
    /// The nonce is derived from the key and the digest (RFC 6979), so the same message and key
    /// always give the same signature.
    package func signature(forDigest digest: [UInt8]) throws -> [UInt8] {
        guard let signature = DeterministicECDSA.sign(digest: digest, key: pointer, curve: curve) else {
            OpenSSLErrorQueue.clear()
            throw PostbackKitError(.unreadable, "OpenSSL failed to sign")
        }
        return signature
    }

    /// Signs `message` (hashed with SHA-256) and returns the DER ECDSA signature.
    package func signature<Message: Collection<UInt8>>(for message: Message) throws -> [UInt8] {
        try signature(forDigest: SHA256Digest.hash(message))
    }
}

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
/// Holds the mutable OpenSSL state a verification needs: a digest context and one
/// `EVP_PKEY_CTX` per key, initialised for verification once and reused for every signature,
/// which is how `openssl speed` measures its verify rate. Not `Sendable`: give each worker its
/// own (see ``VerifierPool``).
public final class ECDSAVerifier {
    private let digestContext: OpaquePointer
    private var keyContexts: [ObjectIdentifier: OpaquePointer] = [:]
    /// Keeps every key whose context is cached alive as long as the context.
    private var retainedKeys: [ECPublicKey] = []

    /// Creates a verifier with its own OpenSSL contexts.
    public init() {
        // EVP_MD_CTX_new fails only when the process is out of memory.
        guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest context") }
        digestContext = context
    }

    deinit {
        for context in keyContexts.values { EVP_PKEY_CTX_free(context) }
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
        guard let context = context(for: key) else { return .mismatch }
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

    private func context(for key: ECPublicKey) -> OpaquePointer? {
        let id = ObjectIdentifier(key)
        if let context = keyContexts[id] { return context }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        guard EVP_PKEY_verify_init(context) == 1 else {
            EVP_PKEY_CTX_free(context)
            OpenSSLErrorQueue.clear()
            return nil
        }
        keyContexts[id] = context
        retainedKeys.append(key)
        return context
    }
}

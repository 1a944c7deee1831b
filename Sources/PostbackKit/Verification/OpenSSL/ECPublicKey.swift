import CPostbackdOpenSSL
import Synchronization

/// An elliptic-curve public key parsed once by OpenSSL and shared by every verifier.
///
/// Parsing a key costs more than one verify, so a key is parsed when it is loaded and never
/// again.
// @unchecked: the EVP_PKEY is never mutated after init; OpenSSL 3 locks its internal caches,
// and each thread verifies through its own EVP_PKEY_CTX.
package final class ECPublicKey: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The curve the key lies on.
    package let curve: ECCurve
    /// The key as DER SubjectPublicKeyInfo.
    package let derRepresentation: [UInt8]
    /// The key's table of precomputed multiples, built on first request (about 25 ms on
    /// P-256): `.none` until then, `.some(nil)` when OpenSSL could not build one.
    private let fixedBaseTable = Mutex<ECFixedBase??>(.none)

    /// Reads a key from a PEM `PUBLIC KEY` block.
    package convenience init(pemRepresentation pem: String) throws {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        try self.init(taking: key, source: "PEM")
    }

    /// Reads a key from DER SubjectPublicKeyInfo bytes.
    package convenience init(derRepresentation der: [UInt8]) throws {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        try self.init(taking: key, source: "DER")
    }

    private init(taking key: OpaquePointer?, source: String) throws {
        guard let key else {
            let detail = OpenSSLErrorQueue.drain().first.map { " (\($0))" } ?? ""
            throw PostbackKitError(.unreadable, "not a \(source) public key\(detail)")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw PostbackKitError(.notECKey, "not an elliptic-curve key")
        }
        guard let curve = openSSLCurve(of: key) else {
            EVP_PKEY_free(key)
            throw PostbackKitError(.unsupportedCurve, "the key is on a curve other than P-192 or P-256")
        }
        self.pointer = key
        self.curve = curve
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(key, &der)
        if length > 0, let der {
            self.derRepresentation = Array(UnsafeBufferPointer(start: der, count: Int(length)))
            CPostbackdOpenSSL_free(der)
        } else {
            self.derRepresentation = []
        }
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// The key's point with its precomputed multiples, for fast verification of many
    /// signatures (``ECFixedBase``); built once, by the first caller, and shared.
    package var fixedBase: ECFixedBase? {
        fixedBaseTable.withLock { table in
            if let built = table { return built }
            let built = ECFixedBase(publicKey: pointer, curve: curve)
            table = .some(built)
            return built
        }
    }
}

/// The named curve of an EC key, if it is one postbacks use.
func openSSLCurve(of key: OpaquePointer) -> ECCurve? {
    var name = [CChar](repeating: 0, count: 64)
    var length = 0
    guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return nil }
    return ECCurve(openSSLGroupName: String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
}

import CPostbackdOpenSSL

/// A SHA-256 digest.
package struct SHA256Digest: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    package let bytes: [UInt8]

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The digest of `message`.
    package init<Message: Collection<UInt8>>(hashing message: Message) {
        self.bytes = Self.hash(message)
    }

    /// Lower-case hexadecimal, as `sha256sum` prints it.
    package var description: String {
        hexString(bytes)
    }

    /// Hashes `message` through OpenSSL with a one-off context. Hot paths use
    /// ``ECDSAVerifier/sha256(_:)`` instead, which reuses its context.
    package static func hash<Message: Collection<UInt8>>(_ message: Message) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let bytes = Array(message)
        let status = bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                EVP_Digest(
                    input.baseAddress,
                    input.count,
                    out.baseAddress,
                    &length,
                    SHA256Algorithm.shared.pointer,
                    nil
                )
            }
        }
        // EVP_Digest fails only when OpenSSL cannot allocate; a zero digest then fails every verify.
        if status != 1 { OpenSSLErrorQueue.clear() }
        return output
    }
}

/// OpenSSL's SHA-256 implementation, fetched from the default provider once per process.
// @unchecked: a fetched EVP_MD is immutable and documented as shareable between threads.
final class SHA256Algorithm: @unchecked Sendable {
    static let shared = SHA256Algorithm()

    let pointer: OpaquePointer?

    private init() {
        pointer = EVP_MD_fetch(nil, "SHA256", nil)
    }

    deinit {
        EVP_MD_free(pointer)
    }
}

package func hexString<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The bytes of lower- or upper-case hex text of at most `maximumCount` bytes; nil for anything
/// else.
package func bytesFromHex(_ text: String, maximumCount: Int = 64) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0, utf8.count <= maximumCount * 2 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count / 2)
    var index = 0
    while index < utf8.count {
        guard let high = hexDigitValue(utf8[index]), let low = hexDigitValue(utf8[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
        index += 2
    }
    return bytes
}

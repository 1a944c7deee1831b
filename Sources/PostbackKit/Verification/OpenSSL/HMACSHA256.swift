import CPostbackdOpenSSL

/// HMAC-SHA256 through OpenSSL: how `forward` signs what it delivers.
package enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`.
    static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                output.withUnsafeMutableBufferPointer { out in
                    _ = HMAC(
                        EVP_sha256(),
                        keyBytes.baseAddress,
                        Int32(keyBytes.count),
                        messageBytes.baseAddress,
                        messageBytes.count,
                        out.baseAddress,
                        &length
                    )
                }
            }
        }
        return Array(output.prefix(Int(length)))
    }

    /// The MAC in lower-case hex.
    package static func hex(key: [UInt8], message: [UInt8]) -> String {
        hexString(mac(key: key, message: message))
    }
}

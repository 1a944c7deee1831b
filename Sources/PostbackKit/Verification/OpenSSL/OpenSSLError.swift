import CPostbackdOpenSSL

/// Reads and clears this thread's OpenSSL error queue.
///
/// OpenSSL keeps errors in a per-thread queue; a failed verify pushes entries that would grow
/// without bound in a long batch unless they are drained after every failure.
enum OpenSSLErrorQueue {
    /// The queued error strings (oldest first), leaving the queue empty.
    static func drain() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages
    }

    /// Empties the queue without reading it.
    @inline(__always)
    static func clear() {
        ERR_clear_error()
    }
}

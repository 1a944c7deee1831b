import PostbackKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What `serve` stores (and logs) of the address a postback came from
/// (`serve --client-address`). A device's address is personal data; the networks' peers that
/// receive postbacks (OpenMASU, hush) store none. postbackd keeps it by default, since an
/// operator may need it to trace abuse, and offers less:
/// - `keep`: the address as received;
/// - `truncate`: its network, IPv4 /24 or IPv6 /48 (`203.0.113.0/24`, `2001:db8:1::/48`):
///   enough to see a burst from one network, not to name a device;
/// - `hash`: `hmac-sha256:` and the HMAC-SHA256 of the address under a secret, so that one
///   address can be recognised across rows, while without the secret it cannot be found by
///   hashing all 2³² IPv4 addresses;
/// - `drop`: nothing.
///
/// `postbackd prune-addresses` clears the stored addresses of older rows.
package enum ClientAddressPolicy: Sendable, Hashable {
    case keep
    case truncate
    case hash(key: [UInt8])
    case drop

    package static let names = ["keep", "truncate", "hash", "drop"]

    /// What is stored of `address`: nil for nothing. A truncated address that is not an IP
    /// address (a proxy header's odd entry) stores nothing.
    package func stored(_ address: String?) -> String? {
        guard let address else { return nil }
        switch self {
        case .keep:
            return address
        case .drop:
            return nil
        case .truncate:
            return IPAddress(address).map { $0.network }
        case .hash(let key):
            // The same address however it was spelled (IPv6 has many spellings).
            let canonical = IPAddress(address)?.text ?? address
            return "hmac-sha256:" + HMACSHA256.hex(key: key, message: Array(canonical.utf8))
        }
    }
}

/// An IPv4 or IPv6 address, parsed by the C library's `inet_pton`.
struct IPAddress: Sendable, Hashable {
    /// 4 bytes (IPv4, and an IPv4-mapped IPv6 address) or 16 (IPv6).
    var bytes: [UInt8]

    init?(_ text: String) {
        // An IPv6 zone (`fe80::1%eth0`) names an interface of the server, not the client.
        let plain = String(text.prefix { $0 != "%" })
        var v4 = in_addr()
        if inet_pton(AF_INET, plain, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, plain, &v6) == 1 else { return nil }
        let all = withUnsafeBytes(of: &v6) { Array($0) }
        // ::ffff:a.b.c.d is an IPv4 client on a dual-stack socket.
        if all[0..<10].allSatisfy({ $0 == 0 }) && all[10] == 0xFF && all[11] == 0xFF {
            bytes = Array(all[12..<16])
        } else {
            bytes = all
        }
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The address as `inet_ntop` writes it (IPv6 in its shortest form).
    var text: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The /24 (IPv4) or /48 (IPv6) network, with its prefix length.
    var network: String {
        let kept = bytes.count == 4 ? 3 : 6
        var masked = bytes
        for index in kept..<masked.count { masked[index] = 0 }
        return IPAddress(bytes: masked).text + (bytes.count == 4 ? "/24" : "/48")
    }
}

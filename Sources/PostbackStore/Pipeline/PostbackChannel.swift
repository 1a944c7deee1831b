/// The channel a postback came by (issue 60), stored with every postback, sighting and
/// quarantined entry: `device` for what devices post to Apple's well-known paths (and copies
/// archived elsewhere, `ingest --channel device`), a network's or partner's name for what it
/// forwards (`ingest --channel NAME`, `POST /v1/forwards/NAME`), `file` for a file ingested
/// without a channel.
package struct PostbackChannel: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The stored name: 1 to 64 of `a`–`z`, `0`–`9`, `.`, `_`, `-`, starting with a letter or
    /// a digit.
    package let name: String

    /// Devices' copies: what `serve` receives at Apple's well-known paths.
    package static let device = PostbackChannel(checked: "device")
    /// A file ingested without `--channel`.
    package static let file = PostbackChannel(checked: "file")

    /// At most this many bytes in a name.
    package static let maximumLength = 64

    /// What a name may be, for a person: the sentence a refused name is answered with.
    package static let rule =
        "a channel is 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit (device, file, or a network's name such as network-x)"

    /// The channel of `name`, or nil when `name` is not a channel's name (``rule``).
    package init?(_ name: some StringProtocol) {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= Self.maximumLength, Self.isLetterOrDigit(first),
            bytes.allSatisfy({
                Self.isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
                    || $0 == UInt8(ascii: "-")
            })
        else { return nil }
        self.name = String(name)
    }

    private init(checked name: String) {
        self.name = name
    }

    /// Whether this is the devices' channel.
    package var isDevice: Bool { self == .device }

    /// The `source` stored for what arrives on this channel over HTTP: `http` for devices (as
    /// before channels), `http:NAME` for a network's pushed forwards. A network forwarding the
    /// device's very bytes is then another source, so its copy is a sighting of its own.
    package var httpSource: String { isDevice ? "http" : "http:" + name }

    package var description: String { name }

    package static func < (lhs: PostbackChannel, rhs: PostbackChannel) -> Bool { lhs.name < rhs.name }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

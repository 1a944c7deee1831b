#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A public key with the name results report it by (`apple-p256`, `test-p192`).
package struct NamedKey: Sendable {
    package var name: String
    package var key: ECPublicKey

    package init(name: String, key: ECPublicKey) {
        self.name = name
        self.key = key
    }
}

/// An AdAttributionKit key, chosen by the JWS header's `kid`.
package struct AAKKey: Sendable {
    /// The `kid` it verifies (`apple-cas-identifier/0`).
    package var keyID: String
    /// The name results report (`apple-cas-identifier/0`, or `test:<kid>` for a `--keys` folder).
    package var name: String
    package var key: ECPublicKey
    /// A development key: any phone in Developer Mode can mint postbacks it verifies, so they
    /// never count as production.
    package var isDevelopment: Bool
}

/// Why keys could not be loaded (``PostbackKitError``, the target's one message-only error).
extension ErrorCode where Domain == PostbackKitError {
    /// The `--keys` folder does not exist.
    public static let noSuchDirectory = Self("noSuchDirectory")
    /// The folder holds none of the expected key files.
    public static let noKeys = Self("noKeys")
    /// A key file cannot be read or is on the wrong curve.
    public static let badKey = Self("badKey")
}

/// The public keys a run verifies with, by curve.
///
/// Parsed once when loaded and shared by every worker: parsing a key costs more than a verify.
public struct KeyRing: Sendable {
    /// Keys for SKAdNetwork 1.0 and 2.0, tried in order.
    package private(set) var p192: [NamedKey] = []
    /// Keys for SKAdNetwork 2.1 and later, tried in order.
    package private(set) var p256: [NamedKey] = []
    /// AdAttributionKit keys by `kid`.
    package private(set) var aak: [String: AAKKey] = [:]

    public init() {}

    /// Apple's keys, built into the binary.
    public static let apple: KeyRing = {
        do {
            var ring = KeyRing()
            ring.p192.append(
                NamedKey(name: "apple-p192", key: try ECPublicKey(derRepresentation: base64Decode(AppleKeys.p192)))
            )
            ring.p256.append(
                NamedKey(name: "apple-p256", key: try ECPublicKey(derRepresentation: base64Decode(AppleKeys.p256)))
            )
            for (keyID, base64, isDevelopment) in [
                ("apple-cas-identifier/0", AppleKeys.p256, false),
                ("apple-development-identifier/0", AppleKeys.aakDevelopment0, true),
                ("apple-development-identifier/1", AppleKeys.aakDevelopment1, true),
            ] {
                let key = try ECPublicKey(derRepresentation: base64Decode(base64))
                ring.aak[keyID] = AAKKey(keyID: keyID, name: keyID, key: key, isDevelopment: isDevelopment)
            }
            return ring
        } catch {
            // The strings above are constants checked by the test suite, never input.
            preconditionFailure("a built-in Apple key does not parse: \(error)")
        }
    }()

    /// The keys for `curve`, in the order they are tried.
    package func keys(for curve: ECCurve) -> [NamedKey] {
        switch curve {
        case .p192: p192
        case .p256: p256
        }
    }

    /// Whether no key at all is loaded.
    package var isEmpty: Bool { p192.isEmpty && p256.isEmpty && aak.isEmpty }

    /// Adds the keys of a `--keys` folder: `p192.pem` verifies 1.0 and 2.0, `p256.pem` 2.1 and
    /// later, `aak-<kid with / replaced by _>.pem` AdAttributionKit postbacks with that `kid`
    /// (a development key when the kid contains `development`); any may be absent. Keys are
    /// named after the folder (`Keys/test` gives `test-p192`, `test-p256`, `test:<kid>`).
    package mutating func addKeys(fromDirectory directory: String) throws(PostbackKitError) {
        var info = stat()
        guard stat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PostbackKitError(.noSuchDirectory, "--keys \(directory): no such folder")
        }
        let prefix = Self.keyNamePrefix(forDirectory: directory)
        var found = false
        for curve in ECCurve.allCases {
            let path = directory + "/" + curve.rawValue + ".pem"
            guard let pem = readSmallFile(path) else { continue }
            found = true
            let key: ECPublicKey
            do {
                key = try ECPublicKey(pemRepresentation: pem)
            } catch {
                throw PostbackKitError(.badKey, "\(path): \(error); expected a PEM PUBLIC KEY")
            }
            guard key.curve == curve else {
                throw PostbackKitError(
                    .badKey,
                    "\(path): the key is on \(key.curve), but \(curve.rawValue).pem must hold a \(curve) key"
                )
            }
            let named = NamedKey(name: "\(prefix)-\(curve.rawValue)", key: key)
            switch curve {
            case .p192: p192.append(named)
            case .p256: p256.append(named)
            }
        }
        for file in aakKeyFiles(in: directory) {
            let path = directory + "/" + file
            guard let pem = readSmallFile(path) else { continue }
            let keyID = String(file.dropFirst("aak-".count).dropLast(".pem".count).map { $0 == "_" ? "/" : $0 })
            let key: ECPublicKey
            do {
                key = try ECPublicKey(pemRepresentation: pem)
            } catch {
                throw PostbackKitError(.badKey, "\(path): \(error); expected a PEM PUBLIC KEY")
            }
            guard key.curve == .p256 else {
                throw PostbackKitError(
                    .badKey,
                    "\(path): the key is on \(key.curve); AdAttributionKit (ES256) needs a P-256 key"
                )
            }
            found = true
            aak[keyID] = AAKKey(
                keyID: keyID,
                name: "\(prefix):\(keyID)",
                key: key,
                isDevelopment: keyID.contains("development")
            )
        }
        guard found else {
            throw PostbackKitError(.noKeys, "--keys \(directory): no p192.pem, p256.pem or aak-*.pem in this folder")
        }
    }

    /// A key ring holding the keys of each folder, in the order given.
    public init(directories: [String]) throws(PostbackKitError) {
        self.init()
        for directory in directories {
            try addKeys(fromDirectory: directory)
        }
    }

    static func keyNamePrefix(forDirectory directory: String) -> String {
        var trimmed = directory
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        let last = trimmed.split(separator: "/").last.map(String.init) ?? trimmed
        return last.isEmpty || last == "." || last == ".." ? "keys" : last
    }
}

/// The `aak-*.pem` files of a folder, sorted.
private func aakKeyFiles(in directory: String) -> [String] {
    guard let handle = opendir(directory) else { return [] }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name.hasPrefix("aak-") && name.hasSuffix(".pem") && name.count > 8 { names.append(name) }
    }
    return names.sorted()
}

/// The contents of a file of at most 64 KiB, or nil when it does not exist.
func readSmallFile(_ path: String) -> String? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes = [UInt8](repeating: 0, count: 64 * 1024)
    let count = fread(&bytes, 1, bytes.count, file)
    return String(decoding: bytes.prefix(count), as: UTF8.self)
}

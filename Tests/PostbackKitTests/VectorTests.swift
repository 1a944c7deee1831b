import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// One row of `SamplePostbacks/apple/INDEX.md` (a byte-for-byte copy of the shared index).
struct VectorExpectation: CustomTestStringConvertible, Sendable {
    var file: String
    var verdict: Verdict
    var development: Bool

    var testDescription: String { file }

    /// The rows of INDEX.md's table: `| file | version | what | expected |`.
    static func all() throws -> [VectorExpectation] {
        let index = try String(contentsOfFile: Repository.vectors + "/INDEX.md", encoding: .utf8)
        return index.split(separator: "\n").compactMap { line -> VectorExpectation? in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, cells[0].hasSuffix(".json") else { return nil }
            let expected = cells[3]
            let verdict: Verdict =
                expected.hasPrefix("valid") ? .valid : expected.hasPrefix("invalid") ? .invalid : .malformed
            return VectorExpectation(file: cells[0], verdict: verdict, development: expected.contains("development"))
        }
    }
}

@Suite("Apple's vectors")
struct VectorTests {
    @Test(
        "every vector gives INDEX.md's verdict, through OpenSSL's verify and through fixed-base tables",
        arguments: try VectorExpectation.all(),
        [Int.max, 0]
    )
    func vectorVerdict(_ expectation: VectorExpectation, fixedBaseThreshold: Int) throws {
        let result = PostbackVerifier(keyRing: .apple, fixedBaseThreshold: fixedBaseThreshold).check(
            try Repository.bytes(Repository.vectors + "/" + expectation.file)
        )
        #expect(result.verdict == expectation.verdict, "\(result.reason ?? "")")
        #expect(result.development == expectation.development)
        #expect(result.testMode == false)
    }

    @Test("INDEX.md lists every vector file, and the list is not empty")
    func indexIsComplete() throws {
        let listed = Set(try VectorExpectation.all().map(\.file))
        #expect(listed.count >= 12)
        #expect(listed == Set(try Repository.vectorFiles()))
    }

    @Test("SamplePostbacks/apple holds the shared vectors byte for byte")
    func samplesMatchSharedVectors() throws {
        guard let shared = Repository.sharedVectors else { return }  // ../shared is beside the clone in CI
        for file in try Repository.vectorFiles() + ["INDEX.md"] {
            #expect(
                try Repository.bytes(Repository.vectors + "/" + file) == Repository.bytes(shared + "/" + file),
                "\(file)"
            )
        }
    }

    @Test("the 4.0 worked example signs the spec's 112 bytes with the spec's SHA-256")
    func workedExample() throws {
        let result = PostbackVerifier(keyRing: .apple).check(
            try Repository.bytes(Repository.vectors + "/apple-4.0-web-fine-win.json")
        )
        guard case .skan(let postback)? = result.postback else {
            Issue.record("not a SKAN postback")
            return
        }
        let message = postback.signedMessage()
        let expected = "4.0|com.example|5239|525463029|6aafb7a5-0170-41b5-bbe4-fe71dedf1e30|false|example.com|1|true|0"
            .replacingOccurrences(of: "|", with: "\u{2063}")
        #expect(message == Array(expected.utf8))
        #expect(message.count == 112)
        #expect(
            SHA256Digest(hashing: message).description
                == "e5efd5b424697d4eac347fb678f79ea33d0d03488ac7a44901130991697b6a32"
        )
    }
}

/// The mutation rule of INDEX.md: on every valid SKAN vector, changing any signed field makes
/// it invalid; changing or removing the conversion value, or adding one where neither is
/// present, does not; adding one beside the other is malformed.
@Suite("Mutations of valid vectors")
struct MutationTests {
    /// The signed fields per version, restated from spec section 4 (not taken from the code
    /// under test). `version` is handled separately: changing it changes the layout.
    static let signedFields: [String: [String]] = [
        "1.0": ["ad-network-id", "campaign-id", "app-id", "transaction-id"],
        "2.0": ["ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", "source-app-id"],
        "2.1": ["ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", "source-app-id"],
        "2.2": [
            "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", "source-app-id", "fidelity-type",
        ],
        "3.0": [
            "ad-network-id", "campaign-id", "app-id", "transaction-id", "redownload", "source-app-id", "fidelity-type",
            "did-win",
        ],
        "4.0": [
            "ad-network-id", "source-identifier", "app-id", "transaction-id", "redownload", "source-app-id",
            "source-domain", "fidelity-type", "did-win", "postback-sequence-index",
        ],
    ]

    static func validSKANVectors() throws -> [String] {
        try VectorExpectation.all().filter { $0.verdict == .valid && !$0.development }.map(\.file)
    }

    @Test("changing a signed field makes the postback invalid", arguments: try validSKANVectors())
    func signedFieldChanges(_ file: String) throws {
        let original = try object(file)
        let version = original["version"] as? String ?? "1.0"
        var mutated = 0
        for field in try #require(Self.signedFields[version]) {
            guard let value = original[field] else { continue }
            var copy = original
            copy[field] = changed(value, field: field)
            #expect(try verdict(copy) == .invalid, "\(file): changing \(field)")
            mutated += 1
        }
        #expect(mutated >= 4)
    }

    @Test("removing a present optional signed field makes it invalid", arguments: try validSKANVectors())
    func optionalSignedFieldRemoved(_ file: String) throws {
        let original = try object(file)
        let version = original["version"] as? String ?? "1.0"
        for field in ["source-app-id", "source-domain"] where original[field] != nil && version != "1.0" {
            var copy = original
            copy[field] = nil
            #expect(try verdict(copy) == .invalid, "\(file): removing \(field)")
        }
    }

    @Test("changing the version never leaves it valid", arguments: try validSKANVectors())
    func versionChanges(_ file: String) throws {
        var copy = try object(file)
        let version = copy["version"] as? String ?? "1.0"
        for other in ["1.0", "2.0", "2.1", "2.2", "3.0", "4.0"] where other != version {
            copy["version"] = other
            #expect(try verdict(copy) != .valid, "\(file): version \(version) → \(other)")
        }
    }

    @Test("conversion values and forwarder fields are unsigned", arguments: try validSKANVectors())
    func unsignedChanges(_ file: String) throws {
        let original = try object(file)
        var variants: [(String, [String: Any])] = []
        if let fine = original["conversion-value"] as? Int {
            variants.append(("change fine value", original.with("conversion-value", (fine + 1) % 64)))
            variants.append(("remove fine value", original.with("conversion-value", nil)))
            variants.append(("null fine value", original.with("conversion-value", NSNull())))
        } else if original["coarse-conversion-value"] != nil {
            variants.append(("change coarse value", original.with("coarse-conversion-value", "low")))
            variants.append(("remove coarse value", original.with("coarse-conversion-value", nil)))
        } else {
            variants.append(("add fine value", original.with("conversion-value", 5)))
            variants.append(("add coarse value", original.with("coarse-conversion-value", "medium")))
        }
        variants.append(("add country-code", original.with("country-code", "US")))
        variants.append(
            ("add forwarder fields", original.with("timestamp", 1_613_095_729).with("ip-address", "17.58.56.232"))
        )
        for (name, variant) in variants {
            #expect(try verdict(variant) == .valid, "\(file): \(name)")
        }
    }

    @Test("a fine and a coarse value together are malformed", arguments: try validSKANVectors())
    func bothValues(_ file: String) throws {
        let original = try object(file)
        var copy = original
        if original["conversion-value"] == nil { copy["conversion-value"] = 7 }
        if original["coarse-conversion-value"] == nil { copy["coarse-conversion-value"] = "high" }
        #expect(try verdict(copy) == .malformed, "\(file)")
    }

    @Test("1.0's version and redownload fields are not signed")
    func unsignedOneZeroFields() throws {
        let original = try object("real-1.0-su67r6k2v3.json")
        #expect(try verdict(original.with("version", nil)) == .valid)
        #expect(try verdict(original.with("redownload", true)) == .valid)
        #expect(try verdict(original.with("source-app-id", 123)) == .valid)
    }

    // MARK: - Helpers

    private func object(_ file: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: Repository.vectors + "/" + file))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func verdict(_ object: [String: Any]) throws -> Verdict {
        let data = try JSONSerialization.data(withJSONObject: object)
        return PostbackVerifier(keyRing: .apple).check(Array(data)).verdict
    }

    /// A different value of the same type that keeps the postback well-formed.
    private func changed(_ value: Any, field: String) -> Any {
        switch value {
        case let bool as Bool where field == "redownload" || field == "did-win":
            return !bool
        case let int as Int:
            switch field {
            case "fidelity-type": return 1 - int
            case "postback-sequence-index": return int == 0 ? 1 : 0
            case "campaign-id": return int == 100 ? 99 : int + 1
            default: return int + 1
            }
        case let string as String:
            if field == "source-identifier" {
                return string.hasSuffix("9") ? String(string.dropLast()) + "8" : String(string.dropLast()) + "9"
            }
            if field == "transaction-id" { return String(string.dropLast()) + (string.hasSuffix("0") ? "1" : "0") }
            return String(string.dropLast()) + (string.hasSuffix("x") ? "y" : "x")
        default:
            return value
        }
    }
}

extension Dictionary where Key == String, Value == Any {
    func with(_ key: String, _ value: Any?) -> [String: Any] {
        var copy = self
        copy[key] = value
        return copy
    }
}

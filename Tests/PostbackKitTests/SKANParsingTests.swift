import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// Checks JSON text with the test keys.
func checkWithTestKeys(_ json: String) throws -> VerificationResult {
    PostbackVerifier(keyRing: try TestKeys.ring).check(Array(json.utf8))
}

/// A signed postback of `version` as a mutable JSON object.
func signedObject(_ version: SKANVersion, withOptional: Bool = true) throws -> [String: Any] {
    let data = Data(try SamplePostback.signedJSON(version, withOptional: withOptional).utf8)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

func jsonText(_ object: [String: Any]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
}

@Suite("Every SKAdNetwork version")
struct SKANVersionTests {
    @Test(
        "a signed postback of every version verifies, with and without its optional signed field",
        arguments: SKANVersion.allCases,
        [true, false]
    )
    func everyVersion(_ version: SKANVersion, withOptional: Bool) throws {
        let expected = SamplePostback.make(version, withOptional: withOptional)
        let result = try checkWithTestKeys(try SamplePostback.signedJSON(version, withOptional: withOptional))
        #expect(result.verdict == .valid, "\(result.reason ?? "")")
        #expect(result.kind == .skan)
        #expect(result.keyName == (version.curve == .p192 ? "test-p192" : "test-p256"))
        #expect(result.testMode == false)
        guard case .skan(let parsed)? = result.postback else {
            Issue.record("no postback")
            return
        }
        var comparable = parsed
        comparable.attributionSignature = ""
        #expect(comparable == expected)
        #expect(result.identity.version == version.rawValue)
    }

    @Test("Apple's keys do not verify postbacks signed with the test keys", arguments: SKANVersion.allCases)
    func testKeysAreNotApple(_ version: SKANVersion) throws {
        let result = PostbackVerifier(keyRing: .apple).check(Array(try SamplePostback.signedJSON(version).utf8))
        #expect(result.verdict == .invalid)
        #expect(result.field == "attribution-signature")
    }

    @Test("4.0 postbacks 1 and 2 verify with a 2-digit source identifier and a coarse value", arguments: [1, 2])
    func laterPostbacks(_ index: Int) throws {
        let json = try SamplePostback.signedJSON(
            .v4_0,
            withOptional: false,
            conversionValue: .coarse(.medium),
            sequenceIndex: index
        )
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .valid)
        #expect(result.postback?.dedupKey.postbackSequenceIndex == index)
        #expect(result.warnings.isEmpty)
    }

    @Test("a version-less postback is 1.0; with version \"1.0\" it is 1.0 too")
    func oneZeroWithAndWithoutVersion() throws {
        var object = try signedObject(.v1_0)
        #expect(object["version"] == nil)
        #expect(try checkWithTestKeys(try jsonText(object)).identity.version == "1.0")
        object["version"] = "1.0"
        object["redownload"] = true
        let result = try checkWithTestKeys(try jsonText(object))
        #expect(result.verdict == .valid)
        guard case .skan(let postback)? = result.postback else { return }
        #expect(postback.redownload == nil, "1.0's redownload is not signed, so it is not trusted")
        #expect(postback.hasVersionField)
    }
}

@Suite("Field types and ranges")
struct FieldTests {
    /// (what, version, change, expected verdict, field named)
    static let malformedCases: [(String, SKANVersion, @Sendable (inout [String: Any]) -> Void, Verdict, String?)] = [
        ("missing ad-network-id", .v3_0, { $0["ad-network-id"] = nil }, .malformed, "ad-network-id"),
        ("missing campaign-id", .v2_1, { $0["campaign-id"] = nil }, .malformed, "campaign-id"),
        ("missing source-identifier", .v4_0, { $0["source-identifier"] = nil }, .malformed, "source-identifier"),
        ("missing app-id", .v1_0, { $0["app-id"] = nil }, .malformed, "app-id"),
        ("missing transaction-id", .v2_0, { $0["transaction-id"] = nil }, .malformed, "transaction-id"),
        ("missing redownload", .v2_0, { $0["redownload"] = nil }, .malformed, "redownload"),
        ("missing fidelity-type", .v2_2, { $0["fidelity-type"] = nil }, .malformed, "fidelity-type"),
        ("missing did-win", .v3_0, { $0["did-win"] = nil }, .malformed, "did-win"),
        (
            "missing postback-sequence-index", .v4_0, { $0["postback-sequence-index"] = nil }, .malformed,
            "postback-sequence-index"
        ),
        ("missing signature", .v4_0, { $0["attribution-signature"] = nil }, .malformed, "attribution-signature"),
        ("null app-id", .v3_0, { $0["app-id"] = NSNull() }, .malformed, "app-id"),
        ("app-id as a string", .v3_0, { $0["app-id"] = "525463029" }, .malformed, "app-id"),
        ("app-id negative", .v3_0, { $0["app-id"] = -1 }, .malformed, "app-id"),
        ("campaign-id with a fraction", .v3_0, { $0["campaign-id"] = 42.5 }, .malformed, "campaign-id"),
        ("redownload as a string", .v2_1, { $0["redownload"] = "false" }, .malformed, "redownload"),
        ("fidelity-type 2", .v2_2, { $0["fidelity-type"] = 2 }, .malformed, "fidelity-type"),
        ("did-win as a number", .v3_0, { $0["did-win"] = 1 }, .malformed, "did-win"),
        (
            "postback-sequence-index 3", .v4_0, { $0["postback-sequence-index"] = 3 }, .malformed,
            "postback-sequence-index"
        ),
        ("source-identifier as a number", .v4_0, { $0["source-identifier"] = 5239 }, .malformed, "source-identifier"),
        (
            "source-identifier of 5 digits", .v4_0, { $0["source-identifier"] = "52390" }, .malformed,
            "source-identifier"
        ),
        ("source-identifier of 1 digit", .v4_0, { $0["source-identifier"] = "5" }, .malformed, "source-identifier"),
        (
            "source-identifier with a letter", .v4_0, { $0["source-identifier"] = "52a9" }, .malformed,
            "source-identifier"
        ),
        ("conversion-value 64", .v3_0, { $0["conversion-value"] = 64 }, .malformed, "conversion-value"),
        ("conversion-value -1", .v3_0, { $0["conversion-value"] = -1 }, .malformed, "conversion-value"),
        ("conversion-value as a string", .v3_0, { $0["conversion-value"] = "20" }, .malformed, "conversion-value"),
        (
            "coarse value unknown", .v4_0,
            {
                $0["conversion-value"] = nil
                $0["coarse-conversion-value"] = "huge"
            }, .malformed, "coarse-conversion-value"
        ),
        ("fine and coarse", .v4_0, { $0["coarse-conversion-value"] = "low" }, .malformed, "coarse-conversion-value"),
        ("source app and domain", .v4_0, { $0["source-app-id"] = 1 }, .malformed, "source-domain"),
        ("country-code of 3 letters", .v4_0, { $0["country-code"] = "USA" }, .malformed, "country-code"),
        ("ad-network-id as a number", .v3_0, { $0["ad-network-id"] = 7 }, .malformed, "ad-network-id"),
        ("empty transaction-id", .v3_0, { $0["transaction-id"] = "" }, .malformed, "transaction-id"),
        ("signature as a number", .v3_0, { $0["attribution-signature"] = 1 }, .malformed, "attribution-signature"),
        ("version as a number", .v3_0, { $0["version"] = 3.0 }, .malformed, "version"),
        ("version 5.0", .v3_0, { $0["version"] = "5.0" }, .unsupported, "version"),
        ("version 4.1", .v4_0, { $0["version"] = "4.1" }, .unsupported, "version"),
        ("version 10.0", .v4_0, { $0["version"] = "10.0" }, .unsupported, "version"),
        // Not digits, a dot, digits: no version at all, so malformed (400), never unsupported.
        ("version with a newline", .v4_0, { $0["version"] = "4.0\n" }, .malformed, "version"),
        ("version with a space", .v4_0, { $0["version"] = " 4.0" }, .malformed, "version"),
        ("version without a dot", .v4_0, { $0["version"] = "4" }, .malformed, "version"),
        ("version of three parts", .v4_0, { $0["version"] = "4.0.1" }, .malformed, "version"),
        ("version with a letter", .v4_0, { $0["version"] = "4.0b" }, .malformed, "version"),
        ("version empty", .v4_0, { $0["version"] = "" }, .malformed, "version"),
        ("version of other digits", .v4_0, { $0["version"] = "٤.٠" }, .malformed, "version"),
    ]

    @Test("each kind of bad field gets its verdict and names the field", arguments: 0..<malformedCases.count)
    func badField(_ index: Int) throws {
        let (what, version, change, expected, field) = Self.malformedCases[index]
        var object = try signedObject(version)
        change(&object)
        let result = try checkWithTestKeys(try jsonText(object))
        #expect(result.verdict == expected, "\(what): \(result.reason ?? "")")
        #expect(result.field == field, "\(what)")
        if let field { #expect(result.reason?.hasPrefix(field) == true, "\(what): \(result.reason ?? "")") }
        #expect(result.postback == nil)
    }

    @Test("a malformed postback still reports the identifying fields it has")
    func malformedIdentity() throws {
        var object = try signedObject(.v3_0)
        object["app-id"] = "x"
        let result = try checkWithTestKeys(try jsonText(object))
        #expect(result.identity.adNetworkID == "example123.skadnetwork")
        #expect(result.identity.transactionID == "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28")
        #expect(result.identity.version == "3.0")
    }

    @Test("a null conversion value means not provided")
    func nullConversionValue() throws {
        var object = try signedObject(.v3_0)
        object["conversion-value"] = NSNull()
        let result = try checkWithTestKeys(try jsonText(object))
        #expect(result.verdict == .valid)
        #expect(result.postback?.conversionValue == nil)
    }

    @Test("fields a version does not sign are ignored, not trusted")
    func strayFields() throws {
        var object = try signedObject(.v3_0)
        object["postback-sequence-index"] = 2  // a 4.0 field: would create a new dedup key if trusted
        object["source-identifier"] = "9999"
        object["partner-campaign-name"] = "x"
        let result = try checkWithTestKeys(try jsonText(object))
        #expect(result.verdict == .valid)
        #expect(result.postback?.dedupKey.postbackSequenceIndex == 0)
        guard case .skan(let postback)? = result.postback else { return }
        #expect(postback.sourceIdentifier == nil)
    }

    @Test("campaign-id outside 1–100 is a warning when Apple's signature verifies", arguments: [0, 150])
    func campaignOutOfRange(_ campaign: Int64) throws {
        var postback = SamplePostback.make(.v3_0)
        postback.campaignID = campaign
        let json = try TestKeys.signer.signed(postback).jsonText()
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .valid)
        #expect(result.warnings.contains { $0.contains("campaign-id \(campaign)") })
    }

    @Test("integers beyond 2^53 are signed exactly as decimal")
    func largeIntegers() throws {
        var postback = SamplePostback.make(.v3_0)
        postback.appID = 9_007_199_254_740_993  // not representable as a Double
        postback.sourceAppID = Int64.max
        let json = try TestKeys.signer.signed(postback).jsonText()
        #expect(json.contains("\"app-id\":9007199254740993"))
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .valid)
        guard case .skan(let parsed)? = result.postback else { return }
        #expect(String(decoding: parsed.signedMessage(), as: UTF8.self).contains("9007199254740993"))
    }

    @Test("an integer too large for 64 bits is malformed, not rounded")
    func hugeInteger() throws {
        let json = try SamplePostback.signedJSON(.v3_0).replacingOccurrences(
            of: "\"app-id\":525463029",
            with: "\"app-id\":99999999999999999999"
        )
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .malformed)
        #expect(result.field == "app-id")
    }

    @Test("escaped strings are unescaped before signing")
    func escapedStrings() throws {
        let json = try SamplePostback.signedJSON(.v3_0).replacingOccurrences(
            of: "\"example123.skadnetwork\"",
            with: "\"example123\\u002eskadnetwork\""
        )
        #expect(json.contains("\\u002e"))
        #expect(try checkWithTestKeys(json).verdict == .valid)
    }

    @Test("a 4.0 postback 1 with a fine value verifies with a tier warning")
    func tierWarning() throws {
        let json = try SamplePostback.signedJSON(
            .v4_0,
            withOptional: false,
            conversionValue: .fine(3),
            sequenceIndex: 1
        )
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .valid)
        #expect(result.warnings.contains { $0.contains("fine conversion-value") })
    }
}

@Suite("Malformed JSON")
struct MalformedJSONTests {
    static let cases: [(String, [UInt8], String)] = [
        ("not JSON", Array("hello".utf8), "not valid JSON"),
        ("truncated", Array("{\"version\":\"3.0\",".utf8), "unexpected end of input"),
        ("an array", Array("[1,2]".utf8), "expected a JSON object, found an array"),
        ("a string", Array("\"x\"".utf8), "expected a JSON object, found a string"),
        ("duplicate key", Array("{\"app-id\":1,\"app-id\":2}".utf8), "duplicate key \"app-id\""),
        ("duplicate key spelled with an escape", Array("{\"app-id\":1,\"app\\u002did\":2}".utf8), "duplicate key"),
        ("duplicate key in a nested object", Array("{\"x\":{\"a\":1,\"a\":2}}".utf8), "duplicate key \"a\""),
        (
            "invalid UTF-8", [UInt8]("{\"ad-network-id\":\"a".utf8) + [0xFF] + Array("\"}".utf8),
            "invalid UTF-8 byte 0xFF"
        ),
        ("overlong UTF-8", [UInt8]("{\"a\":\"".utf8) + [0xC0, 0xAF] + Array("\"}".utf8), "invalid UTF-8"),
        ("UTF-8 surrogate", [UInt8]("{\"a\":\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"}".utf8), "invalid UTF-8"),
        ("lone surrogate escape", Array("{\"a\":\"\\ud800\"}".utf8), "lone high surrogate"),
        ("control character", Array("{\"a\":\"x\ty\"}".utf8), "control character"),
        ("leading zero", Array("{\"a\":01}".utf8), "leading zero"),
        ("trailing comma", Array("{\"a\":1,}".utf8), "expected a quoted key"),
        ("trailing content", Array("{\"a\":1} x".utf8), "after the end of the JSON value"),
        ("deep nesting", Array(String(repeating: "[", count: 40).utf8), "nesting deeper than"),
        ("empty", [], "empty input"),
    ]

    @Test("bad JSON is malformed with a reason that says what and where", arguments: 0..<cases.count)
    func badJSON(_ index: Int) throws {
        let (what, bytes, expected) = Self.cases[index]
        let result = PostbackVerifier(keyRing: .apple).check(bytes)
        #expect(result.verdict == .malformed, "\(what)")
        #expect(result.reason?.contains(expected) == true, "\(what): \(result.reason ?? "")")
    }

    @Test("JSON errors name the line and column in the file")
    func errorPosition() {
        let bytes = Array("{\n  \"a\": 1,\n  \"b\": tru\n}".utf8)
        let result = PostbackVerifier(keyRing: .apple).check(bytes, line: 10)
        #expect(result.reason?.contains("line 12, column 8") == true, "\(result.reason ?? "")")
    }
}

import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

@Suite("Signatures")
struct SignatureTests {
    private func withSignature(_ signature: String, version: SKANVersion = .v3_0) throws -> VerificationResult {
        var object = try signedObject(version)
        object["attribution-signature"] = signature
        return try checkWithTestKeys(try jsonText(object))
    }

    @Test(
        "a signature that is not base64 is invalid, never a crash",
        arguments: ["!!!!", "MEUC IQ==", "MEUCIQ=", "-_-_", "M"]
    )
    func notBase64(_ signature: String) throws {
        let result = try withSignature(signature)
        #expect(result.verdict == .invalid)
        #expect(result.field == "attribution-signature")
        #expect(result.reason?.contains("base64") == true, "\(result.reason ?? "")")
    }

    @Test("base64 that is not DER is invalid", arguments: ["AAAA", "MAA=", "MAYCAQECAQEA"])
    func notDER(_ signature: String) throws {
        let result = try withSignature(signature)
        #expect(result.verdict == .invalid)
        #expect(
            result.reason?.contains("DER") == true || result.reason?.contains("does not verify") == true,
            "\(result.reason ?? "")"
        )
    }

    @Test("an oversized signature is invalid without being verified")
    func oversized() throws {
        let result = try withSignature(Base64.encode([UInt8](repeating: 0x30, count: 100)))
        #expect(result.verdict == .invalid)
        #expect(result.reason?.contains("at most 72") == true)
    }

    @Test("another postback's valid signature does not verify")
    func wrongSignature() throws {
        let other = try signedObject(.v3_0, withOptional: false)
        let result = try withSignature(try #require(other["attribution-signature"] as? String))
        #expect(result.verdict == .invalid)
        #expect(result.reason == "attribution-signature: does not verify with test-p256")
    }

    @Test("a version whose curve has no loaded key says it cannot be verified")
    func missingKey() throws {
        let directory = try TemporaryDirectory()
        try directory.write("p256.pem", String(contentsOfFile: TestKeys.directory + "/p256.pem", encoding: .utf8))
        let ring = try KeyRing(directories: [directory.path])
        let result = PostbackVerifier(keyRing: ring).check(Array(try SamplePostback.signedJSON(.v2_0).utf8))
        #expect(result.verdict == .invalid)
        #expect(result.reason?.contains("no P-192 key is loaded") == true)
        #expect(
            PostbackVerifier(keyRing: ring).check(Array(try SamplePostback.signedJSON(.v2_1).utf8)).verdict == .valid
        )
    }

    @Test("several key folders are tried in order")
    func severalKeyFolders() throws {
        var ring = KeyRing.apple
        try ring.addKeys(fromDirectory: TestKeys.directory)
        let verifier = PostbackVerifier(keyRing: ring)
        #expect(verifier.check(Array(try SamplePostback.signedJSON(.v4_0).utf8)).keyName == "test-p256")
        let apple = try Repository.bytes(Repository.vectors + "/apple-4.0-web-fine-win.json")
        #expect(verifier.check(apple).keyName == "apple-p256")
    }
}

@Suite("Test mode")
struct TestModeTests {
    private func testPostback(_ version: SKANVersion, sourceAppID: Int64 = 0) -> SKANPostback {
        var postback = SamplePostback.make(version, withOptional: false, conversionValue: .fine(0))
        postback.sourceAppID = sourceAppID
        return postback
    }

    @Test(
        "a device's test postback (signed without source-app-id 0) is valid and test-mode",
        arguments: [SKANVersion.v2_0, .v2_1, .v2_2, .v3_0]
    )
    func signedWithoutZero(_ version: SKANVersion) throws {
        let json = try TestKeys.signer.signed(testPostback(version), asTestDevice: true).jsonText()
        #expect(json.contains("\"source-app-id\":0"))
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .valid)
        #expect(result.testMode)
        #expect(result.verifiedWithoutSourceAppID)
    }

    @Test("a 4.0 test postback (source-app-id 0 left out of the message) is test-mode")
    func fourZero() throws {
        var postback = SamplePostback.make(.v4_0, withOptional: false, conversionValue: .fine(0))
        postback.sourceAppID = 0
        let result = try checkWithTestKeys(try TestKeys.signer.signed(postback, asTestDevice: true).jsonText())
        #expect(result.verdict == .valid)
        #expect(result.testMode)
    }

    @Test("a postback signed with source-app-id 0 in its message is test-mode too")
    func signedWithZero() throws {
        let result = try checkWithTestKeys(try TestKeys.signer.signed(testPostback(.v3_0)).jsonText())
        #expect(result.verdict == .valid)
        #expect(result.testMode)
        #expect(!result.verifiedWithoutSourceAppID)
    }

    @Test("the retry without source-app-id applies only to 0")
    func onlyZero() throws {
        let json = try TestKeys.signer.signed(testPostback(.v3_0, sourceAppID: 5), asTestDevice: true).jsonText()
        let result = try checkWithTestKeys(json)
        #expect(result.verdict == .invalid)
        #expect(!result.testMode)
    }

    @Test("an ordinary postback is not test-mode")
    func ordinary() throws {
        #expect(try checkWithTestKeys(try SamplePostback.signedJSON(.v3_0)).testMode == false)
    }
}

@Suite("RFC 6979 deterministic signing")
struct DeterministicSigningTests {
    /// RFC 6979 appendix A.2.3 (P-192) and A.2.5 (P-256), SHA-256, message "sample".
    static let vectors: [(curve: String, r: String, s: String)] = [
        (
            "p192", "4B0B8CE98A92866A2820E20AA6B75B56382E0F9BFD5ECB55",
            "CCDB006926EA9565CBADC840829D8C384E06DE1F1E381B85"
        ),
        (
            "p256", "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
            "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"
        ),
    ]

    @Test("signatures match the RFC's published r and s", arguments: 0..<vectors.count)
    func rfcVectors(_ index: Int) throws {
        let vector = Self.vectors[index]
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/rfc6979/\(vector.curve)-private", withExtension: "pem")
        )
        let key = try ECPrivateKey(pemRepresentation: try String(contentsOf: url, encoding: .utf8))
        let der = try key.signature(for: Array("sample".utf8))
        let raw = try #require(ECDSASignatureEncoding.raw(fromDER: der, coordinateLength: key.curve.coordinateLength))
        let hex = raw.map { String(format: "%02X", $0) }.joined()
        #expect(hex == vector.r + vector.s)
        let verifier = ECDSAVerifier()
        #expect(
            verifier.verify(
                signature: der,
                digest: SHA256Digest(hashing: Array("sample".utf8)).bytes,
                key: key.publicKey
            ) == .verified
        )
    }

    @Test("the same message and key give the same signature; another message another one")
    func deterministic() throws {
        let signer = try TestKeys.signer
        let first = try signer.signed(SamplePostback.make(.v4_0))
        let again = try signer.signed(SamplePostback.make(.v4_0))
        let other = try signer.signed(SamplePostback.make(.v4_0, transactionID: "00000000-0000-4000-8000-000000000000"))
        #expect(first.attributionSignature == again.attributionSignature)
        #expect(first.attributionSignature != other.attributionSignature)
    }
}

@Suite("Strict base64")
struct Base64Tests {
    @Test("round trips", arguments: [0, 1, 2, 3, 31, 32, 33, 64, 71, 72])
    func roundTrip(_ count: Int) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        #expect(Base64.decode(Base64.encode(bytes).utf8) == bytes)
        #expect(Base64.decode(Base64.encode(bytes, alphabet: .url).utf8, alphabet: .url) == bytes)
    }

    @Test("non-canonical and foreign encodings are refused")
    func refused() {
        #expect(Base64.decode("QQ==".utf8) == [0x41])
        #expect(Base64.decode("QQ".utf8) == [0x41], "standard base64 may omit padding")
        #expect(Base64.decode("QR==".utf8) == nil, "non-zero padding bits")
        #expect(Base64.decode("QQ=".utf8) == nil)
        #expect(Base64.decode("Q".utf8) == nil)
        #expect(Base64.decode("Q Q=".utf8) == nil)
        #expect(Base64.decode("-_8".utf8) == nil, "base64url characters in standard base64")
        #expect(Base64.decode("+/8".utf8, alphabet: .url) == nil)
        #expect(Base64.decode("QQ==".utf8, alphabet: .url) == nil, "base64url is never padded")
        #expect(Base64.decode("QR".utf8, alphabet: .url) == nil)
    }
}

import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

@Suite("Keys")
struct KeyRingTests {
    private func pemKey(_ relative: String) throws -> ECPublicKey {
        try ECPublicKey(pemRepresentation: try String(contentsOfFile: Repository.path(relative), encoding: .utf8))
    }

    @Test("the built-in keys are the ones in Keys/apple")
    func builtInMatchesFiles() throws {
        let ring = KeyRing.apple
        #expect(ring.p192.map(\.name) == ["apple-p192"])
        #expect(ring.p256.map(\.name) == ["apple-p256"])
        #expect(ring.p192.first?.key.derRepresentation == (try pemKey("Keys/apple/p192.pem")).derRepresentation)
        #expect(ring.p256.first?.key.derRepresentation == (try pemKey("Keys/apple/p256.pem")).derRepresentation)
        #expect(ring.p192.first?.key.curve == .p192)
        for (kid, file, development) in [
            ("apple-cas-identifier/0", "aak-apple-cas-identifier_0.pem", false),
            ("apple-development-identifier/0", "aak-apple-development-identifier_0.pem", true),
            ("apple-development-identifier/1", "aak-apple-development-identifier_1.pem", true),
        ] {
            let key = try #require(ring.aak[kid])
            #expect(key.key.derRepresentation == (try pemKey("Keys/apple/" + file)).derRepresentation)
            #expect(key.isDevelopment == development)
        }
    }

    @Test("--keys Keys/apple loads the same keys as the built-in ring")
    func appleFolder() throws {
        let ring = try KeyRing(directories: [Repository.path("Keys/apple")])
        #expect(ring.p256.map(\.name) == ["apple-p256"])
        #expect(Set(ring.aak.keys) == Set(KeyRing.apple.aak.keys))
        #expect(ring.aak["apple-development-identifier/1"]?.isDevelopment == true)
    }

    @Test("a key folder names its keys after itself")
    func testFolder() throws {
        let ring = try TestKeys.ring
        #expect(ring.p192.map(\.name) == ["test-p192"])
        #expect(ring.p256.map(\.name) == ["test-p256"])
        #expect(ring.aak["postbackd-test/0"]?.name == "test:postbackd-test/0")
    }

    @Test("bad key folders are explained")
    func badFolders() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: PostbackKitError(.noKeys, "")) { try KeyRing(directories: [directory.path]) }
        #expect(throws: PostbackKitError(.noSuchDirectory, "")) { try KeyRing(directories: [directory.path + "/nope"]) }
        try directory.write(
            "p192.pem",
            try String(contentsOfFile: Repository.path("Keys/test/p256.pem"), encoding: .utf8)
        )
        do {
            _ = try KeyRing(directories: [directory.path])
            Issue.record("a P-256 key in p192.pem was accepted")
        } catch {
            #expect(error.code == .badKey)
            #expect(error.reason.contains("p192.pem must hold a P-192 key"))
        }
        try directory.write("p192.pem", "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n")
        #expect(throws: PostbackKitError(.badKey, "")) { try KeyRing(directories: [directory.path]) }
    }
}

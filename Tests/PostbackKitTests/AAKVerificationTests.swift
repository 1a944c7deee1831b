import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

@Suite("AdAttributionKit verification")
struct AAKVerificationTests {
    static let payload = """
        {"postback-identifier":"0F3C9B1E-2D4A-4B5C-8D6E-7F8091A2B3C4","impression-type":"app-impression",\
        "ad-network-identifier":"example123.adattributionkit","did-win":true,"postback-sequence-index":0,\
        "conversion-type":"download","source-identifier":"5239","advertised-item-identifier":525463029,\
        "publisher-item-identifier":1234567891,"marketplace-identifier":"com.apple.AppStore"}
        """

    static func envelope(
        kid: String = "postbackd-test/0",
        alg: String = "ES256",
        payload: String = payload,
        extra: String = ""
    )
        throws -> String
    {
        let jws = try TestKeys.signer.jws(headerJSON: "{\"kid\":\"\(kid)\",\"alg\":\"\(alg)\"}", payloadJSON: payload)
        return
            "{\"jws-string\":\"\(jws)\",\"conversion-value\":24,\"ad-interaction-type\":\"click\",\"country-code\":\"US\"\(extra)}"
    }

    private func check(_ json: String) throws -> VerificationResult {
        try checkWithTestKeys(json)
    }

    @Test("Apple's development-key vector verifies and is marked development")
    func realVector() throws {
        let result = PostbackVerifier(keyRing: .apple).check(
            try Repository.bytes(Repository.vectors + "/apple-aak-dev1-reengagement.json")
        )
        #expect(result.verdict == .valid)
        #expect(result.kind == .aak)
        #expect(result.development)
        #expect(result.keyName == "apple-development-identifier/1")
        guard case .aak(let postback)? = result.postback else {
            Issue.record("not AAK")
            return
        }
        #expect(postback.keyID == "apple-development-identifier/1", "the escaped slash is decoded")
        #expect(postback.conversionType == .reengagement)
        #expect(postback.advertisedItemID == 10_738_027_756)
        #expect(postback.conversionValue == .fine(24))
        #expect(postback.dedupKey.transactionID == "85546EB7-FD39-44BC-8990-C98A4AC36A49")
    }

    @Test("a production-kid postback signed with the test key verifies and is not development")
    func production() throws {
        let result = try check(try Self.envelope())
        #expect(result.verdict == .valid, "\(result.reason ?? "")")
        #expect(!result.development)
        #expect(result.keyName == "test:postbackd-test/0")
        #expect(try check(try Self.envelope(kid: "postbackd-development/0")).development)
    }

    @Test("a changed payload does not verify")
    func tamperedPayload() throws {
        let original = try Self.envelope()
        let jws = try #require(
            original.split(separator: "\"")[3].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                as [String]?
        )
        let payload = Array(try #require(Base64.decode(jws[1].utf8, alphabet: .url)))
        let changed = String(decoding: payload, as: UTF8.self).replacingOccurrences(
            of: "\"download\"",
            with: "\"redownload\""
        )
        let forged = jws[0] + "." + Base64.encode(Array(changed.utf8), alphabet: .url) + "." + jws[2]
        let result = try check(original.replacingOccurrences(of: jws.joined(separator: "."), with: forged))
        #expect(result.verdict == .invalid)
        #expect(result.field == "jws-string")
    }

    @Test("a header naming another known kid does not verify")
    func otherKid() throws {
        let original = try Self.envelope()
        let segments = original.split(separator: "\"")[3].split(separator: ".").map(String.init)
        let header = Base64.encode(
            Array("{\"kid\":\"postbackd-development/0\",\"alg\":\"ES256\"}".utf8),
            alphabet: .url
        )
        let result = try check(original.replacingOccurrences(of: segments[0] + ".", with: header + "."))
        #expect(result.verdict == .invalid)
    }

    @Test("any alg but ES256 is refused", arguments: ["none", "HS256", "ES384", "es256"])
    func wrongAlgorithm(_ alg: String) throws {
        let result = try check(try Self.envelope(alg: alg))
        #expect(result.verdict == .invalid)
        #expect(result.reason?.contains("alg") == true)
    }

    @Test("an unknown kid is refused")
    func unknownKid() throws {
        let result = try check(try Self.envelope(kid: "apple-cas-identifier/9"))
        #expect(result.verdict == .invalid)
        #expect(result.reason?.contains("no key for JWS kid \"apple-cas-identifier/9\"") == true)
    }

    @Test("a JWS that is not three segments is malformed", arguments: ["a.b", "a.b.c.d", "", "..."])
    func segments(_ jws: String) throws {
        let result = try check("{\"jws-string\":\"\(jws)\"}")
        #expect(result.verdict == .malformed)
        #expect(result.field == "jws-string")
    }

    @Test("a header or payload that is not JSON is malformed")
    func notJSON() throws {
        let garbage = Base64.encode(Array("not json".utf8), alphabet: .url)
        let valid = Base64.encode(Array(Self.payload.utf8), alphabet: .url)
        #expect(try check("{\"jws-string\":\"\(garbage).\(valid).AAAA\"}").verdict == .malformed)
        let header = Base64.encode(Array("{\"kid\":\"postbackd-test/0\",\"alg\":\"ES256\"}".utf8), alphabet: .url)
        let result = try check("{\"jws-string\":\"\(header).\(garbage).AAAA\"}")
        #expect(result.verdict == .malformed)
        #expect(result.reason?.contains("JWS payload is not valid JSON") == true)
    }

    @Test("non-canonical base64url is refused")
    func nonCanonical() throws {
        let original = try Self.envelope()
        let segments = original.split(separator: "\"")[3].split(separator: ".").map(String.init)
        // Padding, which JWS forbids, on the header.
        #expect(
            try check(original.replacingOccurrences(of: segments[0] + ".", with: segments[0] + "=.")).verdict
                == .malformed
        )
        // A signature of the wrong length.
        #expect(
            try check(original.replacingOccurrences(of: "." + segments[2], with: "." + segments[2].dropLast(2))).verdict
                == .invalid
        )
    }

    @Test(
        "a missing payload field is malformed and named",
        arguments: ["postback-identifier", "ad-network-identifier", "conversion-type", "did-win"]
    )
    func missingField(_ field: String) throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(Self.payload.utf8)) as? [String: Any])
        object[field] = nil
        let payload = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let result = try check(try Self.envelope(payload: payload))
        #expect(result.verdict == .malformed)
        #expect(result.field == field)
        #expect(result.reason?.contains("JWS payload") == true)
    }

    @Test("conversion-type \"reengagement\", Apple's other spelling, verifies as re-engagement with a warning")
    func reengagementSpelling() throws {
        let spelled = Self.payload.replacingOccurrences(
            of: "\"conversion-type\":\"download\"",
            with: "\"conversion-type\":\"reengagement\""
        )
        #expect(spelled != Self.payload)
        let result = try check(try Self.envelope(payload: spelled))
        #expect(result.verdict == .valid, "\(result.reason ?? "")")
        guard case .aak(let postback)? = result.postback else {
            Issue.record("not AAK")
            return
        }
        #expect(postback.conversionType == .reengagement)
        #expect(result.warnings.count == 1)
        #expect(result.warnings.first?.contains("\"reengagement\" read as \"re-engagement\"") == true)

        // The spelling Apple signs in its example gives no warning.
        let hyphenated = Self.payload.replacingOccurrences(of: "\"download\"", with: "\"re-engagement\"")
        let plain = try check(try Self.envelope(payload: hyphenated))
        #expect(plain.verdict == .valid)
        #expect(plain.warnings.isEmpty)

        // Any other value is still malformed, and named.
        let other = Self.payload.replacingOccurrences(of: "\"download\"", with: "\"re_engagement\"")
        let refused = try check(try Self.envelope(payload: other))
        #expect(refused.verdict == .malformed)
        #expect(refused.field == "conversion-type")
        #expect(refused.reason?.contains("found string (\"re_engagement\")") == true, "\(refused.reason ?? "")")
    }

    @Test(
        "an ad-interaction-type other than view or click is malformed and named, as an unknown coarse value is",
        arguments: [
            (#""tap""#, #"found a string ("tap")"#), (#""Click""#, #"found a string ("Click")"#),
            (#""""#, #"found a string ("")"#), ("1", "found a number (1)"), ("[]", "found an array"),
        ]
    )
    func unknownInteraction(_ value: String, _ found: String) throws {
        let original = try Self.envelope()
        let changed = original.replacingOccurrences(
            of: #""ad-interaction-type":"click""#,
            with: #""ad-interaction-type":"# + value
        )
        #expect(changed != original)
        let result = try check(changed)
        #expect(result.verdict == .malformed, "\(result.reason ?? "")")
        #expect(result.field == "ad-interaction-type")
        #expect(
            result.reason == #"ad-interaction-type: expected "view" or "click", "# + found,
            "\(result.reason ?? "")"
        )
        #expect(result.postback == nil)

        // The same shape as an unknown coarse value's refusal.
        let coarse = try check(
            original.replacingOccurrences(
                of: #""conversion-value":24"#,
                with: #""coarse-conversion-value":"huge""#
            )
        )
        #expect(coarse.verdict == result.verdict)
        #expect(coarse.kind == result.kind)
        #expect(
            coarse.reason == #"coarse-conversion-value: expected "low", "medium" or "high", found a string ("huge")"#
        )
    }

    @Test("ad-interaction-type view, click, null or absent verifies and is kept")
    func knownInteraction() throws {
        let original = try Self.envelope()
        for (replacement, kept) in [
            (#""ad-interaction-type":"view""#, "view"), (#""ad-interaction-type":"click""#, "click"),
            (#""ad-interaction-type":null"#, nil), (#""no-interaction":1"#, nil),
        ] as [(String, String?)] {
            let result = try check(
                original.replacingOccurrences(of: #""ad-interaction-type":"click""#, with: replacement)
            )
            #expect(result.verdict == .valid, "\(replacement): \(result.reason ?? "")")
            guard case .aak(let postback)? = result.postback else {
                Issue.record("not AAK: \(replacement)")
                continue
            }
            #expect(postback.adInteractionType == kept, "\(replacement)")
        }
    }

    @Test("a JWS whose protected header carries crit is invalid (RFC 7515 §4.1.11), alone and in a batch")
    func criticalHeader() throws {
        let ring = try TestKeys.ring
        var bodies: [String] = []
        for header in [
            #"{"kid":"postbackd-test/0","alg":"ES256","crit":["exp"],"exp":1767225600}"#,
            #"{"kid":"postbackd-test/0","alg":"ES256","crit":[]}"#,
            #"{"crit":["b64"],"b64":true,"kid":"postbackd-test/0","alg":"ES256"}"#,
        ] {
            let jws = try TestKeys.signer.jws(headerJSON: header, payloadJSON: Self.payload)
            bodies.append(#"{"jws-string":""# + jws + #"","conversion-value":24}"#)
        }
        // The same header without crit, signed the same way, verifies.
        let plain = try TestKeys.signer.jws(
            headerJSON: #"{"kid":"postbackd-test/0","alg":"ES256","exp":1767225600}"#,
            payloadJSON: Self.payload
        )
        let valid = #"{"jws-string":""# + plain + #"","conversion-value":24}"#
        #expect(try check(valid).verdict == .valid)

        let verifier = PostbackVerifier(keyRing: ring)
        for body in bodies {
            let result = verifier.check(Array(body.utf8))
            #expect(result.verdict == .invalid, "\(body): \(result.reason ?? "")")
            #expect(result.field == "jws-string")
            #expect(result.reason?.contains("carries crit") == true, "\(result.reason ?? "")")
            #expect(result.reason?.contains("RFC 7515") == true)
            #expect(result.keyName == nil)
        }

        // The batch path, which checks signatures together, refuses them too.
        let directory = try TemporaryDirectory()
        let file = try directory.write("crit.jsonl", ([valid] + bodies + [valid]).joined(separator: "\n"))
        let (files, _) = try InputPaths.expand([file])
        let reader = EntryReader(files: files)
        var verdicts: [Verdict] = []
        while let batch = reader.nextBatch() {
            verdicts += batch.bytes.withUnsafeBufferPointer { verifier.check(batch.entries, in: $0) }.map(\.verdict)
        }
        #expect(verdicts == [.valid, .invalid, .invalid, .invalid, .valid])
    }

    @Test("on the AdAttributionKit path a body without jws-string is told it misses jws-string")
    func missingJWSOnItsPath() throws {
        let verifier = PostbackVerifier(keyRing: try TestKeys.ring)
        for body in [#"{}"#, #"{"conversion-value":24,"ad-interaction-type":"click"}"#, #"{"jws":"a.b.c"}"#] {
            let result = Array(body.utf8).withUnsafeBufferPointer { verifier.check($0, path: .aak) }
            #expect(result.verdict == .malformed, "\(body)")
            #expect(result.kind == .aak)
            #expect(result.field == "jws-string", "\(body): \(result.reason ?? "")")
            #expect(result.reason?.hasPrefix("jws-string: missing, but the AdAttributionKit path requires it") == true)
            #expect(result.reason?.contains("1.0") == false, "\(result.reason ?? "")")

            // Elsewhere (a file, the SKAdNetwork path) it is still read as SKAdNetwork.
            for skan in [
                verifier.check(Array(body.utf8)),
                Array(body.utf8).withUnsafeBufferPointer { verifier.check($0, path: .skan) },
            ] {
                #expect(skan.kind == .skan)
                #expect(skan.field == "ad-network-id")
            }
        }
        // A body is still read as the kind its signature says, whichever path it came to.
        let skan = try SamplePostback.signedJSON(.v4_0, withOptional: true)
        let onAAKPath = Array(skan.utf8).withUnsafeBufferPointer { verifier.check($0, path: .aak) }
        #expect(onAAKPath.verdict == .valid, "\(onAAKPath.reason ?? "")")
        #expect(onAAKPath.kind == .skan)
        let aak = Array(try Self.envelope().utf8).withUnsafeBufferPointer { verifier.check($0, path: .skan) }
        #expect(aak.verdict == .valid)
        #expect(aak.kind == .aak)
    }

    @Test("unsigned envelope fields can change without breaking the signature")
    func unsignedEnvelope() throws {
        let original = try Self.envelope()
        let changed = original.replacingOccurrences(of: "\"conversion-value\":24", with: "\"conversion-value\":25")
        #expect(try check(changed).verdict == .valid)
        let both = original.replacingOccurrences(
            of: "\"conversion-value\":24",
            with: "\"conversion-value\":24,\"coarse-conversion-value\":\"low\""
        )
        #expect(try check(both).verdict == .malformed)
    }
}

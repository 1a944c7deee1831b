import PostbackKit
import PostbackTestSupport
import Testing

/// Fixed-base verification (``ECFixedBase``) must reach exactly the verdict OpenSSL's own
/// `EVP_PKEY_verify` reaches, for every signature: genuine, altered, malleated or malformed.
@Suite("Fixed-base verification agrees with OpenSSL's verify")
struct FixedBaseVerificationTests {
    /// Each curve's group order n, big-endian.
    private static let orders: [ECCurve: [UInt8]] = [
        .p192: hexBytes("FFFFFFFFFFFFFFFFFFFFFFFF99DEF836146BC9B1B4D22831"),
        .p256: hexBytes("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"),
    ]

    private func keys(_ curve: ECCurve) throws -> (signer: ECPrivateKey, other: ECPublicKey) {
        let signer = try TestKeys.signer
        let key = try #require(curve == .p256 ? signer.p256 : signer.p192)
        // Another key on the same curve: Apple's.
        let other = try #require(curve == .p256 ? KeyRing.apple.p256.first?.key : KeyRing.apple.p192.first?.key)
        return (key, other)
    }

    /// Both verifiers' verdicts on one signature; the fixed-base one uses its table from the start.
    private struct Pair {
        let reference = ECDSAVerifier(fixedBaseThreshold: .max)
        let fixedBase = ECDSAVerifier(fixedBaseThreshold: 0)

        func verdicts(_ signature: [UInt8], _ digest: [UInt8], _ key: ECPublicKey) -> (SignatureCheck, SignatureCheck) {
            (
                reference.verify(signature: signature, digest: digest, key: key),
                fixedBase.verify(signature: signature, digest: digest, key: key)
            )
        }
    }

    @Test("genuine, high-s, bit-flipped, wrong-digest and wrong-key signatures", arguments: ECCurve.allCases)
    func randomSignatures(_ curve: ECCurve) throws {
        let (signer, other) = try keys(curve)
        let order = try #require(Self.orders[curve])
        let pair = Pair()
        var random = SeededRandom(seed: 20_261_122)
        var outcomes: [SignatureCheck: Int] = [:]
        for round in 0..<48 {
            let digest = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            let der = try signer.signature(forDigest: digest)
            let raw = try #require(ECDSASignatureEncoding.raw(fromDER: der, coordinateLength: curve.coordinateLength))
            let half = curve.coordinateLength
            let highS = try #require(
                ECDSASignatureEncoding.der(fromRaw: Array(raw[..<half]) + subtract(order, Array(raw[half...])))
            )
            var flipped = der
            let bit = Int.random(in: 0..<(flipped.count * 8), using: &random)
            flipped[bit / 8] ^= 1 << (bit % 8)
            // Within the first 24 bytes: P-192 signs only the digest's leftmost 192 bits.
            var otherDigest = digest
            otherDigest[round % 24] ^= 0x80

            let cases: [(String, [UInt8], [UInt8], ECPublicKey, SignatureCheck?)] = [
                ("genuine", der, digest, signer.publicKey, .verified),
                ("high s (n - s), which OpenSSL accepts", highS, digest, signer.publicKey, .verified),
                ("bit \(bit) flipped", flipped, digest, signer.publicKey, nil),
                ("another digest", der, otherDigest, signer.publicKey, .mismatch),
                ("another key", der, digest, other, .mismatch),
            ]
            for (name, signature, message, key, expected) in cases {
                let (reference, fixedBase) = pair.verdicts(signature, message, key)
                #expect(reference == fixedBase, "\(curve) round \(round): \(name)")
                if let expected { #expect(reference == expected, "\(curve) round \(round): \(name)") }
                outcomes[fixedBase, default: 0] += 1
            }
        }
        // The flipped bits reach all three outcomes over 48 rounds.
        #expect(outcomes.keys.count == 3, "\(outcomes)")
    }

    @Test("r or s out of range, and DER that is not minimal or has trailing bytes", arguments: ECCurve.allCases)
    func edgeCases(_ curve: ECCurve) throws {
        let (signer, _) = try keys(curve)
        let order = try #require(Self.orders[curve])
        let pair = Pair()
        let digest = SHA256Digest(hashing: Array("edge cases".utf8)).bytes
        let der = try signer.signature(forDigest: digest)
        let raw = try #require(ECDSASignatureEncoding.raw(fromDER: der, coordinateLength: curve.coordinateLength))
        let half = curve.coordinateLength
        let (r, s) = (Array(raw[..<half]), Array(raw[half...]))
        let zero = [UInt8](repeating: 0, count: half)
        let ones = [UInt8](repeating: 0xFF, count: half)

        var cases: [(String, [UInt8], SignatureCheck)] = [
            ("r = 0", try #require(ECDSASignatureEncoding.der(fromRaw: zero + s)), .mismatch),
            ("s = 0", try #require(ECDSASignatureEncoding.der(fromRaw: r + zero)), .mismatch),
            ("r = n", try #require(ECDSASignatureEncoding.der(fromRaw: order + s)), .mismatch),
            ("s = n", try #require(ECDSASignatureEncoding.der(fromRaw: r + order)), .mismatch),
            ("r = 2^k - 1 > n", try #require(ECDSASignatureEncoding.der(fromRaw: ones + s)), .mismatch),
            ("trailing byte", der + [0], .notDER),
            ("empty", [], .notDER),
            ("truncated", Array(der.dropLast()), .notDER),
        ]
        // The same r with a redundant leading zero byte: BER, not DER.
        let rLength = Int(der[3])
        var padded = [der[0], der[1] + 1, 0x02, UInt8(rLength + 1), 0x00]
        padded += der[4...]
        cases.append(("r with a redundant leading zero", padded, .notDER))

        for (name, signature, expected) in cases {
            let (reference, fixedBase) = pair.verdicts(signature, digest, signer.publicKey)
            #expect(reference == expected, "\(curve): \(name)")
            #expect(fixedBase == expected, "\(curve): \(name)")
        }
    }

    @Test("a verifier switches to the table after the threshold, and its verdicts do not change")
    func threshold() throws {
        let (signer, _) = try keys(.p256)
        let verifier = ECDSAVerifier(fixedBaseThreshold: 3)
        let digest = SHA256Digest(hashing: Array("threshold".utf8)).bytes
        let der = try signer.signature(forDigest: digest)
        for use in 1...6 {
            #expect(verifier.verify(signature: der, digest: digest, key: signer.publicKey) == .verified, "use \(use)")
            #expect(verifier.verify(signature: der + [0], digest: digest, key: signer.publicKey) == .notDER)
        }
        #expect(signer.publicKey.fixedBase != nil)
    }

    @Test("a batch of both curves gets the verdicts its signatures get one by one")
    func batch() throws {
        let reference = ECDSAVerifier(fixedBaseThreshold: .max)
        var random = SeededRandom(seed: 7)
        var requests: [ECDSAVerifier.Request] = []
        for curve in ECCurve.allCases {
            let (signer, other) = try keys(curve)
            let order = try #require(Self.orders[curve])
            for _ in 0..<40 {
                let digest = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
                let der = try signer.signature(forDigest: digest)
                var flipped = der
                let bit = Int.random(in: 0..<(flipped.count * 8), using: &random)
                flipped[bit / 8] ^= 1 << (bit % 8)
                let half = curve.coordinateLength
                let rIsN = try #require(ECDSASignatureEncoding.der(fromRaw: order + Array(der.suffix(half))))
                requests += [
                    .init(signature: der, digest: digest, key: signer.publicKey),
                    .init(signature: flipped, digest: digest, key: signer.publicKey),
                    .init(signature: der, digest: digest, key: other),
                    .init(signature: der + [0], digest: digest, key: signer.publicKey),
                    .init(signature: rIsN, digest: digest, key: signer.publicKey),
                ]
            }
        }
        requests.shuffle(using: &random)
        let expected = requests.map { reference.verify(signature: $0.signature, digest: $0.digest, key: $0.key) }
        #expect(expected.filter { $0 == .verified }.count >= 80)
        #expect(ECDSAVerifier(fixedBaseThreshold: 0).verify(requests) == expected)
        #expect(ECDSAVerifier(fixedBaseThreshold: .max).verify(requests) == expected)
        // Past the threshold part-way through the batch: some keys switch, others do not yet.
        #expect(ECDSAVerifier(fixedBaseThreshold: 60).verify(requests) == expected)
        #expect(ECDSAVerifier(fixedBaseThreshold: 0).verify([]) == [])
    }

    @Test("P-192 ignores the digest's bits past its order's 192, in both verifiers")
    func truncatedDigest() throws {
        let (signer, _) = try keys(.p192)
        let pair = Pair()
        let digest = SHA256Digest(hashing: Array("truncation".utf8)).bytes
        let der = try signer.signature(forDigest: digest)
        var tail = digest
        tail[31] ^= 0xFF
        let (reference, fixedBase) = pair.verdicts(der, tail, signer.publicKey)
        #expect(reference == .verified)
        #expect(fixedBase == .verified)
    }
}

/// `a - b` for big-endian numbers of equal length with a ≥ b.
private func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: a.count)
    var borrow = 0
    for index in stride(from: a.count - 1, through: 0, by: -1) {
        var difference = Int(a[index]) - Int(b[index]) - borrow
        borrow = difference < 0 ? 1 : 0
        if difference < 0 { difference += 256 }
        result[index] = UInt8(difference)
    }
    return result
}

private func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return bytes
}

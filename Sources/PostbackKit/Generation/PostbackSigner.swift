/// Signs postbacks with private keys, the way Apple signs real ones, for tests, demos and
/// load generation (`postbackd generate`).
///
/// Apple's private keys are not available: what this signs verifies only with the matching
/// public keys (`postbackd verify --keys Keys/test`).
package struct PostbackSigner: Sendable {
    /// Signs SKAdNetwork 1.0 and 2.0.
    package var p192: ECPrivateKey?
    /// Signs SKAdNetwork 2.1+ and AdAttributionKit.
    package var p256: ECPrivateKey?

    package init(p192: ECPrivateKey?, p256: ECPrivateKey?) {
        self.p192 = p192
        self.p256 = p256
    }

    /// Reads `p192-private.pem` and `p256-private.pem` from a folder (either may be absent).
    package init(directory: String) throws {
        let p192 =
            readSmallFile(directory + "/p192-private.pem").map { try? ECPrivateKey(pemRepresentation: $0) } ?? nil
        let p256 =
            readSmallFile(directory + "/p256-private.pem").map { try? ECPrivateKey(pemRepresentation: $0) } ?? nil
        guard p192 != nil || p256 != nil else {
            throw PostbackKitError(.unreadable, "\(directory): no readable p192-private.pem or p256-private.pem")
        }
        self.init(p192: p192, p256: p256)
    }

    /// Returns `postback` with its `attribution-signature` set.
    ///
    /// - Parameter asTestDevice: sign the message without `source-app-id` (which must then be
    ///   0), as a real device in test mode does.
    package func signed(_ postback: SKANPostback, asTestDevice: Bool = false) throws -> SKANPostback {
        let curve = postback.version.curve
        guard let key = curve == .p192 ? p192 : p256 else {
            throw PostbackKitError(.unreadable, "no \(curve) private key to sign version \(postback.version) with")
        }
        var signed = postback
        let signature = try key.signature(for: postback.signedMessage(omittingSourceAppID: asTestDevice))
        signed.attributionSignature = Base64.encode(signature)
        return signed
    }

    /// A compact JWS (ES256) over `header` and `payload` JSON text, as AdAttributionKit sends.
    package func jws(headerJSON: String, payloadJSON: String) throws -> String {
        guard let key = p256 else { throw PostbackKitError(.unreadable, "no P-256 private key to sign a JWS with") }
        let signingInput =
            Base64.encode(Array(headerJSON.utf8), alphabet: .url) + "."
            + Base64.encode(Array(payloadJSON.utf8), alphabet: .url)
        let der = try key.signature(for: Array(signingInput.utf8))
        guard let raw = ECDSASignatureEncoding.raw(fromDER: der, coordinateLength: ECCurve.p256.coordinateLength) else {
            throw PostbackKitError(.unreadable, "OpenSSL produced a signature that is not DER")
        }
        return signingInput + "." + Base64.encode(raw, alphabet: .url)
    }
}

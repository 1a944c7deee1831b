import CPostbackdOpenSSL

/// A curve point with OpenSSL's table of its precomputed multiples: a copy of the curve's group
/// whose generator is that point.
///
/// ECDSA verification computes u1·G + u2·Q. OpenSSL's own verify multiplies the fixed generator
/// G through a precomputed table but the public key Q by a variable-base method, which is most
/// of a verify's cost (on P-256 about 50 µs of 70). Every postback of a version is signed with
/// the same Apple key, so postbackd builds the same kind of table for Q once, when the key is
/// loaded, and multiplies both points as fixed bases (``ECDSAVerifier``), about twice as fast.
/// The arithmetic is still OpenSSL's; only the order of work changes.
// @unchecked: the group and its table are built in init and only read afterwards; OpenSSL's
// point multiplication reads a group without changing it, so threads may share one.
package final class ECFixedBase: @unchecked Sendable {
    /// The group with this point as its generator, precomputed.
    let group: OpaquePointer
    let curve: ECCurve

    /// A table for `curve`'s own generator G.
    static func generator(of curve: ECCurve) -> ECFixedBase? {
        switch curve {
        case .p192: standardP192
        case .p256: standardP256
        }
    }

    private static let standardP192 = ECFixedBase(curve: .p192, encodedPoint: nil)
    private static let standardP256 = ECFixedBase(curve: .p256, encodedPoint: nil)

    /// A table for a public key's point; nil when OpenSSL cannot build one (the key is then
    /// verified the ordinary way).
    convenience init?(publicKey key: OpaquePointer, curve: ECCurve) {
        var encoded: UnsafeMutablePointer<UInt8>? = nil
        let length = EVP_PKEY_get1_encoded_public_key(key, &encoded)
        guard length > 0, let encoded else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { CPostbackdOpenSSL_free(encoded) }
        self.init(curve: curve, encodedPoint: UnsafeBufferPointer(start: encoded, count: length))
    }

    /// - Parameter encodedPoint: the point as SEC 1 octets; nil keeps the curve's generator.
    private init?(curve: ECCurve, encodedPoint: UnsafeBufferPointer<UInt8>?) {
        guard let group = EC_GROUP_new_by_curve_name(curve.openSSLNID) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        guard let context = BN_CTX_new() else {
            EC_GROUP_free(group)
            return nil
        }
        defer { BN_CTX_free(context) }
        var built = true
        if let encodedPoint {
            built = false
            if let point = EC_POINT_new(group) {
                defer { EC_POINT_free(point) }
                built =
                    EC_POINT_oct2point(group, point, encodedPoint.baseAddress, encodedPoint.count, context) == 1
                    && EC_POINT_is_at_infinity(group, point) == 0
                    && EC_GROUP_set_generator(group, point, EC_GROUP_get0_order(group), EC_GROUP_get0_cofactor(group))
                        == 1
            }
        }
        guard built, CPostbackdOpenSSL_EC_GROUP_precompute_mult(group, context) == 1 else {
            OpenSSLErrorQueue.clear()
            EC_GROUP_free(group)
            return nil
        }
        self.group = group
        self.curve = curve
    }

    deinit {
        EC_GROUP_free(group)
    }
}

extension ECCurve {
    /// OpenSSL's numeric identifier of the curve.
    var openSSLNID: Int32 {
        switch self {
        case .p192: NID_X9_62_prime192v1
        case .p256: NID_X9_62_prime256v1
        }
    }
}

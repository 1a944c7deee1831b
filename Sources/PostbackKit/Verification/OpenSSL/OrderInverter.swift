import CPostbackdOpenSSL

/// Inverts scalars modulo a curve's order n as s^(n−2) mod n (Fermat), in Montgomery form.
///
/// `BN_mod_inverse` takes 25–30 µs on the P-256 order here (its binary algorithm steps one
/// bit at a time through generic big numbers), a third of a one-off verification; the
/// exponentiation runs on OpenSSL's Montgomery multiplication and takes a fraction of that.
/// Batches do not need it: they share one inversion among all their signatures
/// (``ECDSAVerifier/verify(_:)``). Signatures are public, so nothing here needs constant time.
final class OrderInverter: @unchecked Sendable {
    // @unchecked: every field is written once, in init, and only read afterwards
    // (`BN_mod_exp_mont` reads a Montgomery context it is given without changing it).
    private let order: OpaquePointer
    private let exponent: OpaquePointer
    private let montgomery: OpaquePointer

    static func forCurve(_ curve: ECCurve) -> OrderInverter? {
        switch curve {
        case .p192: p192
        case .p256: p256
        }
    }

    private static let p192 = OrderInverter(curve: .p192)
    private static let p256 = OrderInverter(curve: .p256)

    private init?(curve: ECCurve) {
        guard let group = EC_GROUP_new_by_curve_name(curve.openSSLNID) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { EC_GROUP_free(group) }
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        // A copy does not carry the group's constant-time flag, which would choose the slower
        // ladder (`BN_copy` keeps only the fixed-top flag).
        guard let groupOrder = EC_GROUP_get0_order(group), let order = BN_dup(groupOrder) else { return nil }
        guard let exponent = BN_dup(order), BN_sub_word(exponent, 2) == 1, let montgomery = BN_MONT_CTX_new(),
            BN_MONT_CTX_set(montgomery, order, context) == 1
        else {
            OpenSSLErrorQueue.clear()
            BN_free(order)
            return nil
        }
        self.order = order
        self.exponent = exponent
        self.montgomery = montgomery
    }

    deinit {
        BN_MONT_CTX_free(montgomery)
        BN_free(exponent)
        BN_free(order)
    }

    /// Sets `result` to s⁻¹ mod n; false when OpenSSL fails (out of memory). `s` is in [1, n−1].
    func invert(_ s: OpaquePointer, into result: OpaquePointer, context: OpaquePointer) -> Bool {
        BN_mod_exp_mont(result, s, exponent, order, context, montgomery) == 1
    }
}

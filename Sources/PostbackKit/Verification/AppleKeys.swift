/// Apple's public keys, built into the binary so `postbackd verify` works from any folder.
///
/// Base64 DER SubjectPublicKeyInfo, copied from `spec/postbacks.md` section 2, which took them
/// from Apple's "SKAdNetwork 1 release notes", "SKAdNetwork 2 release notes", "Verifying an
/// install-validation postback" and AdAttributionKit's "Verifying a postback". The same keys
/// are in `Keys/apple/` as PEM; a test checks that both agree.
enum AppleKeys {
    /// Verifies SKAdNetwork 1.0 and 2.0 postbacks (P-192).
    package static let p192 =
        "MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG"
    /// Verifies SKAdNetwork 2.1 and later postbacks, and production AdAttributionKit postbacks
    /// (`kid` `apple-cas-identifier/0`) (P-256).
    package static let p256 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="
    /// AdAttributionKit development key `apple-development-identifier/0` (P-256).
    static let aakDevelopment0 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELeEDzpJEP+/qRSE5hJVC1p1J0ssUnQGMzBBbvnACBok8OVGGLgxL0myrKiy6lvRtSlLRsWit87i+vftD8AEqeQ=="
    /// AdAttributionKit development key `apple-development-identifier/1` (P-256).
    static let aakDevelopment1 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YzdO7eM97s/IJ25kdW5CZ3A14USE5IJ5Ha/vhWaxI6UBI1ZxCEvjrKxVluVGe6qWwF1BDFq+QHqKfH5u+wxHQ=="
}

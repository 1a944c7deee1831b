/// One thing `postbackd doctor` found wrong: where, what, and what to do about it.
///
/// Every check returns these (the Info.plist check, the endpoint check, and any later one,
/// such as a store's): `subject` says where (a key path in a property list,
/// `SKAdNetworkItems[3].SKAdNetworkIdentifier`; a URL path; a table and row), `problem` what
/// is wrong, `fix` what to do. `kind` is a short stable name of the problem for tests and
/// scripts (`missing`, `nested`, `wrong-type`, …); people read `problem`.
package struct DoctorFinding: Sendable, Hashable {
    /// A short stable name of the kind of problem; checks may add their own.
    package struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// A key that must be present is not.
        package static let missing = Kind("missing")
        /// A key iOS reads only at the top level was found inside another dictionary.
        package static let nested = Kind("nested")
        /// A value of the wrong property list type (a string where a Boolean belongs).
        package static let wrongType = Kind("wrong-type")
        /// A number outside its documented range.
        package static let outOfRange = Kind("out-of-range")
        /// A key iOS does not read where it stands.
        package static let unknownKey = Kind("unknown-key")
        /// A known key in the wrong dictionary.
        package static let misplaced = Kind("misplaced")
        /// A value that must be lower-case is not.
        package static let notLowercase = Kind("not-lowercase")
        /// A value not of its documented form.
        package static let malformed = Kind("malformed")
        /// The same value twice where each must be distinct.
        package static let duplicate = Kind("duplicate")
        /// An endpoint URL that is not `https://` and a bare domain.
        package static let badURL = Kind("bad-url")
        /// An endpoint whose host is a subdomain: iOS posts to the registrable domain instead.
        package static let subdomain = Kind("subdomain")
        /// The TLS certificate has expired.
        package static let certificateExpired = Kind("certificate-expired")
        /// The TLS certificate expires within the warning period.
        package static let certificateExpiring = Kind("certificate-expiring")
        /// The TLS certificate's chain does not verify against the trusted roots.
        package static let certificateUntrusted = Kind("certificate-untrusted")
        /// The TLS certificate does not name the host.
        package static let hostMismatch = Kind("host-mismatch")
        /// A probe was answered with another status than postbackd's contract says.
        package static let unexpectedStatus = Kind("unexpected-status")
        /// A probe was answered with the right status but not postbackd's answer.
        package static let unexpectedAnswer = Kind("unexpected-answer")
        /// A probe got no answer (timeout, connection closed).
        package static let noAnswer = Kind("no-answer")
    }

    /// Where: a key path, a URL path, a table and row.
    package var subject: String
    package var kind: Kind
    /// What is wrong, in a sentence.
    package var problem: String
    /// What to do about it, in a sentence.
    package var fix: String

    package init(_ subject: String, _ kind: Kind, problem: String, fix: String) {
        self.subject = subject
        self.kind = kind
        self.problem = problem
        self.fix = fix
    }
}

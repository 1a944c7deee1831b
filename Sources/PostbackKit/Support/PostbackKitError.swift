/// Why PostbackKit could not do what was asked, when all there is to say is a message: an input
/// path that does not exist, a file or a line input that cannot be read, a key OpenSSL cannot use,
/// keys that cannot be loaded (``KeyRing``).
///
/// Errors compare equal by ``MessageError/code``; ``MessageError/reason`` is what a person reads,
/// and ``MessageError/source`` says where in postbackd it was made.
public typealias PostbackKitError = MessageError<PostbackKitErrorDomain>

/// The domain of ``PostbackKitError``'s codes.
public enum PostbackKitErrorDomain: Sendable {}

extension ErrorCode where Domain == PostbackKitError {
    /// A path given on the command line does not exist.
    package static let noSuchPath = Self("noSuchPath")
    /// A path exists but cannot be opened, listed, read or written: a folder where a file was
    /// expected, a read that failed; or key bytes that are not a PEM or DER key OpenSSL can read.
    package static let unreadable = Self("unreadable")
    /// No such file.
    package static let notFound = Self("notFound")
    /// The user may not read the file.
    package static let notPermitted = Self("notPermitted")
    /// The file is larger than the limit.
    package static let tooLarge = Self("tooLarge")
    /// A line input (or standard input) cannot be opened: no such file, not permitted.
    package static let cannotOpen = Self("cannotOpen")
    /// Reading a line input failed part way, after some lines were read.
    package static let readFailed = Self("readFailed")
    /// The key is not an elliptic-curve key.
    package static let notECKey = Self("notECKey")
    /// The key is on a curve postbacks are never signed with.
    package static let unsupportedCurve = Self("unsupportedCurve")
}

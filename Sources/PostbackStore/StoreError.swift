import PostbackKit

/// What PostbackStore refuses or cannot do, in one sentence that says what was wrong and what to
/// do: the target's one coded error for errors that carry only a message (swift-certificates'
/// `CertificateError`). Callers match on ``code``; ``source`` says where it was thrown.
///
/// Errors whose fields callers read keep types of their own: ``StoreFault`` (its public
/// reason, for `serve`'s 503), ``ReportRequestError`` (its option, an HTTP answer's `field`),
/// ``BundleIDConflict`` (caught by type inside a transaction, to roll it back).
package typealias StoreError = MessageError<StoreErrorDomain>

/// The domain of ``StoreError``'s codes.
package enum StoreErrorDomain: Sendable {}

// `apps`: an app id, name or bundle identifier that cannot be used, and `retention set`: a
// setting that cannot be used.
extension ErrorCode where Domain == StoreError {
    package static let invalidValue = Self("invalidValue")
    /// An app that is not registered.
    package static let unknownApp = Self("unknownApp")
}

// `keys add` and `keys revoke`.
extension ErrorCode where Domain == StoreError {
    package static let invalidName = Self("invalidName")
    package static let invalidApps = Self("invalidApps")
    package static let invalidScope = Self("invalidScope")
    /// A channel a key's `forwards` scope names that is not a channel's name, or `device`.
    package static let invalidChannel = Self("invalidChannel")
    /// A key of that name exists (revoked keys keep their names).
    package static let nameTaken = Self("nameTaken")
    package static let unknownName = Self("unknownName")
}

// `export`'s output, which cannot be written (a full disk, a closed pipe): nothing was recorded.
extension ErrorCode where Domain == StoreError {
    /// The file (its `.partial` name) cannot be created.
    package static let cannotCreate = Self("cannotCreate")
    /// A write failed (a full disk, a closed pipe).
    package static let cannotWrite = Self("cannotWrite")
    /// What was written cannot be synced to disk.
    package static let cannotFlush = Self("cannotFlush")
    /// The complete file cannot be renamed into place.
    package static let cannotRename = Self("cannotRename")
    /// A consumer's cursor made by the other engine (the consumer's store was moved or copied).
    package static let otherEngine = Self("otherEngine")
}

// A `--db` value that looks like a PostgreSQL URL but is not a valid one.
extension ErrorCode where Domain == StoreError {
    /// A part the URL needs is missing: the scheme, the user, the host or the database name.
    package static let incomplete = Self("incomplete")
    /// An IPv6 host's `[` is not closed.
    package static let invalidHost = Self("invalidHost")
    /// The port is not a number from 1 to 65535.
    package static let invalidPort = Self("invalidPort")
    /// A query parameter other than `sslmode`, `target_session_attrs` and `connect_timeout`.
    package static let unknownParameter = Self("unknownParameter")
    /// `sslmode` is not `disable`, `prefer` or `require`.
    package static let invalidSSLMode = Self("invalidSSLMode")
    /// `target_session_attrs` is not one of libpq's six values.
    package static let invalidSessionAttributes = Self("invalidSessionAttributes")
    /// `connect_timeout` is not a number of seconds from 1 to 3600.
    package static let invalidConnectTimeout = Self("invalidConnectTimeout")
}

// A `--by` name that is not a dimension (of `report`, or of `apple-ads report`).
extension ErrorCode where Domain == StoreError {
    package static let unknownDimension = Self("unknownDimension")
}

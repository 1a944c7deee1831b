/// Apple Ads attribution through the AdServices framework: the token an app obtains
/// (`AAAttribution.attributionToken()`), and what postbackd keeps of it.
///
/// The app sends `{"app_id": …, "token": "…", "obtained_at": "ISO 8601", "install_id": "…"}` to `serve`
/// (`POST /v1/apple-ads/token`) or a batch job collects the same objects as JSON Lines
/// (`apple-ads add`). A token is valid for 24 hours from when the app obtained it.
package struct AppleAdsToken: Sendable, Hashable {
    /// The app's App Store id.
    package var appID: Int64
    /// The token as the app sent it (base64 text, a few hundred characters).
    package var token: String
    /// When the app obtained it; the time it arrived when the app did not say, or said a
    /// later time (a phone's clock runs fast: the token must not be taken as valid longer).
    package var obtainedAt: UTCInstant
    /// Whether the submission gave `obtained_at`.
    package var obtainedAtGiven: Bool
    /// What the app keeps for this install (e.g. a UUID in its keychain), if it sent one. Since
    /// October 2025 the framework gives a new token whenever the user changes their tracking
    /// permission: the tokens of one app and install id are one install in the reports.
    package var installID: String?

    package init(
        appID: Int64,
        token: String,
        obtainedAt: UTCInstant,
        obtainedAtGiven: Bool = true,
        installID: String? = nil
    ) {
        self.appID = appID
        self.token = token
        self.obtainedAt = obtainedAt
        self.obtainedAtGiven = obtainedAtGiven
        self.installID = installID
    }

    /// How long Apple accepts a token after the app obtained it.
    package static let validityMs: Int64 = 24 * 3_600_000
    /// The longest token accepted. Apple's are a few hundred characters.
    static let maximumLength = 4_096
    /// The longest `install_id` accepted (a UUID is 36 characters).
    static let maximumInstallIDLength = 128
    /// How far in the future `obtained_at` may be (a phone's clock runs fast).
    static let clockSkewMs: Int64 = 3_600_000

    /// When Apple stops accepting the token.
    package var expiresAt: UTCInstant { UTCInstant(milliseconds: obtainedAt.milliseconds + Self.validityMs) }

    /// SHA-256 of the token's bytes, in hex: what is kept once the token itself is deleted, so
    /// that the same token sent again is recognised and never exchanged twice.
    package var sha256: String { hexString(SHA256Digest.hash(Array(token.utf8))) }

    /// Reads one submission from its JSON text (see ``parse(_:now:)-(JSONValue,_)``).
    package static func parse(json bytes: [UInt8], now: UTCInstant) throws(AppleAdsTokenError) -> AppleAdsToken {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw AppleAdsTokenError(.notJSON, field: nil, message: "not valid JSON: \(error.message)")
        }
        return try parse(value, now: now)
    }

    /// Reads one submission: `app_id` (an App Store id, as a number or a decimal string),
    /// `token`, and optionally `obtained_at` (ISO 8601; default `now`; a time after `now`, up to
    /// an hour, is taken as `now`) and `install_id` (1 to 128 printable ASCII characters).
    ///
    /// - Throws: ``AppleAdsTokenError`` naming the field and what is wrong with it.
    package static func parse(_ value: JSONValue, now: UTCInstant) throws(AppleAdsTokenError) -> AppleAdsToken {
        guard case .object = value else {
            throw AppleAdsTokenError(.wrongType, field: nil, message: "expected a JSON object, found \(value.kindName)")
        }
        let appID: Int64
        switch value["app_id"] {
        case .number(let text)?, .string(let text)?:
            guard let id = Int64(text), id > 0 else {
                throw AppleAdsTokenError(
                    .invalidValue,
                    field: "app_id",
                    message: "expected an App Store id (a positive integer), found \(clip(text))"
                )
            }
            appID = id
        case nil, .null?:
            throw AppleAdsTokenError(.missing, field: "app_id", message: "missing: give the app's App Store id")
        case let other?:
            throw AppleAdsTokenError(.wrongType, field: "app_id", message: "expected a number, found \(other.kindName)")
        }
        let token: String
        switch value["token"] {
        case .string(let text)?:
            token = text
        case nil, .null?:
            throw AppleAdsTokenError(
                .missing,
                field: "token",
                message: "missing: give the token AAAttribution.attributionToken() returned"
            )
        case let other?:
            throw AppleAdsTokenError(.wrongType, field: "token", message: "expected a string, found \(other.kindName)")
        }
        if let problem = problem(token) { throw AppleAdsTokenError(.invalidValue, field: "token", message: problem) }
        var obtainedAt = now
        var given = false
        switch value["obtained_at"] {
        case nil, .null?:
            break
        case .string(let text)?:
            guard let instant = UTCInstant(iso8601: text) else {
                throw AppleAdsTokenError(
                    .invalidValue,
                    field: "obtained_at",
                    message: "expected an ISO 8601 time, found \(clip(text))"
                )
            }
            guard instant.milliseconds <= now.milliseconds + clockSkewMs else {
                throw AppleAdsTokenError(
                    .invalidValue,
                    field: "obtained_at",
                    message: "\(clip(text)) is more than an hour in the future"
                )
            }
            obtainedAt = min(instant, now)
            given = true
        case let other?:
            throw AppleAdsTokenError(
                .wrongType,
                field: "obtained_at",
                message: "expected an ISO 8601 string, found \(other.kindName)"
            )
        }
        var installID: String?
        switch value["install_id"] {
        case nil, .null?:
            break
        case .string(let text)?:
            if let problem = installIDProblem(text) {
                throw AppleAdsTokenError(.invalidValue, field: "install_id", message: problem)
            }
            installID = text
        case let other?:
            throw AppleAdsTokenError(
                .wrongType,
                field: "install_id",
                message: "expected a string, found \(other.kindName)"
            )
        }
        return AppleAdsToken(
            appID: appID,
            token: token,
            obtainedAt: obtainedAt,
            obtainedAtGiven: given,
            installID: installID
        )
    }

    /// What is wrong with `installID`, if anything: empty, too long, or holding characters
    /// other than printable ASCII.
    static func installIDProblem(_ installID: String) -> String? {
        let bytes = installID.utf8
        if bytes.isEmpty { return "empty: leave it out, or give what the app keeps for this install" }
        if bytes.count > maximumInstallIDLength {
            return "\(bytes.count) bytes, over the \(maximumInstallIDLength) an install id can have"
        }
        if let bad = bytes.first(where: { $0 < 0x20 || $0 >= 0x7F }) {
            return "holds byte 0x\(hexString([bad])): printable ASCII only (e.g. a UUID)"
        }
        return nil
    }

    /// What is wrong with `token`, if anything: empty, too long, or holding characters no token
    /// has (whitespace, control characters, non-ASCII).
    static func problem(_ token: String) -> String? {
        let bytes = token.utf8
        if bytes.isEmpty { return "empty" }
        if bytes.count > maximumLength { return "\(bytes.count) bytes, over the \(maximumLength) a token can have" }
        if let bad = bytes.first(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            return "holds byte 0x\(hexString([bad])), which no token has (tokens are base64 text)"
        }
        return nil
    }

    private static func clip(_ text: String) -> String {
        text.count > 40 ? "\"\(text.prefix(40))…\"" : "\"\(text)\""
    }
}

/// A token submission (or Apple's attribution record for it) that cannot be used: the field
/// and what is wrong with it.
package struct AppleAdsTokenError: CodedError, Sendable {
    package typealias Code = ErrorCode<Self>

    package let code: Code
    /// The field at fault; nil for the body as a whole.
    package let field: String?
    /// What is wrong with the field, without its name (an HTTP answer gives the field apart).
    package let message: String
    /// What a person reads: the field, then what is wrong with it.
    package var reason: String { field.map { "\($0): \(message)" } ?? message }

    package init(_ code: Code, field: String?, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }
}

extension ErrorCode where Domain == AppleAdsTokenError {
    /// The text is not JSON.
    package static let notJSON = Self("notJSON")
    /// A field it needs is missing: `app_id`, `token`; `obtained_at` in a batch file;
    /// a record's `attribution`.
    package static let missing = Self("missing")
    /// The submission, or a field, holds another kind of JSON value than it takes.
    package static let wrongType = Self("wrongType")
    /// A field's value cannot be used: not an App Store id, not a token (empty, too long,
    /// bytes no token has), not an ISO 8601 time, a time more than an hour ahead.
    package static let invalidValue = Self("invalidValue")
    /// A line of `apple-ads add` longer than it reads.
    package static let tooLarge = Self("tooLarge")
}

/// A token's state. `pending` until Apple answers for good or the token expires; the token
/// itself is deleted when it leaves `pending`.
package enum AppleAdsTokenState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for its (next) exchange.
    case pending
    /// Apple answered with an attribution record, `attribution: true`.
    case attributed
    /// Apple answered `attribution: false`: not credited to Apple Ads, whatever the cause (no
    /// Apple Ads tap or view, a view-through, or since September 2026 a campaign with age or
    /// gender targeting). Stored before as `organic`, which it need not be (SQLite migration v17,
    /// PostgreSQL 13).
    case notAttributed = "not_attributed"
    /// Apple answered 400: the token is not valid.
    case invalid
    /// 24 hours passed before Apple answered for good.
    case expired
}

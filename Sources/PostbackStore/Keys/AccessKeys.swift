import PostbackKit

/// What an access key may do: each scope opens routes of `serve` (docs/serve.md, "Access keys").
package enum AccessScope: String, Sendable, Hashable, CaseIterable, Comparable {
    /// `GET /api/v1/report` and `GET /api/v1/summary`.
    case report
    /// The dashboard page, signed in at `/login`.
    case dashboard
    /// `GET /api/v1/postbacks`, the pull API.
    case export
    /// `POST /v1/conversion-value` and `GET /api/v2/conversion_value`.
    case conversionValue = "conversion-value"
    /// `POST /v1/apple-ads/token`.
    case appleAds = "apple-ads"
    /// `POST /v1/forwards/{channel}`: a network pushing the postbacks it forwards, on the
    /// channels the key names (``StoredAccessKey/channels``).
    case forwards

    /// What `keys add` gives when `--scope` is not given: reading the apps' numbers. The routes
    /// apps call are asked for by name, so that adding an advertiser's key never closes them.
    package static let defaults: [AccessScope] = [.report, .dashboard, .export]

    package static func < (a: AccessScope, b: AccessScope) -> Bool {
        allCases.firstIndex(of: a) ?? 0 < allCases.firstIndex(of: b) ?? 0
    }

    /// `report,dashboard`: the scopes, in order.
    package static func parse(_ text: String) throws(StoreError) -> [AccessScope] {
        var scopes = Set<AccessScope>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.withoutSurroundingSpaces
            guard let scope = AccessScope(rawValue: String(name)) else {
                throw StoreError(
                    .invalidScope,
                    "unknown scope \"\(String(name.prefix(64)).escapedForTerminal)\"; known: "
                        + allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            scopes.insert(scope)
        }
        return scopes.sorted()
    }
}

/// An access key as stored: its name, the SHA-256 of its secret, the apps and scopes it opens.
package struct StoredAccessKey: Sendable, Hashable {
    package var name: String
    /// SHA-256 of the secret, in hex: the secret itself is never stored.
    package var secretSHA256: String
    /// SHA-256 of the dashboard session cookie's value (``AccessKeySecret/session(_:)``), in
    /// hex: the cookie cannot be made from what is stored.
    package var sessionSHA256: String
    /// The App Store ids it opens, ascending; nil: every app.
    package var apps: [Int64]?
    package var scopes: [AccessScope]
    /// The channels its scope `forwards` posts on, by name; nil: every channel.
    package var channels: [PostbackChannel]?
    package var createdAt: String
    package var lastUsedAt: String?
    package var revokedAt: String?

    package init(
        name: String,
        secretSHA256: String,
        sessionSHA256: String,
        apps: [Int64]?,
        scopes: [AccessScope],
        channels: [PostbackChannel]? = nil,
        createdAt: String,
        lastUsedAt: String? = nil,
        revokedAt: String? = nil
    ) {
        self.name = name
        self.secretSHA256 = secretSHA256
        self.sessionSHA256 = sessionSHA256
        self.apps = apps
        self.scopes = scopes
        self.channels = channels
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }
}

/// Secrets: made, hashed and recognised.
package enum AccessKeySecret {
    /// Every secret `keys add` makes begins so, so that a leaked one is recognisable (in a
    /// repository, a log) as postbackd's.
    package static let prefix = "pbk_"

    /// A new secret: the prefix and 32 bytes from the system's random source, in hex.
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        for _ in 0..<4 {
            let word = generator.next() as UInt64
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        return prefix + hexString(bytes)
    }

    /// SHA-256 of `secret`'s bytes, in hex: what is stored and compared. A secret has 256 bits
    /// of entropy, so an unsalted hash cannot be reversed by trying secrets.
    package static func sha256(_ secret: String) -> String {
        hexString(SHA256Digest.hash(Array(secret.utf8)))
    }

    /// The dashboard session cookie's value for a key's secret: a MAC of a fixed text under the
    /// secret, so the cookie never holds the secret, and the store (which holds its SHA-256)
    /// cannot make it.
    package static func session(_ secret: String) -> String {
        HMACSHA256.hex(key: Array(secret.utf8), message: Array("postbackd dashboard session".utf8))
    }

    /// A key's name: 1 to 64 letters, digits, `.`, `_` and `-`, so that it prints safely.
    package static func checkName(_ name: String) throws(StoreError) {
        guard (1...64).contains(name.utf8.count),
            name.utf8.allSatisfy({
                $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                    || (0x61...0x7A).contains($0)
            })
        else {
            throw StoreError(
                .invalidName,
                "\"\(String(name.prefix(64)).escapedForTerminal)\" is not a key name: 1 to 64 letters, digits, '.', '_' or '-'"
            )
        }
    }

    /// `network-x,network-y`: the channels a key's scope `forwards` posts on, by name, each
    /// once. Never `device`: that channel is Apple's well-known paths, which take no key.
    package static func parseChannels(_ text: String) throws(StoreError) -> [PostbackChannel] {
        var channels = Set<PostbackChannel>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.withoutSurroundingSpaces
            guard let channel = PostbackChannel(name) else {
                throw StoreError(
                    .invalidChannel,
                    "\"\(String(name.prefix(64)).escapedForTerminal)\" is not a channel: \(PostbackChannel.rule)"
                )
            }
            guard !channel.isDevice else {
                throw StoreError(
                    .invalidChannel,
                    "device is the channel of Apple's well-known paths, which devices post to without a key; name a network's channel"
                )
            }
            channels.insert(channel)
        }
        return channels.sorted()
    }

    /// The most apps a key opens by id: a report filter's limit (``ReportRequest``).
    package static let maximumApps = 100

    /// `123,456`: App Store ids (positive), ascending, each once.
    package static func parseApps(_ text: String) throws(StoreError) -> [Int64] {
        var apps = Set<Int64>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.withoutSurroundingSpaces
            guard let id = Int64(trimmed), id > 0 else {
                throw StoreError(
                    .invalidApps,
                    "\"\(String(trimmed.prefix(64)).escapedForTerminal)\" is not an App Store id (a positive number)"
                )
            }
            apps.insert(id)
        }
        guard apps.count <= maximumApps else {
            throw StoreError(
                .invalidApps,
                "\(apps.count) apps: a key opens at most \(maximumApps) (the report's filter); give --all-apps for more"
            )
        }
        return apps.sorted()
    }
}

enum AccessKeysSQL {
    static let select: SQLQuery = """
        SELECT name, secret_sha256, session_sha256, apps, scopes, \(SQLQuery.instantText("created_at")),
            \(SQLQuery.instantText("last_used_at")), \(SQLQuery.instantText("revoked_at")), channels
        FROM access_keys ORDER BY \(SQLQuery.bytewise("name"))
        """

    static func key(_ row: SQLRow) throws -> StoredAccessKey {
        StoredAccessKey(
            name: try row.string(0),
            secretSHA256: try row.string(1),
            sessionSHA256: try row.string(2),
            apps: try row.optionalString(3).map { text in text.split(separator: ",").compactMap { Int64($0) } },
            scopes: try row.string(4).split(separator: ",").compactMap { AccessScope(rawValue: String($0)) },
            channels: try row.optionalString(8).map { text in
                text.split(separator: ",").compactMap(PostbackChannel.init)
            },
            createdAt: try row.string(5),
            lastUsedAt: try row.optionalString(6),
            revokedAt: try row.optionalString(7)
        )
    }
}

extension PostbackStorage {
    /// Stores a new key named `name` opening `apps` (nil: every app) to `scopes`, and its scope
    /// `forwards` to `channels` (nil: every channel), and returns it with its secret, which is
    /// not stored and cannot be read again.
    package func addAccessKey(
        name: String,
        apps: [Int64]?,
        scopes: [AccessScope],
        channels: [PostbackChannel]? = nil
    ) async throws -> (key: StoredAccessKey, secret: String) {
        try AccessKeySecret.checkName(name)
        let secret = AccessKeySecret.make()
        let hash = AccessKeySecret.sha256(secret)
        let sessionHash = AccessKeySecret.sha256(AccessKeySecret.session(secret))
        let createdAt = UTCInstant.now()
        let appsText = apps.map { $0.map(String.init).joined(separator: ",") }
        let scopesText = scopes.map(\.rawValue).joined(separator: ",")
        let channelsText = channels.map { $0.map(\.name).joined(separator: ",") }
        try await withSQL("add an access key", .write) { sql in
            let existing = try await sql.rows(
                "SELECT \(SQLQuery.instantText("revoked_at")) FROM access_keys WHERE name = \(name)"
            )
            if let row = existing.first {
                let revoked = try row.optionalString(0)
                throw StoreError(
                    .nameTaken,
                    "a key named \(name) exists\(revoked.map { " (revoked \($0))" } ?? ""); choose another name"
                )
            }
            try await sql.execute(
                """
                INSERT INTO access_keys (name, secret_sha256, session_sha256, apps, scopes, channels, created_at)
                VALUES (\(name), \(hash), \(sessionHash), \(appsText), \(scopesText), \(channelsText), \(createdAt))
                """
            )
        }
        return (
            StoredAccessKey(
                name: name,
                secretSHA256: hash,
                sessionSHA256: sessionHash,
                apps: apps,
                scopes: scopes,
                channels: channels,
                createdAt: createdAt.iso8601
            ), secret
        )
    }

    /// Every key, revoked ones included, by name.
    package func accessKeys() async throws -> [StoredAccessKey] {
        try await withSQL("read access keys", .statement) { sql in
            try await sql.rows(AccessKeysSQL.select).map(AccessKeysSQL.key)
        }
    }

    /// Revokes the key named `name` (its row stays, with `revoked_at`); false when it was
    /// revoked already.
    package func revokeAccessKey(name: String) async throws -> Bool {
        let now = UTCInstant.now()
        return try await withSQL("revoke an access key", .write) { sql in
            let rows = try await sql.rows(
                "SELECT revoked_at IS NULL FROM access_keys WHERE name = \(name)"
            )
            guard let row = rows.first else {
                throw StoreError(.unknownName, "no key is named \(name.escapedForTerminal) (postbackd keys list)")
            }
            guard try row.bool(0) else { return false }
            try await sql.execute(
                "UPDATE access_keys SET revoked_at = \(now) WHERE name = \(name) AND revoked_at IS NULL"
            )
            return true
        }
    }

    /// Records when keys were last used (`serve` does, every few seconds); a later time
    /// already recorded (by another server) is kept.
    package func recordAccessKeyUse(_ uses: [String: UTCInstant]) async throws {
        guard !uses.isEmpty else { return }
        try await withSQL("record access key use", .write) { sql in
            for (name, at) in uses.sorted(by: { $0.key < $1.key }) {
                try await sql.execute(
                    """
                    UPDATE access_keys SET last_used_at = \(at)
                    WHERE name = \(name) AND (last_used_at IS NULL OR last_used_at < \(at))
                    """
                )
            }
        }
    }
}

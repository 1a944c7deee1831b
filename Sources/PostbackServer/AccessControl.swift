import HTTPTypes
import Hummingbird
import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// One key `serve` accepts: a stored one (`postbackd keys add`), or one of the options
/// `--dashboard-token` and `--api-key`, which open every app.
struct ServeKey: Sendable {
    var name: String
    /// SHA-256 of the secret: what a presented secret's hash is compared with.
    var secretSHA256: [UInt8]
    /// SHA-256 of the dashboard session cookie's value.
    var sessionSHA256: [UInt8]
    /// The apps it opens; nil: every app.
    var apps: Set<Int64>?
    var scopes: Set<AccessScope>
    /// Stored keys have their last use recorded; the options' keys are not in the store.
    var stored: Bool

    func opens(_ app: Int64) -> Bool { apps?.contains(app) ?? true }

    /// `--dashboard-token`: report and dashboard, every app. Its session cookie is the one
    /// earlier versions set, so signed-in browsers stay signed in.
    static func dashboardToken(_ token: String) -> ServeKey {
        ServeKey(
            name: "--dashboard-token",
            secretSHA256: SHA256Digest.hash(Array(token.utf8)),
            sessionSHA256: SHA256Digest.hash(Array(AccessKeySecret.session(token).utf8)),
            apps: nil,
            scopes: [.report, .dashboard],
            stored: false
        )
    }

    /// `--api-key`: the conversion value and Apple Ads token routes, every app.
    static func apiKey(_ key: String) -> ServeKey {
        ServeKey(
            name: "--api-key",
            secretSHA256: SHA256Digest.hash(Array(key.utf8)),
            sessionSHA256: [],
            apps: nil,
            scopes: [.conversionValue, .appleAds],
            stored: false
        )
    }
}

extension ServeKey {
    /// A stored key that is not revoked; nil too for one whose apps are an empty list (as a
    /// damaged row would read), which must never mean every app.
    init?(_ key: StoredAccessKey) {
        guard key.revokedAt == nil, let secret = bytes(hex: key.secretSHA256),
            let session = bytes(hex: key.sessionSHA256), key.apps.map({ !$0.isEmpty }) ?? true
        else { return nil }
        self.init(
            name: key.name,
            secretSHA256: secret,
            sessionSHA256: session,
            apps: key.apps.map(Set.init),
            scopes: Set(key.scopes),
            stored: true
        )
    }
}

/// The keys `serve` accepts: the options' keys, and the store's, read at start and again every
/// ``reloadInterval``, so that a key added or revoked by any process sharing the store is taken
/// within that time. A secret or cookie is found by comparing its SHA-256 with every key's in
/// time that does not depend on where they differ; no secret is kept, nor logged.
///
/// Which routes need a key: the reading routes (report, summary, dashboard) once any key opens
/// `report` or `dashboard`; the routes apps call (conversion values, the Apple Ads token) once
/// any key opens `conversion-value` or `apple-ads`; the pull API always. A revoked key counts:
/// routes once guarded stay guarded.
final class KeyDirectory: Sendable {
    static let reloadInterval: Duration = .seconds(5)

    private struct Snapshot: Sendable {
        var keys: [ServeKey] = []
        var scopes: Set<AccessScope> = []
    }

    private let configured: [ServeKey]
    private let snapshot: Mutex<Snapshot>
    /// When each stored key was last used, since the last ``takeUses()``.
    private let uses = Mutex<[String: UTCInstant]>([:])

    init(dashboardToken: String?, apiKeys: [String]) {
        configured = (dashboardToken.map { [ServeKey.dashboardToken($0)] } ?? []) + apiKeys.map(ServeKey.apiKey)
        snapshot = Mutex(Snapshot(keys: configured, scopes: configured.reduce(into: []) { $0.formUnion($1.scopes) }))
    }

    /// The store's keys replace those read before. A revoked key opens nothing, but its scopes
    /// stay guarded: revoking the last key of the reports must not open them to everyone.
    func replace(with stored: [StoredAccessKey]) {
        var scopes = configured.reduce(into: Set<AccessScope>()) { $0.formUnion($1.scopes) }
        for key in stored { scopes.formUnion(key.scopes) }
        let next = Snapshot(keys: configured + stored.compactMap(ServeKey.init), scopes: scopes)
        snapshot.withLock { $0 = next }
    }

    /// Whether a route of `scope` needs a key.
    func guards(_ scope: AccessScope) -> Bool {
        let scopes = snapshot.withLock { $0.scopes }
        switch scope {
        case .report, .dashboard: return scopes.contains(.report) || scopes.contains(.dashboard)
        case .conversionValue, .appleAds: return scopes.contains(.conversionValue) || scopes.contains(.appleAds)
        case .export: return true
        }
    }

    /// The key whose secret is `secret`.
    func key(secret: String) -> ServeKey? {
        find(SHA256Digest.hash(Array(secret.utf8)), \.secretSHA256)
    }

    /// The key whose dashboard session cookie is `session`.
    func key(session: String) -> ServeKey? {
        find(SHA256Digest.hash(Array(session.utf8)), \.sessionSHA256)
    }

    private func find(_ hash: [UInt8], _ field: KeyPath<ServeKey, [UInt8]>) -> ServeKey? {
        let keys = snapshot.withLock { $0.keys }
        var found: ServeKey?
        // Every key is compared, whichever matches.
        for key in keys where constantTimeEqual(key[keyPath: field], hash) && found == nil { found = key }
        return found
    }

    /// Notes that `key` was used now (recorded in the store by the next reload).
    func used(_ key: ServeKey) {
        guard key.stored else { return }
        let now = UTCInstant.now()
        uses.withLock { $0[key.name] = now }
    }

    /// The uses noted since the last call.
    func takeUses() -> [String: UTCInstant] {
        uses.withLock { uses in
            defer { uses.removeAll() }
            return uses
        }
    }
}

/// Reloads ``KeyDirectory`` from the store every ``KeyDirectory/reloadInterval`` and records
/// the keys' last uses, on a store of `--db` beside the writer's (never `--read-db`'s: a
/// standby takes no writes). A store that cannot be read keeps the keys read before, and says
/// so in the log.
struct KeyReloadService: Service {
    let keys: KeyDirectory
    let reader: ReportReader
    let logger: Logger

    func run() async throws {
        // Cancelled as soon as shutdown begins, a wait for an unreachable store included: the
        // writer, shut down after this, must not wait for it.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: KeyDirectory.reloadInterval)
                await reload()
            }
        }
    }

    private func reload() async {
        // The keys first: a revocation must not wait on a write.
        do {
            keys.replace(with: try await reader.read { store in try await store.accessKeys() })
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot reload the access keys", metadata: ["serve.error": "\(error)"])
            }
            return
        }
        let uses = keys.takeUses()
        guard !uses.isEmpty, !Task.isCancelled else { return }
        do {
            try await reader.read { store in try await store.recordAccessKeyUse(uses) }
        } catch {
            logger.warning("cannot record the access keys' use", metadata: ["serve.error": "\(error)"])
        }
    }
}

/// Failed sign-ins and failed keys per client address: at most ``limit`` a minute, then every
/// request of that address that needs a key is answered 429 until the minute is over. Bounded:
/// past ``maximumAddresses`` addresses the oldest windows are forgotten.
final class FailureLimiter: Sendable {
    static let limit = 10
    static let windowMs: Int64 = 60_000
    static let maximumAddresses = 65_536

    private struct Window {
        var startMs: Int64
        var failures: Int
    }

    private let windows = Mutex<[String: Window]>([:])

    init() {}

    /// What failures are counted under: an IPv4 address, an IPv6 /64 (one client's usual
    /// allocation, which it could otherwise walk through), or the text as given.
    static func bucket(_ address: String?) -> String {
        guard let address else { return "-" }
        guard let parsed = IPAddress(address), parsed.bytes.count == 16 else { return address }
        return IPAddress(bytes: Array(parsed.bytes.prefix(8)) + Array(repeating: 0, count: 8)).text + "/64"
    }

    /// Seconds until `address` may try again, when it has failed ``limit`` times this minute.
    func retryAfter(_ address: String, nowMs: Int64 = UTCInstant.now().milliseconds) -> Int? {
        windows.withLock { windows in
            guard let window = windows[address], nowMs - window.startMs < Self.windowMs,
                window.failures >= Self.limit
            else { return nil }
            return Int((window.startMs + Self.windowMs - nowMs + 999) / 1000)
        }
    }

    /// Counts a failure of `address`.
    func fail(_ address: String, nowMs: Int64 = UTCInstant.now().milliseconds) {
        windows.withLock { windows in
            if windows.count >= Self.maximumAddresses {
                windows = windows.filter { nowMs - $0.value.startMs < Self.windowMs }
                // Still full within the minute: the oldest half goes, the newest (an attacker's
                // current window among them) stays.
                if windows.count >= Self.maximumAddresses {
                    let kept = windows.sorted { $0.value.startMs > $1.value.startMs }.prefix(Self.maximumAddresses / 2)
                    windows = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
                }
            }
            if let window = windows[address], nowMs - window.startMs < Self.windowMs {
                windows[address]?.failures = window.failures + 1
            } else {
                windows[address] = Window(startMs: nowMs, failures: 1)
            }
        }
    }
}

/// Compares in time that depends only on the lengths, so that a key cannot be guessed byte by
/// byte from answer times.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    constantTimeEqual(Array(a.utf8), Array(b.utf8))
}

func constantTimeEqual(_ x: [UInt8], _ y: [UInt8]) -> Bool {
    guard x.count == y.count else { return false }
    var difference: UInt8 = 0
    for index in x.indices { difference |= x[index] ^ y[index] }
    return difference == 0
}

/// `hex` (lower or upper case) as bytes; nil when it is not hex.
private func bytes(hex: String) -> [UInt8]? {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let high = hexDigitValue(digits[index]), let low = hexDigitValue(digits[index + 1]) else { return nil }
        out.append(high << 4 | low)
    }
    return out
}

// MARK: Admission

/// What a request's key allows.
enum Admission {
    /// No key is needed for the route.
    case open
    case key(ServeKey)
    case refused(Answer)

    /// The key's apps; nil: every app (no key needed, or a key of every app).
    var apps: Set<Int64>? {
        if case .key(let key) = self { return key.apps }
        return nil
    }

    func opens(_ app: Int64) -> Bool { apps?.contains(app) ?? true }
}

/// How a route words a refusal.
enum RefusalStyle {
    /// The report API: JSON, with `WWW-Authenticate: Bearer` on a 401.
    case api
    /// The dashboard page: a redirect to the login form, or a page.
    case page
    /// The conversion value and token routes: JSON.
    case app
    /// The client snippet's protocol: JSON whose reason names the parameter `a`.
    case snippet
}

extension PostbackResponder {
    /// Whether `request` may use a route of `scope`: open when no key is needed; else the key of
    /// one of `secrets` (a bearer token, an `a` parameter) or, where `cookie`, of the login's
    /// session cookie, which must open `scope`. A wrong secret counts against the client's
    /// address (``FailureLimiter``); past the limit every keyed request of it is 429.
    func admit(
        _ request: Request,
        _ context: Caller,
        scope: AccessScope,
        secrets: [String?],
        cookie: Bool,
        style: RefusalStyle
    ) -> Admission {
        guard keys.guards(scope) else { return .open }
        let address = FailureLimiter.bucket(clientAddress(request, context))
        if let seconds = limiter.retryAfter(address) {
            var response =
                style == .page
                ? Self.page(
                    .tooManyRequests,
                    title: "Too many attempts",
                    body: "<p>Too many wrong keys from this address. Try again in \(seconds) seconds.</p>"
                )
                : Self.json(
                    .tooManyRequests,
                    Self.error("too many wrong keys from this address; try again in \(seconds) s", field: nil)
                )
            response.headers[.retryAfter] = String(seconds)
            return .refused(response)
        }
        let given = secrets.compactMap { $0 }.filter { !$0.isEmpty }
        var sessionKey: ServeKey?
        var wrongCookie = false
        if cookie {
            for value in sessionCookies(request) {
                if let key = keys.key(session: value) {
                    sessionKey = key
                    break
                }
                wrongCookie = true
            }
        }
        let key: ServeKey
        if !given.isEmpty {
            guard let found = given.lazy.compactMap({ keys.key(secret: $0) }).first else {
                limiter.fail(address)
                logger.warning("a request with an unknown key refused", metadata: ["serve.scope": "\(scope.rawValue)"])
                return .refused(refusal(.unauthorized, "unknown API key", style))
            }
            key = found
        } else if let sessionKey {
            key = sessionKey
        } else {
            // A session cookie can be computed from a guessed `--dashboard-token`: a wrong one
            // counts as a wrong key.
            if wrongCookie { limiter.fail(address) }
            if style == .page { return .refused(Self.redirect(to: Route.login.rawValue)) }
            return .refused(
                refusal(
                    .unauthorized,
                    style == .api
                        ? "missing key: send Authorization: Bearer KEY"
                        : style == .app ? "missing API key: send Authorization: Bearer KEY" : "missing API key",
                    style
                )
            )
        }
        guard key.scopes.contains(scope) else {
            return .refused(refusal(.forbidden, "this key does not open \(scope.rawValue)", style))
        }
        keys.used(key)
        return .key(key)
    }

    /// 403: `app` is not one of the key's apps.
    func refuseApp(_ app: Int64, style: RefusalStyle, field: String?) -> Answer {
        refusal(.forbidden, "this key does not open app \(app)", style, field: field)
    }

    private func refusal(
        _ status: HTTPResponse.Status,
        _ reason: String,
        _ style: RefusalStyle,
        field: String? = nil
    ) -> Answer {
        switch style {
        case .page:
            return Self.page(status, title: "Not open to this key", body: "<p>\(escapeHTML(reason)).</p>")
        case .snippet:
            return Self.json(status, Self.problem(status: "error", reason: "a: " + reason))
        case .api, .app:
            var response = Self.json(status, Self.error(reason, field: field))
            if status == .unauthorized && style == .api { response.headers[.wwwAuthenticate] = "Bearer" }
            return response
        }
    }

    /// The values of the login's session cookies in `request`.
    func sessionCookies(_ request: Request) -> [String] {
        var values: [String] = []
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].withoutSurroundingSpaces == Self.sessionCookie {
                    values.append(parts[1].withoutSurroundingSpaces)
                }
            }
        }
        return values
    }

    func bearerToken(_ request: Request) -> String? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        return value.dropFirst(7).withoutSurroundingSpaces
    }
}

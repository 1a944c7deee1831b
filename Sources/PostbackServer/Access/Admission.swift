import HTTPTypes
import Hummingbird
import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

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
    /// ``admit(_:_:scope:secrets:cookie:style:)`` for a route that apps call: the key in the `a`
    /// parameter or as a bearer token, never a cookie, and a refusal worded for an app.
    func admitApp(_ request: Request, _ context: Caller, scope: AccessScope) -> Admission {
        admit(
            request,
            context,
            scope: scope,
            secrets: [request.formParameters["a"].map(String.init), bearerToken(request)],
            cookie: false,
            style: .app
        )
    }

    /// ``admit(_:_:scope:secrets:cookie:style:)`` for a route other servers call (the pull API,
    /// networks' forwards): the key as a bearer token alone, and a refusal worded for an API.
    func admitServer(_ request: Request, _ context: Caller, scope: AccessScope) -> Admission {
        admit(request, context, scope: scope, secrets: [bearerToken(request)], cookie: false, style: .api)
    }

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
            if style == .page { return .refused(Self.redirect(to: ServeRoute.login.rawValue)) }
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

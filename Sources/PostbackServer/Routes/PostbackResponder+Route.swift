import HTTPTypes

/// `serve`'s one table of routes, by path without its trailing slash (docs/openapi.yaml
/// describes each): what each takes (its methods), whether ``HotRouteHandler`` answers it
/// below Hummingbird, and how much of a body it reads. The router (``PostbackResponder/respond(to:context:)``)
/// and the hot path both read it, and answer an oversized body with ``PostbackResponder/tooLarge(_:)``.
package enum ServeRoute: String, CaseIterable {
    case skadnetwork = "/.well-known/skadnetwork/report-attribution"
    case appattribution = "/.well-known/appattribution/report-attribution"
    case conversionValue = "/v1/conversion-value"
    case snippet = "/api/v2/conversion_value"
    case appleAdsToken = "/v1/apple-ads/token"
    /// `/v1/forwards/{channel}`: the one route with a parameter in its path, the channel.
    case forwards = "/v1/forwards"
    case health = "/healthz"
    case ready = "/readyz"
    case metrics = "/metrics"
    case report = "/api/v1/report"
    case reconcile = "/api/v1/reconcile"
    case summary = "/api/v1/summary"
    case postbacks = "/api/v1/postbacks"
    case root = "/"
    case dashboard = "/dashboard"
    case login = "/login"
    case openAPI = "/openapi.json"

    /// How much of a request's body a route reads; past it the answer is 413.
    enum BodyLimit {
        /// None: a body is not read (a `GET`'s is dropped).
        case unread
        /// `--max-body` (``PostbackResponder/maximumBody``): a postback.
        case postback
        /// ``PostbackResponder/maximumStateBody``: a conversion value state.
        case state
        /// ``PostbackResponder/maximumTokenBody``: an Apple Ads token.
        case token
        /// ``PostbackResponder/maximumLoginBody``: the login form.
        case loginForm
    }

    /// The routes ``HotRouteHandler`` answers with some method.
    static let hot: [ServeRoute] = allCases.filter { route in route.methods.contains { route.isHot($0) } }

    init?(path: String) {
        var path = Substring(path)
        if path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        if path.hasPrefix(Self.forwardsPrefix) {
            self = .forwards
            return
        }
        self.init(rawValue: String(path))
    }

    /// The route's path as docs/openapi.yaml names it: its raw value, with the forwards
    /// route's parameter.
    package var pattern: String { self == .forwards ? Self.forwardsPrefix + "{channel}" : rawValue }

    /// What precedes the channel in a forwards route's path.
    static let forwardsPrefix = ServeRoute.forwards.rawValue + "/"

    /// The channel segment of a forwards route's `path` (`/v1/forwards/network-x/` gives
    /// `network-x`), not yet checked; nil for a path that names none.
    static func channelName(_ path: String) -> Substring? {
        var path = Substring(path)
        if path.hasSuffix("/") { path = path.dropLast() }
        guard path.hasPrefix(forwardsPrefix) else { return nil }
        return path.dropFirst(forwardsPrefix.count)
    }

    /// The hot route `target` (a request's path and query) names taken with `method`, found
    /// by comparing bytes (nothing allocated): the test every request passes on its way to
    /// Hummingbird.
    static func hot(_ target: String, _ method: HTTPRequest.Method) -> ServeRoute? {
        var path = target.utf8[...]
        if let query = path.firstIndex(of: UInt8(ascii: "?")) { path = path[..<query] }
        if path.count > 1 && path.last == UInt8(ascii: "/") { path = path.dropLast() }
        for route in hot where route.isHot(method) && path.elementsEqual(route.rawValue.utf8) {
            return route
        }
        return nil
    }

    /// The methods the route takes (`GET` also takes `HEAD`).
    package var methods: [HTTPRequest.Method] {
        switch self {
        case .skadnetwork, .appattribution, .conversionValue, .appleAdsToken, .forwards: [.post]
        case .health, .ready, .metrics, .snippet, .report, .reconcile, .summary, .postbacks, .root, .dashboard,
            .openAPI:
            [.get]
        case .login: [.get, .post]
        }
    }

    func takes(_ method: HTTPRequest.Method) -> Bool {
        methods.contains(method) || (method == .head && methods.contains(.get))
    }

    /// Whether ``HotRouteHandler`` answers the route taken with `method`, below Hummingbird:
    /// the routes every device and app calls (ServeHTTP1Channel.swift says why).
    func isHot(_ method: HTTPRequest.Method) -> Bool {
        switch self {
        case .skadnetwork, .appattribution, .conversionValue: method == .post
        case .snippet: method == .get || method == .head
        default: false
        }
    }

    /// How much of a body the route reads.
    var bodyLimit: BodyLimit {
        switch self {
        case .skadnetwork, .appattribution, .forwards: .postback
        case .conversionValue: .state
        case .appleAdsToken: .token
        case .login: .loginForm
        default: .unread
        }
    }
}

extension PostbackResponder {
    /// The most body bytes `route` reads: 0 where it reads none.
    func bodyLimit(_ route: ServeRoute) -> Int {
        switch route.bodyLimit {
        case .unread: 0
        case .postback: maximumBody
        case .state: Self.maximumStateBody
        case .token: Self.maximumTokenBody
        case .loginForm: Self.maximumLoginBody
        }
    }

    /// 413: `route`'s answer to a body over ``bodyLimit(_:)`` bytes.
    func tooLarge(_ route: ServeRoute) -> Answer {
        switch route.bodyLimit {
        case .unread, .postback:
            Self.json(
                .contentTooLarge,
                Self.problem(
                    status: "too_large",
                    reason: "the body is over \(maximumBody) bytes; a postback is under 1 KiB"
                )
            )
        case .state:
            Self.json(.contentTooLarge, Self.error("the body is over \(Self.maximumStateBody) bytes", field: nil))
        case .token:
            Self.json(.contentTooLarge, Self.error("the body is over \(Self.maximumTokenBody) bytes", field: nil))
        case .loginForm:
            Self.loginPage(.contentTooLarge, message: "The form was too large.")
        }
    }
}

import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import PostbackKit
import PostbackStore

/// The reading routes: `GET /api/v1/report` (what `postbackd report --format json` prints),
/// `GET /api/v1/summary` (the headline numbers), `GET /dashboard` (the page), and the login
/// that guards them once a key opens them (``KeyDirectory``), each narrowed to the key's apps.
extension PostbackResponder {
    /// The parameters of `GET /api/v1/report`, each the report option of the same name.
    static let reportParameters: [String] = [
        "by", "from", "to", "events", "date_basis", "app_id", "ad_network_id", "with_apple_ads", "modeled", "currency",
        "with_claims", "as_of", "cohorts",
    ]
    /// The parameters of `GET /api/v1/reconcile`, each the reconcile option of the same name.
    static let reconcileParameters: [String] = ["by", "from", "to", "as_of", "grace_days", "app_id", "ad_network_id"]
    /// The filters of the dashboard and the summary.
    static let dashboardParameters: [String] = ["from", "to", "date_basis", "app_id", "ad_network_id", "currency"]
    /// The filters of the summary (its revenue is per currency).
    static let summaryParameters: [String] = ["from", "to", "date_basis", "app_id", "ad_network_id"]
    /// The login cookie's name.
    static let sessionCookie = "postbackd_session"
    /// The largest login form accepted.
    static let maximumLoginBody = 4_096

    // MARK: GET /api/v1/report

    func report(_ request: Request, context: Caller) async -> Answer {
        let parameters = Self.reportParameters
        return await reading(request, context, .report, .api, parameters, ReportRequest.parse, \.query.appIDs) {
            parsed in
            do {
                let (report, warning) = try await reader.read { store in try await parsed.read(store) }
                var response = Self.apiJSON(report.formatted(.json))
                if let warning { response.headers[.postbackdWarning] = warning.oneLine }
                return response
            } catch {
                return unreadable(error)
            }
        }
    }

    // MARK: GET /api/v1/reconcile

    /// What `postbackd reconcile --format json` prints, narrowed to the key's apps (which leaves
    /// out the quarantined forwards: they have no app).
    func reconcile(_ request: Request, context: Caller) async -> Answer {
        let parameters = Self.reconcileParameters
        let parse = { (options: ReportRequest.Options) throws(ReportRequestError) in
            try ReconcileRequest.parse(options)
        }
        return await reading(request, context, .report, .api, parameters, parse, \.appIDs) { parsed in
            do {
                let (reconciliation, warning) = try await reader.read { store in
                    (try await parsed.read(store), try await store.stalenessWarning())
                }
                var response = Self.apiJSON(reconciliation.formatted(.json))
                if let warning { response.headers[.postbackdWarning] = warning.oneLine }
                return response
            } catch {
                return unreadable(error)
            }
        }
    }

    // MARK: GET /api/v1/summary

    func summary(_ request: Request, context: Caller) async -> Answer {
        await reading(request, context, .report, .api, Self.summaryParameters, Dashboard.query, \.appIDs) { query in
            do {
                let dashboard = try await reader.read { store in
                    try await Dashboard.read(store, query, summaryOnly: true)
                }
                return Self.apiJSON(dashboard.summaryJSON + "\n")
            } catch {
                return unreadable(error)
            }
        }
    }

    // MARK: GET /dashboard

    func dashboard(_ request: Request, context: Caller) async -> Answer {
        await reading(request, context, .dashboard, .page, Self.dashboardParameters, Dashboard.query, \.appIDs) {
            query in
            do {
                let dashboard = try await reader.read { store in try await Dashboard.read(store, query) }
                return Self.html(.ok, DashboardPage(dashboard, mode: .served(path: ServeRoute.dashboard.rawValue)).html)
            } catch {
                logger.error("cannot read the dashboard", metadata: ["serve.error": "\(error)"])
                var response = Self.page(
                    .serviceUnavailable,
                    title: "The store cannot be read now",
                    body: "<p>The numbers could not be read from the store. Reload in a few seconds.</p>"
                )
                response.headers[.retryAfter] = "5"
                return response
            }
        }
    }

    /// A reading API's JSON answer, never cached.
    static func apiJSON(_ body: String) -> Answer {
        Answer(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ByteBuffer(string: body)
        )
    }

    /// A reading route: admits the key for `scope`; reads the query's parameters (only
    /// `allowed`), narrowed to the key's apps; `parse`s them; checks that the `query` made of
    /// them names only the key's apps; and then gives them to `answer`. A parameter that cannot be
    /// read is 400 naming it: JSON for the API, a page for the dashboard.
    func reading<Opened>(
        _ request: Request,
        _ context: Caller,
        _ scope: AccessScope,
        _ style: RefusalStyle,
        _ allowed: [String],
        _ parse: (ReportRequest.Options) throws(ReportRequestError) -> Opened,
        _ appIDs: (Opened) -> [Int64],
        answer: (Opened) async -> Answer
    ) async -> Answer {
        let admission = admit(
            request,
            context,
            scope: scope,
            secrets: [bearerToken(request)],
            cookie: true,
            style: style
        )
        if case .refused(let response) = admission { return response }
        let opened: Opened
        do throws(ReportRequestError) {
            var options = try Self.reportOptions(request.formParameters, allowed: allowed)
            if let refusal = self.scope(&options, to: admission, style: style) { return refusal }
            opened = try parse(options)
        } catch {
            let parameter = error.option.replacingDashes
            guard style == .page else {
                return Self.json(.badRequest, Self.error(error.reason, field: parameter))
            }
            return Self.page(
                .badRequest,
                title: "Filters not understood",
                body:
                    "<p>\(escapeHTML(parameter)): \(escapeHTML(error.reason))</p><p><a href=\"/dashboard\">The dashboard without filters</a></p>"
            )
        }
        if let refusal = refuseUnscoped(appIDs(opened), admission) { return refusal }
        return await answer(opened)
    }

    // MARK: Login

    /// `GET /login`: the form; `POST /login`: checks the key (or `--dashboard-token`) and sets
    /// the session cookie. Wrong keys count against the client's address (``FailureLimiter``).
    func login(_ request: Request, context: Caller) async -> Answer {
        guard keys.guards(.dashboard) else {
            return Self.redirect(to: ServeRoute.dashboard.rawValue)
        }
        if request.method != .post { return Self.loginPage(.ok, message: nil) }
        let address = FailureLimiter.bucket(clientAddress(request, context))
        if let seconds = limiter.retryAfter(address) {
            var response = Self.loginPage(
                .tooManyRequests,
                message: "Too many wrong keys from this address. Try again in \(seconds) seconds."
            )
            response.headers[.retryAfter] = String(seconds)
            return response
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: bodyLimit(.login))
        } catch {
            return tooLarge(.login)
        }
        guard let given = Self.formValue("token", in: String(buffer: body)), !given.isEmpty,
            let key = keys.key(secret: given)
        else {
            limiter.fail(address)
            logger.warning("dashboard login refused")
            return Self.loginPage(.unauthorized, message: "That is not a dashboard key.")
        }
        guard key.scopes.contains(.dashboard) else {
            return Self.loginPage(.forbidden, message: "That key does not open the dashboard.")
        }
        keys.used(key)
        var response = Self.redirect(to: ServeRoute.dashboard.rawValue)
        response.headers[.setCookie] =
            "\(Self.sessionCookie)=\(AccessKeySecret.session(given)); Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000"
            + (secureCookie ? "; Secure" : "")
        return response
    }

    /// Narrows `options` to the key's apps: no `app_id` means its apps; an `app_id` it does not
    /// open is 403, as is asking Apple Ads side by side (which is not per app). Nil when the
    /// request may go on.
    func scope(_ options: inout ReportRequest.Options, to admission: Admission, style: RefusalStyle) -> Answer? {
        guard let apps = admission.apps else { return nil }
        if options.withAppleAds {
            return Self.json(
                .forbidden,
                Self.error("with_apple_ads is open only to a key of every app", field: "with_apple_ads")
            )
        }
        // Blank entries (`app_id=,`) filter nothing: they must not read as "no filter" of every app.
        let requested = options.appIDs.flatMap { $0.split(separator: ",") }.map(\.withoutSurroundingSpaces)
            .filter { !$0.isEmpty }
        if requested.isEmpty {
            options.appIDs = apps.sorted().map(String.init)
            return nil
        }
        options.appIDs = requested
        for text in requested {
            // What is not an app id is the report's to refuse (400).
            if let id = Int64(text), id > 0, !apps.contains(id) {
                return style == .page
                    ? Self.page(
                        .forbidden,
                        title: "Not open to this key",
                        body:
                            "<p>This key does not open app \(id).</p><p><a href=\"/dashboard\">The dashboard of its apps</a></p>"
                    )
                    : refuseApp(id, style: style, field: "app_id")
            }
        }
        return nil
    }

    /// The last word on a key's apps, once the query is parsed: it filters by the key's apps
    /// and by nothing else. Nil when it may be read.
    func refuseUnscoped(_ appIDs: [Int64], _ admission: Admission) -> Answer? {
        guard let apps = admission.apps else { return nil }
        guard !apps.isEmpty, !appIDs.isEmpty, Set(appIDs).isSubset(of: apps) else {
            logger.error("a query of a key of some apps was not narrowed to them; refused")
            return Self.json(.forbidden, Self.error("this key does not open these apps", field: "app_id"))
        }
        return nil
    }

    func unreadable(_ error: any Error) -> Answer {
        logger.error("cannot read the report", metadata: ["serve.error": "\(error)"])
        let reason = (error as? StoreFault)?.publicReason ?? "the store could not be read now; retry later"
        return Self.unavailable(status: "unavailable", reason: reason)
    }

    // MARK: Parameters

    /// The report options in `parameters`: each name once (`app_id` and `ad_network_id` may
    /// repeat), flags as `true`/`false`/`1`/`0`/empty, nothing unknown.
    static func reportOptions(
        _ parameters: FlatDictionary<Substring, Substring>,
        allowed: [String]
    ) throws(ReportRequestError) -> ReportRequest.Options {
        var options = ReportRequest.Options()
        var seen = Set<Substring>()
        for (name, value) in parameters {
            guard allowed.contains(String(name)) else {
                throw ReportRequestError(
                    .invalidParameter,
                    option: String(name.prefix(64)),
                    reason: "unknown parameter; known: " + allowed.joined(separator: ", ")
                )
            }
            let text = String(value)
            if name != "app_id" && name != "ad_network_id" {
                guard seen.insert(name).inserted else {
                    throw ReportRequestError(.invalidParameter, option: String(name), reason: "given more than once")
                }
            }
            switch name {
            case "by": options.by = text
            case "from": options.from = text
            case "to": options.to = text
            case "currency": options.currency = text
            case "as_of": options.asOf = text
            case "grace_days": options.graceDays = text
            case "date_basis": options.dateBasis = text
            case "app_id": if !text.isEmpty { options.appIDs.append(text) }
            case "ad_network_id": if !text.isEmpty { options.adNetworkIDs.append(text) }
            case "events": options.events = try flag(text, name: "events")
            case "with_apple_ads": options.withAppleAds = try flag(text, name: "with_apple_ads")
            case "modeled": options.modeled = try flag(text, name: "modeled")
            case "with_claims": options.withClaims = try flag(text, name: "with_claims")
            case "cohorts": options.cohorts = try flag(text, name: "cohorts")
            default: break
            }
        }
        return options
    }

    private static func flag(_ text: String, name: String) throws(ReportRequestError) -> Bool {
        switch text {
        case "", "true", "1": return true
        case "false", "0": return false
        default:
            throw ReportRequestError(.invalidValue, option: name, reason: "\"\(text.prefix(64))\" is not true or false")
        }
    }

    /// The value of `name` in an `application/x-www-form-urlencoded` body.
    static func formValue(_ name: String, in body: String) -> String? {
        FormEncoding.parameters(body[...])[name[...]].map(String.init)
    }

    // MARK: Pages

    /// The page's policy: nothing from anywhere but inline styles, data: images and forms to
    /// this server. A browser enforces it, so the page cannot reach another host.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Answer {
        Answer(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8",
                .contentSecurityPolicy: contentSecurityPolicy,
                .cacheControl: "no-store",
                .xContentTypeOptions: "nosniff",
                .referrerPolicy: "no-referrer",
            ],
            body: ByteBuffer(string: text)
        )
    }

    static func redirect(to path: String) -> Answer {
        Answer(
            status: .seeOther,
            headers: [.location: path, .cacheControl: "no-store"]
        )
    }

    /// A small page in the dashboard's style.
    static func page(_ status: HTTPResponse.Status, title: String, body: String) -> Answer {
        html(
            status,
            """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>postbackd: \(escapeHTML(title))</title><style>\(DashboardPage.style)</style></head>
            <body><header><h1>postbackd</h1></header><section class="empty"><h2>\(escapeHTML(title))</h2>\(body)</section></body></html>

            """
        )
    }

    static func loginPage(_ status: HTTPResponse.Status, message: String?) -> Answer {
        page(
            status,
            title: "Sign in to the dashboard",
            body: (message.map { "<p class=\"warning\" role=\"alert\">\(escapeHTML($0))</p>" } ?? "")
                + """
                <form method="post" action="/login" class="filters">
                <label>Key <input type="password" name="token" autocomplete="current-password" required autofocus></label>
                <button type="submit">Sign in</button></form>
                """
        )
    }
}

/// The store the reading routes use: a connection (SQLite) or pool (PostgreSQL) of its own,
/// beside the writer's, used on a thread of its own so that SQLite's blocking reads never
/// stall the cooperative pool. On SQLite reads take turns on that thread; PostgreSQL's run side
/// by side on its pool.
final class ReportReader: Sendable {
    private let store: any StoreEngine
    private let executor = DedicatedThreadExecutor(name: "pbd-reports")

    init(_ store: any StoreEngine) {
        self.store = store
    }

    /// Where the store is (its engine decides the pull API's cursors).
    var location: StoreLocation { store.location }

    func read<Result: Sendable>(_ body: @Sendable (any StoreEngine) async throws -> Result) async throws -> Result {
        let store = self.store
        return try await withTaskExecutorPreference(executor) {
            do {
                return try await body(store)
            } catch {
                // The fault in words, naming the store, for the log (``StoreFault``).
                throw StoreFault.classify(error, at: store.location)
            }
        }
    }
}

extension String {
    /// A report option's name as a query parameter: `app-id` as `app_id`.
    fileprivate var replacingDashes: String {
        String(map { $0 == "-" ? "_" : $0 })
    }

    /// Lines joined by "; ", for a header.
    fileprivate var oneLine: String {
        split(separator: "\n").joined(separator: "; ")
    }
}

extension HTTPField.Name {
    // Constant names, valid as written: HTTPTypes offers only a failable initializer.
    // swift-format-ignore: NeverForceUnwrap
    static let postbackdWarning = HTTPField.Name("X-Postbackd-Warning")!
    // swift-format-ignore: NeverForceUnwrap
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}

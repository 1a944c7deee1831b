import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import PostbackKit

/// The app-facing routes: the next conversion value, from the model `encode` uses.
///
/// - `POST /v1/conversion-value`: the state in the body, as `encode` reads it, plus `app_id` or
///   `bundle_id`; stateless.
/// - `GET /api/v2/conversion_value`: the client snippet's protocol; the server keeps each
///   device's events (``DeviceHistory``), since the snippet does not send them.
extension PostbackResponder {
    /// The largest state body accepted: 10,000 events fit.
    static let maximumStateBody = 1 << 20

    // MARK: POST /v1/conversion-value

    /// The state in `body` (read whole: ``HotRouteHandler`` refuses one over
    /// ``maximumStateBody`` bytes), answered at once.
    func conversionValue(_ request: Request, body: ByteBuffer, context: Caller) -> Answer {
        let admission = admitApp(request, context, scope: .conversionValue)
        if case .refused(let response) = admission { return response }
        let bytes = Array(body.readableBytesView)
        // Most states are read without a JSON tree (StateRequestReader.swift); whatever that
        // does not take, the tree below reads and explains.
        if let quick = UserStateParser.quickRequest(bytes), let answer = answer(quick, admission) {
            return answer
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            return Self.json(.badRequest, Self.error("not valid JSON: \(error.message)", field: nil))
        }
        guard case .object = value else {
            return Self.json(.badRequest, Self.error("expected a JSON object, found \(value.kindName)", field: nil))
        }
        // `conversion_type`: `install` (the default) or `re-engagement`, an AdAttributionKit
        // re-engagement's state, answered from the app's re-engagement model.
        let type: ModelConversionType
        switch value["conversion_type"] {
        case nil, .some(.null): type = .install
        case .some(.string(let text)):
            guard let known = ModelConversionType(rawValue: text) else {
                return Self.json(
                    .badRequest,
                    Self.error(
                        "expected \"install\" or \"re-engagement\", found \"\(text.prefix(64))\"",
                        field: "conversion_type"
                    )
                )
            }
            type = known
        case .some(let other):
            return Self.json(
                .badRequest,
                Self.error("expected a string, found \(other.kindName)", field: "conversion_type")
            )
        }
        let entry: ModelDirectory.Entry?
        switch (value["app_id"], value["bundle_id"]) {
        case (.some(.number(let text)), _), (.some(.string(let text)), _):
            guard let id = Int64(text) else {
                return Self.json(.badRequest, Self.error("expected an App Store id, found \(text)", field: "app_id"))
            }
            guard admission.opens(id) else { return refuseApp(id, style: .app, field: "app_id") }
            entry = models.model(appID: id, type)
        case (.some(let other), _) where other != .null:
            return Self.json(.badRequest, Self.error("expected a number, found \(other.kindName)", field: "app_id"))
        case (_, .some(.string(let bundle))):
            entry = models.model(bundleID: bundle, type)
        case (_, .some(let other)) where other != .null:
            return Self.json(.badRequest, Self.error("expected a string, found \(other.kindName)", field: "bundle_id"))
        default:
            return Self.json(.badRequest, Self.error("missing: give app_id or bundle_id", field: "app_id"))
        }
        guard let entry else {
            return Self.json(
                .badRequest,
                Self.error(
                    type == .install
                        ? "unknown app: no model for it (postbackd models add [--bundle-id BUNDLE] FILE)"
                        : "no re-engagement model for the app (postbackd models add --conversion-type re-engagement FILE)",
                    field: type == .install ? nil : "conversion_type"
                )
            )
        }
        guard admission.opens(entry.appID) else { return refuseApp(entry.appID, style: .app, field: "bundle_id") }
        let state: UserState
        do {
            state = try UserStateParser.parse(value)
        } catch {
            return Self.json(.badRequest, Self.error(error.message, field: error.field))
        }
        let explain = value["explain"] == .bool(true)
        return Self.json(.ok, entry.model.encode(state, explain: explain).json)
    }

    /// The answer to a request read without a tree, as the tree path below would give it; nil
    /// when that path must say what is wrong (or refuse).
    private func answer(_ quick: StateRequest, _ admission: Admission) -> Answer? {
        var type = ModelConversionType.install
        if let text = quick.conversionType {
            guard let known = ModelConversionType(rawValue: text) else { return nil }
            type = known
        }
        let entry: ModelDirectory.Entry?
        if let text = quick.appID {
            guard let id = Int64(text), admission.opens(id) else { return nil }
            entry = models.model(appID: id, type)
        } else if let bundle = quick.bundleID {
            entry = models.model(bundleID: bundle, type)
        } else {
            return nil
        }
        guard let entry, admission.opens(entry.appID) else { return nil }
        return Self.json(.ok, entry.model.encode(quick.state, explain: quick.explain).json)
    }

    // MARK: GET /api/v2/conversion_value

    /// `reply` gets the answer once the call is recorded durably (on the writer's thread), or
    /// at once when it is refused.
    func snippetConversionValue(
        _ request: Request,
        context: Caller,
        arrival: UTCInstant,
        reply: @escaping @Sendable (Answer) -> Void
    ) {
        let answer: Answer
        switch snippetCall(request, context: context, arrival: arrival) {
        case .answered(let refusal):
            answer = refusal
        case .record(let call, let entry, let query):
            committer.record(call) { receipt in
                switch receipt {
                case .unavailable(let reason):
                    reply(Self.unavailable(status: "error", reason: "the call was not recorded: \(reason)"))
                case .recorded(nil):
                    reply(Self.json(.ok, #"{"status":"ok"}"#))
                case .recorded(.some(let history)):
                    let state = history.state(
                        for: entry.model,
                        at: arrival,
                        currentFine: query.currentFine,
                        currentCoarse: query.currentCoarse,
                        currentLocked: query.locked
                    )
                    reply(Self.json(.ok, Self.snippetAnswer(entry.model.encode(state))))
                }
            }
            return
        }
        reply(answer)
    }

    private enum SnippetCall {
        /// Refused or malformed: this answer, nothing recorded.
        case answered(Answer)
        /// The call to record, and what answers it.
        case record(DeviceCall, ModelDirectory.Entry, SnippetQuery)
    }

    /// The snippet call in `request`, checked: its key, its parameters, its app's model.
    private func snippetCall(_ request: Request, context: Caller, arrival: UTCInstant) -> SnippetCall {
        let parameters = request.formParameters
        // The key first: a caller without one learns nothing more.
        let given = parameters.getAll("a")
        guard given.count <= 1 else {
            return .answered(Self.json(.badRequest, Self.problem(status: "error", reason: "a: given more than once")))
        }
        let admission = admit(
            request,
            context,
            scope: .conversionValue,
            secrets: [given.first.map { String($0) }],
            cookie: false,
            style: .snippet
        )
        if case .refused(let response) = admission { return .answered(response) }
        let query: SnippetQuery
        do {
            query = try SnippetQuery(parameters, now: arrival)
        } catch let problem {
            return .answered(Self.json(.badRequest, Self.problem(status: "error", reason: problem.description)))
        }
        guard let entry = models.model(for: query.app[...]) else {
            return .answered(
                Self.json(
                    .badRequest,
                    Self.problem(
                        status: "error",
                        reason:
                            "i: unknown app \(query.app): no model for it (postbackd models add --bundle-id BUNDLE FILE)"
                    )
                )
            )
        }
        guard admission.opens(entry.appID) else {
            return .answered(refuseApp(entry.appID, style: .snippet, field: nil))
        }
        let call = DeviceCall(
            appID: entry.appID,
            device: SHA256Digest(hashing: Array(query.idfv.utf8)).bytes,
            at: arrival,
            event: query.event,
            firstCallAt: query.firstCallAt,
            revenueTotals: query.revenueTotals,
            adRevenueTotals: query.adRevenueTotals,
            request: SHA256Digest(hashing: Array((request.uri.query ?? "").utf8)).bytes,
            recordsEvent: DeviceHistory.keeps(query.event, for: entry.model)
        )
        return .record(call, entry, query)
    }

    /// The snippet's answer: `{"status":"ok","conversion_value":20,"skan_updated_coarse_value":1,
    /// "skan_updated_lock_window_value":false}`, or `{"status":"ok"}` after the last window.
    static func snippetAnswer(_ answer: ConversionValueAnswer) -> String {
        var object = JSONObjectWriter()
        object.add("status", "ok")
        if answer.window != nil {
            // The fine value is always sent: in windows 1 and 2 (and a locked window 0) it is the
            // one the app sent, or 0 when it sent none; SKAdNetwork ignores it there.
            object.add("conversion_value", answer.fine ?? 0)
            object.add("skan_updated_coarse_value", answer.coarse?.snippetValue)
            object.add("skan_updated_lock_window_value", answer.lock)
        }
        return object.text
    }

    static func error(_ reason: String, field: String?) -> String {
        var object = JSONObjectWriter()
        object.add("status", "error")
        if let field, !field.isEmpty { object.add("field", field) }
        object.add("reason", reason)
        return object.text
    }

}

extension CoarseConversionValue {
    /// The snippet's number: 0 low, 1 medium, 2 high.
    var snippetValue: Int {
        switch self {
        case .low: 0
        case .medium: 1
        case .high: 2
        }
    }

    /// The snippet's number: 0 low, 1 medium, 2 high.
    init?(snippet text: Substring) {
        switch text {
        case "0": self = .low
        case "1": self = .medium
        case "2": self = .high
        default: return nil
        }
    }
}

/// The query of one call of the client snippet (`GET /api/v2/conversion_value`), checked.
struct SnippetQuery {
    var apiKey: String?
    /// `i`: the bundle identifier, or the numeric App Store id.
    var app: String
    /// `n`: the event (`__SESSION__` for a session).
    var event: String
    var idfv: String
    var firstCallAt: UTCInstant?
    var currentFine: Int?
    var currentCoarse: [CoarseConversionValue?] = [nil, nil, nil]
    var locked: [Bool] = [false, false, false]
    var revenueTotals: [String: Int64]?
    var adRevenueTotals: [String: Int64]?

    /// A parameter that cannot be used: the snippet is answered 400 with ``reason``.
    struct Problem: CodedError {
        typealias Code = ErrorCode<Self>

        let code: Code
        /// The parameter at fault (`skan_current_conversion_value`).
        let parameter: String
        /// What a person reads: the parameter, then what is wrong with it.
        let reason: String

        init(_ code: Code, _ parameter: String, _ message: String) {
            self.code = code
            self.parameter = parameter
            reason = "\(parameter): \(message)"
        }
    }

    /// The parameters read; the others (`v`, `app_v`, `p`, `idfa`, `prev_fine_value`, …) are
    /// ignored.
    static let known: Set<Substring> = [
        "a", "i", "n", "idfv", "skan_first_call_to_skadnetwork_timestamp", "skan_current_conversion_value",
        "p0_coarse", "p1_coarse", "p2_coarse", "p0_window_lock", "p1_window_lock", "p2_window_lock",
        "skan_total_revenue_by_currency", "skan_total_admon_revenue_by_currency",
    ]

    init(_ parameters: FlatDictionary<Substring, Substring>, now: UTCInstant) throws(Problem) {
        var values: [Substring: Substring] = [:]
        for (key, value) in parameters where Self.known.contains(key) {
            guard values[key] == nil else { throw Problem(.repeated, String(key), "given twice") }
            values[key] = value
        }
        func text(_ name: Substring, maximum: Int, required: Bool) throws(Problem) -> String? {
            guard let value = values[name], !value.isEmpty else {
                if required { throw Problem(.missing, String(name), "missing") }
                return nil
            }
            guard value.utf8.count <= maximum else {
                throw Problem(.tooLong, String(name), "longer than \(maximum) bytes")
            }
            return String(value)
        }
        apiKey = try text("a", maximum: 256, required: false)
        guard let app = try text("i", maximum: 155, required: true) else { throw Problem(.missing, "i", "missing") }
        self.app = app
        guard let event = try text("n", maximum: 100, required: true) else { throw Problem(.missing, "n", "missing") }
        self.event = event
        guard let idfv = try text("idfv", maximum: 64, required: true) else {
            throw Problem(.missing, "idfv", "missing")
        }
        self.idfv = idfv.uppercased()

        if let first = values["skan_first_call_to_skadnetwork_timestamp"], !first.isEmpty {
            guard let seconds = Double(first), seconds.isFinite, seconds >= 0, seconds < 1e11 else {
                throw Problem(
                    .invalidValue,
                    "skan_first_call_to_skadnetwork_timestamp",
                    "expected unix seconds, found \(first)"
                )
            }
            let instant = UTCInstant(milliseconds: Int64((seconds * 1000).rounded()))
            // A device's clock may run a little ahead; an hour ahead is a wrong timestamp.
            guard instant.milliseconds <= now.milliseconds + 3_600_000 else {
                throw Problem(.invalidValue, "skan_first_call_to_skadnetwork_timestamp", "\(first) is in the future")
            }
            firstCallAt = instant
        }
        if let fine = values["skan_current_conversion_value"], !fine.isEmpty {
            guard let value = Int(fine), (0...63).contains(value) else {
                throw Problem(
                    .invalidValue,
                    "skan_current_conversion_value",
                    "expected a fine conversion value 0–63, found \(fine)"
                )
            }
            currentFine = value
        }
        for window in 0..<3 {
            let coarseName: Substring = "p\(window)_coarse"[...]
            if let coarse = values[coarseName], !coarse.isEmpty {
                guard let value = CoarseConversionValue(snippet: coarse) else {
                    throw Problem(
                        .invalidValue,
                        String(coarseName),
                        "expected 0 (low), 1 (medium) or 2 (high), found \(coarse)"
                    )
                }
                currentCoarse[window] = value
            }
            let lockName: Substring = "p\(window)_window_lock"[...]
            if let lock = values[lockName], !lock.isEmpty {
                guard let seconds = Double(lock), seconds.isFinite, seconds >= 0 else {
                    throw Problem(
                        .invalidValue,
                        String(lockName),
                        "expected the unix time the window was locked, found \(lock)"
                    )
                }
                locked[window] = seconds > 0
            }
        }
        revenueTotals = try Self.totals(values["skan_total_revenue_by_currency"], "skan_total_revenue_by_currency")
        adRevenueTotals = try Self.totals(
            values["skan_total_admon_revenue_by_currency"],
            "skan_total_admon_revenue_by_currency"
        )
    }

    /// `{"USD": 4.99, "EUR": 1.5}` as micros per currency; nil when absent or empty.
    private static func totals(_ text: Substring?, _ name: String) throws(Problem) -> [String: Int64]? {
        guard let text, !text.isEmpty else { return nil }
        guard text.utf8.count <= 4096 else { throw Problem(.tooLong, name, "longer than 4096 bytes") }
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(text.utf8))
        } catch {
            throw Problem(.invalidValue, name, "not a JSON object of currency totals: \(error.message)")
        }
        guard case .object(let members) = value else {
            throw Problem(
                .invalidValue,
                name,
                "expected a JSON object of currency totals ({\"USD\": 4.99}), found \(value.kindName)"
            )
        }
        guard members.count <= 64 else { throw Problem(.tooLong, name, "more than 64 currencies") }
        var totals: [String: Int64] = [:]
        for (currency, amount) in members {
            guard isCurrencyCode(currency) else {
                throw Problem(
                    .invalidValue,
                    name,
                    "\(jsonQuoted(currency)) is not a three-letter ISO 4217 code such as \"USD\""
                )
            }
            var number: Double?
            switch amount {
            case .number(let text), .string(let text): number = Double(text)
            default: number = nil
            }
            guard let number, number.isFinite, number >= 0, number < 9e12 else {
                throw Problem(.invalidValue, name, "\(currency): expected a non-negative amount, found \(amount.text)")
            }
            totals[currency] = Int64((number * 1_000_000).rounded())
        }
        return totals
    }
}

extension ErrorCode where Domain == SnippetQuery.Problem {
    /// A parameter given twice.
    static let repeated = Self("repeated")
    /// A parameter the answer needs is missing or empty (`i`, `n`, `idfv`).
    static let missing = Self("missing")
    /// A parameter longer than it can be, or currency totals of more currencies.
    static let tooLong = Self("tooLong")
    /// A value that cannot be used: not a time, a time in the future, not a conversion value,
    /// not currency totals.
    static let invalidValue = Self("invalidValue")
}

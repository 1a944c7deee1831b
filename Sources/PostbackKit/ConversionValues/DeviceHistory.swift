/// One call of the app-facing endpoint (`GET /api/v2/conversion_value`), as the store records
/// it: the client snippet sends no event history, so the server keeps one per device.
package struct DeviceCall: Sendable, Hashable {
    package var appID: Int64
    /// SHA-256 of the app's identifier for vendor: the raw identifier is never kept.
    package var device: [UInt8]
    /// When the request arrived: the event's time.
    package var at: UTCInstant
    /// The event the app reports (`__SESSION__` for a session).
    package var event: String
    /// The app's first call (its install, as SKAdNetwork counts it), when the app sent it.
    package var firstCallAt: UTCInstant?
    /// The app's running revenue totals, micros per currency, when sent: in-app purchases and
    /// ad revenue.
    package var revenueTotals: [String: Int64]?
    package var adRevenueTotals: [String: Int64]?
    /// SHA-256 of the request's query: the same request sent again is a retry.
    package var request: [UInt8]
    /// Whether the event is kept: false for an event the app's model does not name (it cannot
    /// change an answer; its revenue still moves the totals on).
    package var recordsEvent: Bool

    package init(
        appID: Int64,
        device: [UInt8],
        at: UTCInstant,
        event: String,
        firstCallAt: UTCInstant?,
        revenueTotals: [String: Int64]?,
        adRevenueTotals: [String: Int64]?,
        request: [UInt8],
        recordsEvent: Bool = true
    ) {
        self.recordsEvent = recordsEvent
        self.appID = appID
        self.device = device
        self.at = at
        self.event = event
        self.firstCallAt = firstCallAt
        self.revenueTotals = revenueTotals
        self.adRevenueTotals = adRevenueTotals
        self.request = request
    }
}

/// What the server keeps about one device of one app: its events since the first call, and the
/// revenue totals it last reported (the next call's revenue is their increase).
package struct DeviceHistory: Sendable, Hashable {
    package var firstCallAt: UTCInstant
    package var lastCallAt: UTCInstant
    /// SHA-256 of the last call's query.
    package var lastRequest: [UInt8]
    /// The last few calls' query digests and times, newest last: a retry of any of them is
    /// recognised.
    package var recentRequests: [RecentRequest]
    package var events: [UserState.Event]
    package var revenueTotals: [String: Int64]
    package var adRevenueTotals: [String: Int64]

    package init(
        firstCallAt: UTCInstant,
        lastCallAt: UTCInstant,
        lastRequest: [UInt8],
        recentRequests: [RecentRequest] = [],
        events: [UserState.Event] = [],
        revenueTotals: [String: Int64] = [:],
        adRevenueTotals: [String: Int64] = [:]
    ) {
        self.firstCallAt = firstCallAt
        self.lastCallAt = lastCallAt
        self.lastRequest = lastRequest
        self.recentRequests = recentRequests
        self.events = events
        self.revenueTotals = revenueTotals
        self.adRevenueTotals = adRevenueTotals
    }

    /// A call's query digest and when it came.
    package struct RecentRequest: Sendable, Hashable {
        package var digest: [UInt8]
        package var at: UTCInstant

        package init(digest: [UInt8], at: UTCInstant) {
            self.digest = digest
            self.at = at
        }
    }

    /// How long a history is kept after the first call: the last window ends at 840 hours.
    package static let retentionMilliseconds: Int64 = 35 * 24 * 3_600_000
    /// One of the last ``recentRequestCount`` requests again within this time is a retry, and
    /// records nothing.
    static let retryMilliseconds: Int64 = 60_000
    package static let recentRequestCount = 8
    /// Events kept per device: past it, calls are answered but add no event (a client cannot
    /// grow a row without bound).
    package static let maximumEvents = 4096
    /// How often, and how many at most, histories past their 35 days are deleted.
    package static let pruneIntervalMilliseconds: Int64 = 60_000
    package static let pruneBatch = 1_000
    /// Currencies kept per device, for each of the two totals: a new one past it is ignored.
    package static let maximumCurrencies = 16

    /// Hours from the first call to `instant` (0 when a clock put it before).
    package func hours(at instant: UTCInstant) -> Double {
        Double(max(0, instant.milliseconds - firstCallAt.milliseconds)) / 3_600_000
    }

    /// The history after `call`, given the one before it (nil for a new device); nil when the
    /// call comes 35 days or more after the first call, when nothing is kept.
    ///
    /// The first call is the app's when it sends one, else the earliest the server saw. A
    /// first call later than the one kept is a new install (the app was reinstalled): the
    /// history starts again. The event is recorded at the call's time, in hours after the
    /// first call then known, with as its revenue the increase of each currency's totals since
    /// the previous call (a total that went down is taken as the new base and adds nothing).
    /// One of the device's last few requests sent again within ``retryMilliseconds`` changes
    /// nothing.
    package static func recording(_ call: DeviceCall, after stored: DeviceHistory?) -> DeviceHistory? {
        var previous = stored
        if let kept = previous, let first = call.firstCallAt, first > kept.firstCallAt { previous = nil }
        let firstCallAt = call.firstCallAt ?? previous?.firstCallAt ?? call.at
        guard call.at.milliseconds - firstCallAt.milliseconds < retentionMilliseconds else { return nil }
        if let previous,
            previous.recentRequests.contains(where: {
                $0.digest == call.request && abs(call.at.milliseconds - $0.at.milliseconds) < retryMilliseconds
            })
        {
            return previous
        }
        var history =
            previous
            ?? DeviceHistory(firstCallAt: firstCallAt, lastCallAt: call.at, lastRequest: call.request)
        history.firstCallAt = firstCallAt
        history.lastCallAt = max(history.lastCallAt, call.at)
        history.lastRequest = call.request
        history.recentRequests.append(RecentRequest(digest: call.request, at: call.at))
        if history.recentRequests.count > recentRequestCount {
            history.recentRequests.removeFirst(history.recentRequests.count - recentRequestCount)
        }
        var increase: [String: Int64] = [:]
        if let totals = call.revenueTotals {
            Self.add(totals, since: &history.revenueTotals, into: &increase)
        }
        if let totals = call.adRevenueTotals {
            Self.add(totals, since: &history.adRevenueTotals, into: &increase)
        }
        if call.recordsEvent && history.events.count < maximumEvents {
            history.events.append(
                UserState.Event(
                    name: call.event,
                    hours: history.hours(at: call.at),
                    revenue: increase.keys.sorted().compactMap { currency in
                        increase[currency].map { UserState.Event.Revenue(micros: $0, currency: currency) }
                    }
                )
            )
        }
        return history
    }

    private static func add(
        _ totals: [String: Int64],
        since last: inout [String: Int64],
        into increase: inout [String: Int64]
    ) {
        for (currency, total) in totals.sorted(by: { $0.key < $1.key }) {
            guard last[currency] != nil || last.count < maximumCurrencies else { continue }
            let before = last[currency] ?? 0
            if total > before {
                let (sum, overflow) = (increase[currency] ?? 0).addingReportingOverflow(total - before)
                increase[currency] = overflow ? Int64.max : sum
            }
            last[currency] = total
        }
    }

    /// The client snippet's name for a session.
    static let snippetSession = "__SESSION__"

    /// Whether a call's `event` can change an answer of `model` (the model maps it or locks on
    /// it, `__SESSION__` counting as `session`), and so is kept.
    package static func keeps(_ event: String, for model: ConversionModel) -> Bool {
        let names = encodingNames(model)
        if names.contains(event) { return true }
        return event == snippetSession && names.contains("session")
    }

    /// The events encoding with `model` reads: those it maps and those it locks on.
    static func encodingNames(_ model: ConversionModel) -> Set<String> {
        var names = model.eventNames
        for trigger in model.lockTriggers.values {
            if case .event(let condition) = trigger { names.insert(condition.name) }
        }
        return names
    }

    /// The state encoding reads at `instant` for `model`, with what the app has set.
    ///
    /// The snippet reports a session as `__SESSION__`; a model that does not name that event
    /// but names `session` counts them as its `session` events.
    package func state(
        for model: ConversionModel,
        at instant: UTCInstant,
        currentFine: Int?,
        currentCoarse: [CoarseConversionValue?],
        currentLocked: [Bool]
    ) -> UserState {
        var events = self.events
        let names = Self.encodingNames(model)
        if !names.contains(Self.snippetSession) && names.contains("session") {
            for index in events.indices where events[index].name == Self.snippetSession {
                events[index].name = "session"
            }
        }
        return UserState(
            elapsedHours: hours(at: instant),
            events: events,
            currentFine: currentFine,
            currentCoarse: currentCoarse,
            currentLocked: currentLocked
        )
    }
}

// MARK: - Stored form

extension DeviceHistory {
    /// The events, totals and recent requests as the stores keep them: compact JSON,
    /// `{"e":[["purchase",2.5,[["USD",4990000]]],…],"r":{"USD":4990000},"a":{},"q":[["9f…",1795000000000]]}`.
    package var storedJSON: String {
        var text = "{\"e\":["
        for (index, event) in events.enumerated() {
            if index > 0 { text += "," }
            text += "[" + jsonQuoted(event.name) + "," + String(event.hours)
            if !event.revenue.isEmpty {
                text +=
                    ",["
                    + event.revenue.map { "[" + jsonQuoted($0.currency) + "," + String($0.micros) + "]" }
                    .joined(separator: ",") + "]"
            }
            text += "]"
        }
        text += "],\"r\":" + Self.totalsJSON(revenueTotals) + ",\"a\":" + Self.totalsJSON(adRevenueTotals)
        text +=
            ",\"q\":["
            + recentRequests.map { "[\"" + hexString($0.digest) + "\"," + String($0.at.milliseconds) + "]" }
            .joined(separator: ",") + "]}"
        return text
    }

    private static func totalsJSON(_ totals: [String: Int64]) -> String {
        "{" + totals.keys.sorted().map { jsonQuoted($0) + ":" + String(totals[$0] ?? 0) }.joined(separator: ",") + "}"
    }

    /// Reads ``storedJSON`` back; nil when it is not that form.
    package init?(storedJSON: String, firstCallAt: UTCInstant, lastCallAt: UTCInstant, lastRequest: [UInt8]) {
        guard let value = try? JSONValue.parse(Array(storedJSON.utf8)), case .array(let rows)? = value["e"],
            let revenueTotals = Self.totals(value["r"]), let adRevenueTotals = Self.totals(value["a"])
        else { return nil }
        var events: [UserState.Event] = []
        events.reserveCapacity(rows.count)
        for row in rows {
            guard case .array(let fields) = row, fields.count >= 2, case .string(let name) = fields[0],
                case .number(let hoursText) = fields[1], let hours = Double(hoursText)
            else { return nil }
            var revenue: [UserState.Event.Revenue] = []
            if fields.count > 2 {
                guard case .array(let amounts) = fields[2] else { return nil }
                for amount in amounts {
                    guard case .array(let pair) = amount, pair.count == 2, case .string(let currency) = pair[0],
                        case .number(let microsText) = pair[1], let micros = Int64(microsText)
                    else { return nil }
                    revenue.append(.init(micros: micros, currency: currency))
                }
            }
            events.append(UserState.Event(name: name, hours: hours, revenue: revenue))
        }
        var recent: [RecentRequest] = []
        if case .array(let requests)? = value["q"] {
            for request in requests {
                guard case .array(let pair) = request, pair.count == 2, case .string(let hex) = pair[0],
                    let digest = bytesFromHex(hex), case .number(let msText) = pair[1], let ms = Int64(msText)
                else { return nil }
                recent.append(RecentRequest(digest: digest, at: UTCInstant(milliseconds: ms)))
            }
        }
        self.init(
            firstCallAt: firstCallAt,
            lastCallAt: lastCallAt,
            lastRequest: lastRequest,
            recentRequests: recent,
            events: events,
            revenueTotals: revenueTotals,
            adRevenueTotals: adRevenueTotals
        )
    }

    private static func totals(_ value: JSONValue?) -> [String: Int64]? {
        guard case .object(let members)? = value else { return nil }
        var totals: [String: Int64] = [:]
        for (key, value) in members {
            guard case .number(let text) = value, let micros = Int64(text) else { return nil }
            totals[key] = micros
        }
        return totals
    }
}

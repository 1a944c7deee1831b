/// The state of one user of one app, as encoding reads it (spec, "Encoding").
public struct UserState: Sendable, Hashable {
    /// One thing the user did.
    public struct Event: Sendable, Hashable {
        public var name: String
        /// Hours after the user's first call.
        public var hours: Double
        /// Its revenue: usually none or one amount; several when one call of the app-facing
        /// endpoint reports revenue in several currencies.
        public var revenue: [Revenue]

        /// An amount in micros of a currency (ISO 4217).
        public struct Revenue: Sendable, Hashable {
            public var micros: Int64
            public var currency: String

            public init(micros: Int64, currency: String) {
                self.micros = micros
                self.currency = currency
            }
        }

        public init(name: String, hours: Double, revenue: [Revenue] = []) {
            self.name = name
            self.hours = hours
            self.revenue = revenue
        }

        /// An event with one amount (`revenueMicros` of `currency`), or none.
        package init(name: String, hours: Double, revenueMicros: Int64?, currency: String?) {
            self.init(
                name: name,
                hours: hours,
                revenue: revenueMicros.flatMap { micros in currency.map { [Revenue(micros: micros, currency: $0)] } }
                    ?? []
            )
        }
    }

    /// Hours since the user's first call (the install, as the app sees it).
    public var elapsedHours: Double
    public var events: [Event]
    /// What the app already set: the fine value, and per window (0–2) the coarse value and
    /// whether it was locked.
    public var currentFine: Int?
    public var currentCoarse: [CoarseConversionValue?]
    public var currentLocked: [Bool]

    public init(
        elapsedHours: Double,
        events: [Event] = [],
        currentFine: Int? = nil,
        currentCoarse: [CoarseConversionValue?] = [nil, nil, nil],
        currentLocked: [Bool] = [false, false, false]
    ) {
        self.elapsedHours = elapsedHours
        self.events = events
        self.currentFine = currentFine
        self.currentCoarse = currentCoarse
        self.currentLocked = currentLocked
    }

    /// The SKAdNetwork 4 window at ``elapsedHours``: 0 before 48 hours, 1 before 168, 2 before
    /// 840 (days 0–2, 3–7, 8–35); nil after.
    public var window: Int? {
        if elapsedHours < 48 { return 0 }
        if elapsedHours < 168 { return 1 }
        if elapsedHours < 840 { return 2 }
        return nil
    }

    func coarse(_ window: Int) -> CoarseConversionValue? {
        window < currentCoarse.count ? currentCoarse[window] : nil
    }

    func locked(_ window: Int) -> Bool {
        window < currentLocked.count ? currentLocked[window] : false
    }
}

/// What the app should set next.
public struct ConversionValueAnswer: Sendable, Hashable {
    /// The window the answer is for; nil after 840 hours, when nothing changes.
    public var window: Int?
    /// The fine value to set in window 0; the current one in windows 1 and 2.
    public var fine: Int?
    /// The coarse value for the window; nil when the model maps none that holds and none was set.
    public var coarse: CoarseConversionValue?
    /// Whether to lock the window.
    public var lock: Bool
    /// Why, when asked for (`--explain`).
    var explanation: Explanation?

    /// Which mappings held, and what kept the next higher value from holding.
    struct Explanation: Sendable, Hashable {
        /// A mapped value above the answer, and the first condition of its mapping that failed.
        struct Next<Value: Sendable & Hashable>: Sendable, Hashable {
            package var value: Value
            package var failed: String
        }

        /// The fine values whose mappings held (window 0), ascending.
        var fineHeld: [Int] = []
        /// The lowest mapped fine value above the answer.
        var fineNext: Next<Int>? = nil
        /// The coarse values whose mappings held in this window, ascending.
        var coarseHeld: [CoarseConversionValue] = []
        /// The lowest mapped coarse value above the answer.
        var coarseNext: Next<CoarseConversionValue>? = nil
        /// The window's lock trigger and whether the answer reached it, in words.
        package var lock: String = "no lock trigger for this window"
        /// Set when the answer is the current values because the window is locked or over.
        package var unchanged: String? = nil
    }
}

extension ConversionValueAnswer {
    /// An answer without an explanation (the tests' expected answers).
    package init(window: Int?, fine: Int?, coarse: CoarseConversionValue?, lock: Bool) {
        self.init(window: window, fine: fine, coarse: coarse, lock: lock, explanation: nil)
    }
}

extension CoarseConversionValue {
    /// low < medium < high.
    var rank: Int {
        switch self {
        case .low: 0
        case .medium: 1
        case .high: 2
        }
    }
}

extension ConversionModel {
    /// The next conversion value for a user in `state` (spec, "Encoding": the answer is
    /// exactly those rules).
    public func encode(_ state: UserState, explain: Bool = false) -> ConversionValueAnswer {
        var explanation = ConversionValueAnswer.Explanation()
        guard let window = state.window else {
            // After the last window nothing changes; the values are the last window's.
            explanation.unchanged = "after 840 hours there is no window to set"
            return ConversionValueAnswer(
                window: nil,
                fine: state.currentFine,
                coarse: state.coarse(2),
                lock: state.locked(2),
                explanation: explain ? explanation : nil
            )
        }
        if state.locked(window) {
            explanation.unchanged = "window \(window) is locked"
            return ConversionValueAnswer(
                window: window,
                fine: state.currentFine,
                coarse: state.coarse(window),
                lock: true,
                explanation: explain ? explanation : nil
            )
        }

        // Fine value: window 0 only; never down.
        let fine: Int?
        if window == 0 {
            var best: Int? = nil
            var failures: [Int: String] = [:]
            for (value, mapping) in fineValues {
                if let failed = mapping.firstFailure(state) {
                    if explain { failures[value] = failed }
                } else {
                    if value > (best ?? -1) { best = value }
                    if explain { explanation.fineHeld.append(value) }
                }
            }
            let answer = max(best ?? 0, state.currentFine ?? 0)
            fine = answer
            if explain {
                explanation.fineHeld.sort()
                // Every mapped value above the answer failed: the lowest of them is the next.
                if let next = failures.keys.filter({ $0 > answer }).min(), let failed = failures[next] {
                    explanation.fineNext = .init(value: next, failed: failed)
                }
            }
        } else {
            fine = state.currentFine
        }

        // Coarse value for the window: highest that holds, never down.
        var coarse: CoarseConversionValue? = nil
        var coarseFailures: [ConversionValueAnswer.Explanation.Next<CoarseConversionValue>] = []
        let mappings = coarseValues[window] ?? [:]
        for value in [CoarseConversionValue.low, .medium, .high] {
            guard let mapping = mappings[value] else { continue }
            if let failed = mapping.firstFailure(state) {
                if explain { coarseFailures.append(.init(value: value, failed: failed)) }
            } else {
                coarse = value
                if explain { explanation.coarseHeld.append(value) }
            }
        }
        if let current = state.coarse(window), current.rank > (coarse?.rank ?? -1) { coarse = current }
        if explain {
            explanation.coarseNext = coarseFailures.first { $0.value.rank > (coarse?.rank ?? -1) }
        }

        // Lock: the window's trigger reached by the answer.
        var lock = false
        switch lockTriggers[window] {
        case nil:
            break
        case .coarse(let threshold):
            lock = (coarse?.rank ?? -1) >= threshold.rank
            if explain {
                explanation.lock =
                    "lockWindowCoarseConversionValue \(threshold.rawValue.uppercased()): coarse \(coarse?.rawValue ?? "null") \(lock ? "reaches" : "does not reach") it"
            }
        case .fine(let threshold):
            lock = window == 0 && (fine ?? 0) >= threshold
            if explain {
                explanation.lock =
                    window == 0
                    ? "lockWindowFineConversionValue \(threshold): fine \(fine ?? 0) \(lock ? "reaches" : "does not reach") it"
                    : "lockWindowFineConversionValue \(threshold) locks window 0 only"
            }
        case .event(let condition):
            let failure = condition.firstFailure(state.events, from: 0, to: nil)
            lock = failure == nil
            if explain {
                explanation.lock = "lockWindowEvent \(condition.name): " + (failure ?? "holds")
            }
        }
        return ConversionValueAnswer(
            window: window,
            fine: fine,
            coarse: coarse,
            lock: lock,
            explanation: explain ? explanation : nil
        )
    }
}

extension ConversionValueMapping {
    /// Nil when the mapping holds for `state` (every mapped event holds over the user's events
    /// within its time bounds; no mapped events always holds), else the first condition that
    /// failed, in words.
    func firstFailure(_ state: UserState) -> String? {
        let from = Double(minTimePostInstallHours ?? 0)
        let to = maxTimePostInstallHours.flatMap { $0 > 0 ? Double($0) : nil }
        for event in events {
            if let failure = event.condition.firstFailure(state.events, from: from, to: to) { return failure }
        }
        return nil
    }
}

extension EventCondition {
    /// Nil when the condition holds over the user's `events` named ``name`` with hours in
    /// [from, to) (`to` nil: no upper bound), else why not.
    func firstFailure(_ events: [UserState.Event], from: Double, to: Double?) -> String? {
        var count: Int64 = 0
        var revenue: Int64 = 0
        for event in events where event.name == name && event.hours >= from && (to.map { event.hours < $0 } ?? true) {
            count += 1
            for amount in event.revenue where amount.currency == currency {
                let (sum, overflow) = revenue.addingReportingOverflow(amount.micros)
                revenue = overflow ? Int64.max : sum
            }
        }
        let within =
            to.map { "in hours [\(formatHours(from)), \(formatHours($0)))" }
            ?? (from > 0 ? "from hour \(formatHours(from))" : "")
        let subject = within.isEmpty ? name : "\(name) \(within)"
        switch self.count {
        case .atLeast(let minimum):
            if count < minimum { return "\(subject): \(count) times, needs at least \(minimum)" }
        case .range(let minimum, let maximum):
            if count < minimum { return "\(subject): \(count) times, needs at least \(minimum)" }
            if let maximum, count > maximum { return "\(subject): \(count) times, needs at most \(maximum)" }
        case .once:
            if count < 1 { return "\(subject): never happened" }
        }
        let money = currency ?? "no currency"
        switch self.revenue {
        case .none:
            break
        case .atLeast(let minimum):
            if revenue < minimum {
                return "\(subject): revenue \(formatMicros(revenue)) \(money), needs at least \(formatMicros(minimum))"
            }
        case .range(let minimum, let maximum):
            if revenue < minimum {
                return "\(subject): revenue \(formatMicros(revenue)) \(money), needs at least \(formatMicros(minimum))"
            }
            if let maximum, revenue >= maximum {
                return "\(subject): revenue \(formatMicros(revenue)) \(money), needs less than \(formatMicros(maximum))"
            }
        }
        return nil
    }
}

private func formatHours(_ hours: Double) -> String {
    formatJSONNumber(hours)
}

private func formatMicros(_ micros: Int64) -> String {
    formatJSONNumber(Double(micros) / 1_000_000)
}

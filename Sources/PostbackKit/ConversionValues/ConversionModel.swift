/// An advertiser's conversion model for one app: what each fine and coarse conversion value
/// means in events, counts and revenue.
///
/// Read from the schema App Attribution Partners share with Google Ads
/// (`SkAdNetworkConversionValueSchema`, protobuf JSON with lowerCamelCase names); see
/// `ConversionModelParser` and `spec/conversion-model.md`.
public struct ConversionModel: Sendable, Hashable {
    /// The App Store id the model belongs to (`appId`).
    public var appID: Int64
    /// `measurementWindowHours` (informational).
    package var measurementWindowHours: Int64?
    /// `fineGrainedConversionValueMappings`, by fine value (0–63).
    package var fineValues: [Int: ConversionValueMapping]
    /// `postbackMappings`, by postback sequence index (0–2), then coarse value.
    package var coarseValues: [Int: [CoarseConversionValue: ConversionValueMapping]]
    /// Each `postbackMappings` entry's lock-window trigger, by postback sequence index (the
    /// window it locks); used by encoding, ignored by decoding.
    package var lockTriggers: [Int: LockTrigger] = [:]
    /// The schema object as JSON text, as it was read (unwrapped from an API response).
    public var json: String

    /// Decodes a postback's conversion value (spec, "Decoding a postback").
    ///
    /// A fine value decodes only postback 0 (every postback before SKAdNetwork 4.0 is 0); a
    /// fine value on postback 1 or 2, which Apple never sends, is unmapped. A coarse value
    /// decodes through the mappings of the postback's sequence index. No value at all is a
    /// null conversion value: never decoded as zero revenue.
    public func decode(_ value: ConversionValue?, sequenceIndex: Int) -> DecodedConversionValue {
        switch value {
        case nil:
            return .null
        case .fine(let fine):
            guard sequenceIndex == 0, let mapping = fineValues[fine] else { return .unmapped }
            return .mapped(mapping.events)
        case .coarse(let coarse):
            guard let mapping = coarseValues[sequenceIndex]?[coarse] else { return .unmapped }
            return .mapped(mapping.events)
        }
    }

    /// Every event name the model can produce.
    package var eventNames: Set<String> {
        var names = Set<String>()
        for mapping in fineValues.values { names.formUnion(mapping.events.map(\.name)) }
        for byValue in coarseValues.values {
            for mapping in byValue.values { names.formUnion(mapping.events.map(\.name)) }
        }
        return names
    }

    /// Every currency the model's revenue is in.
    package var currencies: Set<String> {
        var currencies = Set<String>()
        for mapping in fineValues.values { currencies.formUnion(mapping.events.compactMap { $0.revenue?.currency }) }
        for byValue in coarseValues.values {
            for mapping in byValue.values { currencies.formUnion(mapping.events.compactMap { $0.revenue?.currency }) }
        }
        return currencies
    }
}

/// What one conversion value stands for (`ConversionValueMapping`).
package struct ConversionValueMapping: Sendable, Hashable {
    /// `minTimePostInstallHours` / `maxTimePostInstallHours`: decoding ignores them; encoding
    /// counts only events in [min, max) hours after install (max unset or 0: no bound).
    package var minTimePostInstallHours: Int64?
    package var maxTimePostInstallHours: Int64?
    /// `mappedEvents`.
    package var events: [MappedEvent]
}

/// One event a conversion value maps to (`Event`), with its ranges resolved.
public struct MappedEvent: Sendable, Hashable {
    /// `mappedEventName`.
    public var name: String
    /// How many times it happened: `eventOccurrenceRange`, `eventCounter` n as (n, n), or
    /// (1, 1) when neither is set.
    public var occurrences: CountRange
    /// Its revenue for the install in that window, when the event has any: `eventRevenueRange`,
    /// or `eventRevenueValue` v as (v, v).
    public var revenue: RevenueRange?
    /// What a user's events must reach for this event to hold, as encoding reads it.
    package var condition: EventCondition
}

/// An `Event` as a condition on a user's events (spec, "Encoding"). Decoding reads the same
/// fields as ranges (``MappedEvent``); the two differ where a bound is unset: an occurrence
/// range [a, unset] decodes as once but encodes as "at least a".
package struct EventCondition: Sendable, Hashable {
    /// How many of the user's events with this name it takes.
    package enum Count: Sendable, Hashable {
        /// `eventCounter` n > 0: at least n.
        case atLeast(Int64)
        /// `eventOccurrenceRange`: at least `min`, and at most `max` when set (not 0).
        case range(min: Int64, max: Int64?)
        /// Neither: at least once.
        case once
    }

    /// The sum of their revenue in ``currency``.
    package enum Revenue: Sendable, Hashable {
        /// `eventRevenueValue` v > 0: at least v (micros).
        case atLeast(Int64)
        /// `eventRevenueRange`: at least `min`, and below `max` when set (not 0) (micros).
        case range(min: Int64, max: Int64?)
        /// Neither: no condition on revenue.
        case none
    }

    public var name: String
    /// `currencyCode`; nil when the event sets none (then only revenue without a currency
    /// counts toward it).
    public var currency: String?
    package var count: Count
    public var revenue: Revenue
}

/// What locks a window once the answer reaches it (`postbackMappings[].lockWindow…`).
package enum LockTrigger: Sendable, Hashable {
    /// `lockWindowCoarseConversionValue`: the answered coarse value is at least this.
    case coarse(CoarseConversionValue)
    /// `lockWindowFineConversionValue` (window 0): the answered fine value is at least this.
    case fine(Int)
    /// `lockWindowEvent`: this event holds over all the user's events, whenever they happened.
    case event(EventCondition)
}

/// A range of counts.
public struct CountRange: Sendable, Hashable {
    public var min: Int64
    public var max: Int64

    package init(min: Int64, max: Int64) {
        self.min = min
        self.max = max
    }
}

/// A range of revenue in one currency, in millionths of the currency unit so that sums over
/// millions of postbacks stay exact.
public struct RevenueRange: Sendable, Hashable {
    /// ISO 4217 code (`USD`).
    public var currency: String
    public var minMicros: Int64
    public var maxMicros: Int64

    package init(currency: String, minMicros: Int64, maxMicros: Int64) {
        self.currency = currency
        self.minMicros = minMicros
        self.maxMicros = maxMicros
    }
}

/// The meaning of one postback's conversion value.
public enum DecodedConversionValue: Sendable, Hashable {
    /// The model maps the value (possibly to no events).
    case mapped([MappedEvent])
    /// The app has a model, but it does not map this value.
    case unmapped
    /// The postback carries no conversion value (Apple's privacy threshold withheld it).
    case null
    /// No model for the postback's app.
    case unmodelled
}

/// How a point estimate of revenue is derived from its range.
public enum RevenueEstimatePolicy: String, Sendable, Hashable, CaseIterable {
    /// The middle of the range (the default; what the largest MMPs report).
    case midpoint
    /// The bottom of the range.
    case lower
    /// The top of the range.
    case upper

    /// The estimate of a range, in micros.
    package func estimate(minMicros: Int64, maxMicros: Int64) -> Double {
        switch self {
        case .midpoint: (Double(minMicros) + Double(maxMicros)) / 2
        case .lower: Double(minMicros)
        case .upper: Double(maxMicros)
        }
    }

    /// ``estimate(minMicros:maxMicros:)`` in currency units (``units(_:)``), in SQL both
    /// engines read, of two expressions in micros.
    package func estimateUnitsSQL(minMicros: String, maxMicros: String) -> String {
        switch self {
        case .midpoint: "(\(minMicros) + \(maxMicros)) / 2000000.0"
        case .lower: "\(minMicros) / 1000000.0"
        case .upper: "\(maxMicros) / 1000000.0"
        }
    }
}

/// Micros to currency units.
@inline(__always)
package func units(_ micros: Double) -> Double {
    micros / 1_000_000
}

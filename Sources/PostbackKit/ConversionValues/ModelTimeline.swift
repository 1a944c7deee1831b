/// Which of an app's model timelines decodes a postback: its conversion type's.
package enum ModelConversionType: String, Sendable, Hashable, CaseIterable {
    /// Downloads and redownloads (every SKAdNetwork postback; AdAttributionKit's `download` and
    /// `redownload`).
    case install
    /// AdAttributionKit's `re-engagement`.
    case reengagement = "re-engagement"
}

/// One model of an app's timeline: in force from `effectiveFrom` until the next one's.
package struct TimelineModel: Sendable {
    package var model: ConversionModel
    /// nil: from the beginning. The first model of a timeline is in force from the beginning
    /// whatever this says, so a store's history is decoded as soon as it has a model.
    package var effectiveFrom: UTCInstant?
    package var conversionType: ModelConversionType

    package init(
        _ model: ConversionModel,
        effectiveFrom: UTCInstant? = nil,
        conversionType: ModelConversionType = .install
    ) {
        self.model = model
        self.effectiveFrom = effectiveFrom
        self.conversionType = conversionType
    }
}

/// The models in force over time, per app and conversion type (spec conversion-model.md; issue
/// 36): a postback is decoded with the model in force at the latest moment its value could have
/// been set, `received_at` minus 24 hours (the shortest delay Apple adds after a window ends,
/// spec section 9). Its value could have been set as early as `received_at` minus
/// ``longestSpan(version:sequenceIndex:)``; when the timeline changes inside that span, the
/// decoding is *ambiguous* and counted as such.
package struct ConversionModels: Sendable {
    /// One app's timeline of one conversion type, in effective order; never empty.
    package struct Timeline: Sendable {
        /// The models in order; the first is in force from the beginning.
        package private(set) var models: [ConversionModel]
        /// `starts[i]` (milliseconds): when `models[i + 1]` takes over.
        package private(set) var starts: [Int64]

        init(_ entries: [TimelineModel]) {
            let sorted = entries.enumerated().sorted {
                ($0.element.effectiveFrom?.milliseconds ?? .min, $0.offset)
                    < ($1.element.effectiveFrom?.milliseconds ?? .min, $1.offset)
            }
            models = sorted.map(\.element.model)
            starts = sorted.dropFirst().map { $0.element.effectiveFrom?.milliseconds ?? .min }
        }

        /// The model in force at `milliseconds`.
        @inline(__always)
        package func model(at milliseconds: Int64) -> ConversionModel {
            if starts.isEmpty { return models[0] }
            var index = 0
            while index < starts.count && starts[index] <= milliseconds { index += 1 }
            return models[index]
        }

        /// The newest model: the one in force from the last start on.
        package var newest: ConversionModel { models[models.count - 1] }

        /// Whether the model in force changes within `(from, to]` (milliseconds).
        @inline(__always)
        func changes(after from: Int64, through to: Int64) -> Bool {
            starts.contains { $0 > from && $0 <= to }
        }
    }

    private var install: [Int64: Timeline]
    private var reengagement: [Int64: Timeline]

    /// Each model in force from the beginning for its conversion type (`verify --model`'s files,
    /// a store written before timelines). A later model of the same app replaces an earlier one.
    package init(_ models: [ConversionModel]) {
        self.init(
            timeline: models.map { TimelineModel($0) }.reduce(into: [TimelineModel]()) { list, entry in
                list.removeAll { $0.model.appID == entry.model.appID }
                list.append(entry)
            }
        )
    }

    /// The timelines of `entries`, grouped by app and conversion type.
    package init(timeline entries: [TimelineModel]) {
        var install: [Int64: [TimelineModel]] = [:]
        var reengagement: [Int64: [TimelineModel]] = [:]
        for entry in entries {
            switch entry.conversionType {
            case .install: install[entry.model.appID, default: []].append(entry)
            case .reengagement: reengagement[entry.model.appID, default: []].append(entry)
            }
        }
        self.install = install.mapValues(Timeline.init)
        self.reengagement = reengagement.mapValues(Timeline.init)
    }

    /// The app's timeline of `type`, if it has a model of that type.
    package func timeline(appID: Int64, _ type: ModelConversionType = .install) -> Timeline? {
        switch type {
        case .install: install[appID]
        case .reengagement: reengagement[appID]
        }
    }

    /// Whether any app's timeline has more than one model: only then does a postback's
    /// `received_at` matter to its decoding.
    package var changesOverTime: Bool {
        install.values.contains { !$0.starts.isEmpty } || reengagement.values.contains { !$0.starts.isEmpty }
    }

    /// Where, within `day`, the decoding of some app's postbacks can change with their
    /// `received_at`, and those apps.
    ///
    /// A postback received at r decodes through the model in force at r − 24 h, and is
    /// ambiguous when a model starts within (r − span, r − 24 h]: for a model starting at s,
    /// both change only where r crosses s + 24 h or s + span (48, 96, 264 or 816 hours). Between
    /// two such *breakpoints* every postback of the app decodes alike, so postbacks received
    /// on a day without one decode as at the day's start, and on a day with some as at the
    /// breakpoint before them (``representative(bucket:breakpoints:day:)``).
    ///
    /// - Returns: the apps with a breakpoint within the day, and the day's breakpoints of all
    ///   of them (milliseconds, sorted, distinct).
    package func breakpoints(in day: UTCDay) -> (apps: Set<Int64>, breakpoints: [Int64]) {
        let from = day.start.milliseconds
        let to = day.next.start.milliseconds
        var apps = Set<Int64>()
        var points = Set<Int64>()
        for (app, timeline) in install.lazy.map({ ($0.key, $0.value) }) + reengagement.lazy.map({ ($0.key, $0.value) })
        {
            for start in timeline.starts {
                for offset in Self.breakpointOffsets where start + offset >= from && start + offset < to {
                    apps.insert(app)
                    points.insert(start + offset)
                }
            }
        }
        return (apps, points.sorted())
    }

    /// Where, after a model's start, the decoding of a postback can change with its
    /// `received_at` (``breakpoints(in:)``): 24 hours, and each span.
    static let breakpointOffsets: [Int64] = [
        latestDelay, longestSpan(version: "3.0", sequenceIndex: 0), longestSpan(version: nil, sequenceIndex: 0),
        longestSpan(version: nil, sequenceIndex: 1), longestSpan(version: nil, sequenceIndex: 2),
    ]

    /// An instant of `day` that decodes like every `received_at` of `bucket`: 0 for the day's
    /// start up to the first breakpoint, k for breakpoint k − 1 up to breakpoint k.
    package static func representative(bucket: Int, breakpoints: [Int64], day: UTCDay) -> UTCInstant {
        bucket <= 0 || breakpoints.isEmpty
            ? day.start : UTCInstant(milliseconds: breakpoints[min(bucket, breakpoints.count) - 1])
    }

    /// The bucket of `instant` among `breakpoints` (sorted): how many are at or before it, as
    /// PostgreSQL's `width_bucket` counts.
    package static func bucket(_ instant: UTCInstant, breakpoints: [Int64]) -> Int {
        var count = 0
        while count < breakpoints.count && breakpoints[count] <= instant.milliseconds { count += 1 }
        return count
    }

    /// Decodes a postback's value through its app's newest model (`verify --model` without
    /// `--received-at`).
    package func decode(
        appID: Int64,
        value: ConversionValue?,
        sequenceIndex: Int,
        conversionType: ModelConversionType = .install
    ) -> DecodedConversionValue {
        guard let timeline = timeline(appID: appID, conversionType) else { return .unmodelled }
        return timeline.newest.decode(value, sequenceIndex: sequenceIndex)
    }

    /// Decodes the value of a postback received at `receivedAt` through the model in force when
    /// it was set (see the type). `version`: the SKAdNetwork version; nil for AdAttributionKit.
    ///
    /// - Returns: the decoding, and whether the model in force changed within the span the value
    ///   could have been set in (only for a postback carrying a value).
    @inline(__always)
    package func decode(
        appID: Int64,
        value: ConversionValue?,
        sequenceIndex: Int,
        conversionType: ModelConversionType = .install,
        receivedAt: UTCInstant,
        version: String?
    ) -> (decoded: DecodedConversionValue, ambiguous: Bool) {
        guard let timeline = timeline(appID: appID, conversionType) else { return (.unmodelled, false) }
        guard !timeline.starts.isEmpty else {
            return (timeline.models[0].decode(value, sequenceIndex: sequenceIndex), false)
        }
        let latest = receivedAt.milliseconds - Self.latestDelay
        let decoded = timeline.model(at: latest).decode(value, sequenceIndex: sequenceIndex)
        guard value != nil else { return (decoded, false) }
        let earliest = receivedAt.milliseconds - Self.longestSpan(version: version, sequenceIndex: sequenceIndex)
        return (decoded, timeline.changes(after: earliest, through: latest))
    }

    /// The shortest delay Apple adds after a conversion window ends: 24 hours (spec section 9).
    package static let latestDelay: Int64 = 24 * 3_600_000

    /// The longest a postback can arrive after its value was set (milliseconds): SKAdNetwork
    /// 4.0 and AdAttributionKit 96 hours for postback 0, 264 for 1, 816 for 2; before 4.0, 48.
    package static func longestSpan(version: String?, sequenceIndex: Int) -> Int64 {
        let hours: Int64
        if let version, !version.hasPrefix("4.") {
            hours = 48
        } else {
            switch sequenceIndex {
            case 0: hours = 96
            case 1: hours = 264
            default: hours = 816
            }
        }
        return hours * 3_600_000
    }

    /// The longest span of any postback: 816 hours.
    package static let longestSpanOfAll: Int64 = longestSpan(version: nil, sequenceIndex: 2)
}

extension ConversionModels {
    /// Decodes `postback`'s value through the model in force when it was set, were it received
    /// at `receivedAt`; with nil, through the newest (`verify --model` without `--received-at`).
    package func decode(_ postback: Postback, receivedAt: UTCInstant?) -> DecodedConversionValue {
        var conversionType = ModelConversionType.install
        var version: String?
        switch postback {
        case .skan(let skan): version = skan.version.rawValue
        case .aak(let aak): if aak.conversionType == .reengagement { conversionType = .reengagement }
        }
        guard let receivedAt else {
            return decode(
                appID: postback.appID,
                value: postback.conversionValue,
                sequenceIndex: postback.sequenceIndex,
                conversionType: conversionType
            )
        }
        return decode(
            appID: postback.appID,
            value: postback.conversionValue,
            sequenceIndex: postback.sequenceIndex,
            conversionType: conversionType,
            receivedAt: receivedAt,
            version: version
        ).decoded
    }
}

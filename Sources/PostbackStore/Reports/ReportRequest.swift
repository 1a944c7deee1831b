import PostbackKit

/// A report as asked for, by `postbackd report`'s options or `GET /api/v1/report`'s query
/// parameters: parsed and checked in one place, so the two give the same answer (and the same
/// refusal) for the same options.
package struct ReportRequest: Sendable, Hashable {
    package var query: ReportQuery
    /// `--with-apple-ads`: Apple Ads' two measurements beside each row.
    package var withAppleAds: Bool
    /// `--modeled`: the modeled revenue in the table and CSV formats (JSON always has it).
    package var modeled = false
    /// `--with-claims`: each row's claimed installs (`postbackd claims add`), gap and coverage.
    package var withClaims = false
    /// `--as-of`: when the rows of a report by install date are judged final (``Maturity``).
    package var asOf = UTCInstant.now()
    /// `--cohorts`: the report by install date as cohorts (``CohortRow``); its query groups by
    /// `postback_sequence_index` last.
    package var cohorts = false
    /// `--currency`: every amount converted into this currency by its day's exchange rate.
    package var currency: String? { query.currency }

    /// The options as given, text as typed (nil or empty: not given).
    package struct Options: Sendable, Hashable {
        package var from: String?
        package var to: String?
        package var by: String?
        package var events = false
        package var dateBasis: String?
        /// Each may be a comma-separated list.
        package var appIDs: [String] = []
        package var adNetworkIDs: [String] = []
        package var withAppleAds = false
        package var modeled = false
        package var withClaims = false
        package var cohorts = false
        package var currency: String?
        /// `reconcile`'s (``ReconcileRequest``): when unmatched postbacks are judged, and how
        /// many days they wait for their other side.
        package var asOf: String?
        package var graceDays: String?

        package init() {}
    }

    /// The most apps or networks one request may name.
    static let maximumFilterValues = 100

    /// Parses and checks `options`.
    ///
    /// - Throws: ``ReportRequestError`` naming the option (`by`, `from`, …; the CLI spells it
    ///   `--by`) and what is wrong with it.
    package static func parse(_ options: Options) throws(ReportRequestError) -> ReportRequest {
        func day(_ text: String?, _ option: String) throws(ReportRequestError) -> UTCDay? {
            guard let text, !text.isEmpty else { return nil }
            guard let day = UTCDay(text) else {
                throw ReportRequestError(
                    .invalidValue,
                    option: option,
                    reason: "\"\(text)\" is not a date; use YYYY-MM-DD"
                )
            }
            return day
        }
        let from = try day(options.from, "from")
        let to = try day(options.to, "to")
        if let from, let to, from > to {
            throw ReportRequestError(
                .reversedPeriod,
                option: "from",
                reason: "\(from) is after the period's end, \(to)"
            )
        }
        // Claims are counted by install date unless a network's are by postback date: a report
        // with them is by install date unless asked otherwise.
        var basis = options.withClaims || options.cohorts ? DateBasis.install : DateBasis.received
        if let text = options.dateBasis, !text.isEmpty {
            guard let parsed = DateBasis(rawValue: text) else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "date-basis",
                    reason: "\"\(text)\" is not received or install"
                )
            }
            basis = parsed
        }
        // Not given: the basis's default; given empty: no dimensions (one row of totals).
        let byText =
            options.by
            ?? (options.cohorts
                ? "install_date" : basis == .install ? "install_date,ad_network_id" : "date,ad_network_id")
        let dimensions: [AggregateDimension]
        do {
            dimensions = try AggregateDimension.list(byText)
        } catch {
            throw ReportRequestError(.invalidValue, option: "by", reason: error.reason)
        }
        var appIDs: [Int64] = []
        for text in options.appIDs.flatMap({ $0.split(separator: ",") }) {
            let trimmed = text.withoutSurroundingSpaces
            guard let id = Int64(trimmed), id > 0 else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "app-id",
                    reason: "\"\(trimmed)\" is not an app id (a positive integer)"
                )
            }
            if !appIDs.contains(id) { appIDs.append(id) }
        }
        var networks: [String] = []
        for text in options.adNetworkIDs.flatMap({ $0.split(separator: ",") }) {
            let trimmed = text.withoutSurroundingSpaces
            guard !trimmed.isEmpty, trimmed.utf8.count <= 255 else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "ad-network-id",
                    reason: "an ad network id is 1 to 255 bytes"
                )
            }
            if !networks.contains(trimmed) { networks.append(trimmed) }
        }
        guard appIDs.count <= maximumFilterValues, networks.count <= maximumFilterValues else {
            throw ReportRequestError(
                .tooManyValues,
                option: appIDs.count > maximumFilterValues ? "app-id" : "ad-network-id",
                reason: "at most \(maximumFilterValues) values"
            )
        }
        if options.withAppleAds {
            guard !options.events, basis == .received, dimensions.allSatisfy(Report.sideBySideDimensions.contains),
                networks.isEmpty, appIDs.isEmpty
            else {
                throw ReportRequestError(
                    .notWithAppleAds,
                    option: "with-apple-ads",
                    reason:
                        "groups by date and app_id only (not with --events, --date-basis install, --app-id or --ad-network-id)"
                )
            }
        }
        if options.withClaims && (options.events || options.withAppleAds) {
            throw ReportRequestError(
                .invalidValue,
                option: "with-claims",
                reason: "compares installs: not with --events or --with-apple-ads"
            )
        }
        if options.cohorts {
            guard !options.events, !options.withAppleAds, !options.withClaims, !options.modeled,
                options.currency?.isEmpty ?? true
            else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "cohorts",
                    reason: "not with --events, --with-apple-ads, --with-claims, --modeled or --currency"
                )
            }
            guard basis == .install, dimensions.contains(.installDate),
                !dimensions.contains(.postbackSequenceIndex)
            else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "cohorts",
                    reason:
                        "groups by install date: --date-basis install, --by with install_date and without postback_sequence_index"
                )
            }
        }
        if options.modeled && options.events {
            throw ReportRequestError(
                .invalidValue,
                option: "modeled",
                reason: "models revenue, not events: not with --events"
            )
        }
        var currency: String?
        if let text = options.currency, !text.isEmpty {
            guard isCurrencyCode(text) else {
                throw ReportRequestError(
                    .invalidValue,
                    option: "currency",
                    reason: "\"\(text.prefix(64))\" is not a three-letter ISO 4217 code such as USD"
                )
            }
            currency = text
        }
        let asOf = try asOf(options.asOf) ?? UTCInstant.now()
        var query = ReportQuery(
            from: from,
            to: to,
            by: dimensions,
            events: options.events,
            dateBasis: basis,
            appIDs: appIDs,
            adNetworkIDs: networks
        )
        query.currency = currency
        return ReportRequest(
            query: query,
            withAppleAds: options.withAppleAds,
            modeled: options.modeled,
            withClaims: options.withClaims,
            asOf: asOf,
            cohorts: options.cohorts
        )
    }

    /// `--as-of` as given: nil when not given.
    static func asOf(_ text: String?) throws(ReportRequestError) -> UTCInstant? {
        guard let text, !text.isEmpty else { return nil }
        guard let instant = UTCInstant(iso8601: text) else {
            throw ReportRequestError(
                .invalidValue,
                option: "as-of",
                reason: "\"\(text.prefix(64))\" is not a time; use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"
            )
        }
        return instant
    }

    /// Reads the report from an open store: the report and, when the aggregates may be out of
    /// date, a warning.
    ///
    /// With costs stored for the period, the rows carry their spend (``Report/addSpend(_:_:)``;
    /// the warning says why when the dimensions cannot carry it). With ``currency``, the report
    /// is read by day too (when it is not already), each day's amounts converted by that day's
    /// rate, then summed back to the dimensions asked for.
    package func read(_ store: any PostbackStorage) async throws -> (report: Report, warning: String?) {
        let (report, notes) = try await readWithNotes(store)
        let warning = ([try await store.stalenessWarning()] + notes).compactMap { $0 }.joined(separator: "\n")
        return (report, warning.isEmpty ? nil : warning)
    }

    /// The report, and the notes about it: why spend is not shown, days without a rate.
    func readWithNotes(_ store: any PostbackStorage) async throws -> (report: Report, notes: [String]) {
        var working = query
        if cohorts { working.dimensions.append(.postbackSequenceIndex) }
        let day: AggregateDimension = query.dateBasis == .install ? .installDate : .date
        if currency != nil, !working.dimensions.contains(day) { working.dimensions.append(day) }
        var report = withAppleAds ? try await Report.sideBySide(store, working) : try await store.report(working)
        report.showsModeled = modeled
        // Cohorts carry no spend: its rows have no postback.
        var notes = cohorts ? [] : try await addSpend(to: &report, read: working, store)
        if withClaims { notes += try await report.addClaims(store, working) }
        if cohorts {
            report = report.cohorts()
        } else if working.dimensions.count > query.dimensions.count {
            report = report.folded(keeping: Array(query.dimensions.indices))
        }
        if query.dateBasis == .install && query.dimensions.contains(.installDate) && !query.events {
            report.maturityAsOf = asOf
        }
        return (report, notes)
    }

    /// Adds the spend to `report`, read by `working` (the query, by day too with a currency), and
    /// with ``currency`` converts its amounts day by day; returns the notes (why spend is not
    /// shown, days without a rate).
    func addSpend(
        to report: inout Report,
        read working: ReportQuery,
        _ store: any PostbackStorage
    ) async throws
        -> [String]
    {
        var notes = [try await report.addSpend(store, working)]
        let day: AggregateDimension = query.dateBasis == .install ? .installDate : .date
        if let currency, let dayPosition = working.dimensions.firstIndex(of: day) {
            let earliest = working.from.map {
                UTCDay(daysSinceEpoch: $0.daysSinceEpoch - Int64(ExchangeRates.maximumAge))
            }
            let rates = ExchangeRates(try await store.exchangeRates(from: earliest, to: working.to).map(\.rate))
            notes.append(report.convert(to: currency, dayPosition: dayPosition, rates: rates))
        }
        return notes.compactMap { $0 }
    }
}

/// An option of a report request that cannot be used.
///
/// Unlike other coded errors, ``reason`` leaves the option out: an HTTP answer gives it apart
/// (`{"field": "by", …}`), and ``description`` (`--by: …`) is what the command prints.
package struct ReportRequestError: CodedError {
    package typealias Code = ErrorCode<ReportRequestError>

    package let code: Code
    /// The option's name without dashes (`by`, `from`, `app-id`, …).
    package let option: String
    /// What is wrong with the option, without its name.
    package let reason: String
    /// The option, then what is wrong with it: `--by: …`.
    package var description: String { "--\(option): \(reason)" }

    package init(_ code: Code, option: String, reason: String) {
        self.code = code
        self.option = option
        self.reason = reason
    }
}

extension ErrorCode where Domain == ReportRequestError {
    /// A value that cannot be read: not a date, a date basis, a dimension, an app id or an
    /// ad network id.
    package static let invalidValue = Self("invalidValue")
    /// The period starts after it ends.
    package static let reversedPeriod = Self("reversedPeriod")
    /// More apps or ad networks than one request may name.
    package static let tooManyValues = Self("tooManyValues")
    /// `--with-apple-ads` with what it cannot show beside Apple Ads' counts.
    package static let notWithAppleAds = Self("notWithAppleAds")
    /// A query parameter that a route reading reports checks itself: unknown, or given
    /// twice.
    package static let invalidParameter = Self("invalidParameter")
}

import CoreMetrics
import Metrics
import PostbackKit
import PostbackStore
import Prometheus
import Synchronization

/// What `serve` counts, through swift-metrics into a Prometheus registry of the server's own
/// (not the process-wide bootstrap, so that several servers in one process count apart), and
/// its text for `GET /metrics`.
package final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let requests = Mutex<[RequestKey: CoreMetrics.Counter]>([:])
    private let verdicts: [Verdict: CoreMetrics.Counter]
    private let stored: CoreMetrics.Counter
    private let duplicates: CoreMetrics.Counter
    private let conflicts: CoreMetrics.Counter
    private let signedConflicts: CoreMetrics.Counter
    private let quarantined: CoreMetrics.Counter
    private let quarantineRepeats: CoreMetrics.Counter
    private let dropped: CoreMetrics.Counter
    private let commitFailures: CoreMetrics.Counter
    private let commitDuration: CoreMetrics.Timer
    private let groupSize: CoreMetrics.Recorder
    private let openConnections: CoreMetrics.Gauge
    private let apps = Mutex(AppSeries())
    private let appleAdsPending: CoreMetrics.Gauge
    private let appleAdsOldestPending: CoreMetrics.Gauge

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    /// The per-app series: labelled by the registered apps' ids, every other app as `other`,
    /// so that the label set stays as small as the apps an operator registered.
    private struct AppSeries {
        struct Key: Hashable {
            var app: String
            var kind: PostbackKind
        }
        /// The registered apps (refreshed from the store, ``MetricsRefreshService``).
        var registered: Set<Int64> = []
        var counters: [Key: CoreMetrics.Counter] = [:]
        var newest: [String: (seconds: Int64, gauge: CoreMetrics.Gauge)] = [:]

        enum Dropped {
            case counter(CoreMetrics.Counter)
            case gauge(CoreMetrics.Gauge)
        }

        func label(_ appID: Int64) -> String {
            registered.contains(appID) ? String(appID) : "other"
        }
    }

    package init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Commits take a flush to disk: from a tenth of a millisecond to seconds.
        factory.durationHistogramBuckets["postbackd_commit_duration_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
        ]
        factory.valueHistogramBuckets["postbackd_commit_group_size"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        self.factory = factory
        var verdicts: [Verdict: CoreMetrics.Counter] = [:]
        for verdict in [Verdict.valid, .invalid, .malformed, .unsupported] {
            verdicts[verdict] = CoreMetrics.Counter(
                label: "postbackd_postbacks_total",
                dimensions: [("verdict", verdict.rawValue)],
                factory: factory
            )
        }
        self.verdicts = verdicts
        stored = CoreMetrics.Counter(label: "postbackd_stored_total", factory: factory)
        duplicates = CoreMetrics.Counter(label: "postbackd_duplicates_total", factory: factory)
        conflicts = CoreMetrics.Counter(label: "postbackd_conflicts_total", factory: factory)
        signedConflicts = CoreMetrics.Counter(label: "postbackd_signed_conflicts_total", factory: factory)
        quarantined = CoreMetrics.Counter(label: "postbackd_quarantined_total", factory: factory)
        quarantineRepeats = CoreMetrics.Counter(label: "postbackd_quarantine_repeats_total", factory: factory)
        dropped = CoreMetrics.Counter(label: "postbackd_quarantine_dropped_total", factory: factory)
        commitFailures = CoreMetrics.Counter(label: "postbackd_commit_failures_total", factory: factory)
        commitDuration = CoreMetrics.Timer(label: "postbackd_commit_duration_seconds", factory: factory)
        groupSize = CoreMetrics.Recorder(label: "postbackd_commit_group_size", factory: factory)
        openConnections = CoreMetrics.Gauge(label: "postbackd_open_connections", factory: factory)
        appleAdsPending = CoreMetrics.Gauge(label: "postbackd_apple_ads_tokens_pending", factory: factory)
        appleAdsOldestPending = CoreMetrics.Gauge(
            label: "postbackd_apple_ads_oldest_pending_seconds",
            factory: factory
        )
    }

    /// One answered request, by route (its path pattern, or `other`) and status code.
    func request(route: String, status: Int) {
        let key = RequestKey(route: route, status: status)
        let counter = requests.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "postbackd_http_requests_total",
                dimensions: [("route", route), ("status", String(status))],
                factory: factory
            )
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    func record(_ outcome: ReceiptOutcome, _ result: VerificationResult, atSeconds now: Int64) {
        verdicts[result.verdict]?.increment()
        switch outcome {
        case .stored:
            stored.increment()
            // Only a production postback stored for the first time counts for its app: a
            // duplicate, a quarantined body (a replay, a forgery naming the app), a test-mode or
            // development postback (someone testing, `doctor --endpoint`'s probe) never hides a
            // silence.
            if let postback = result.postback, !result.testMode, !result.development {
                storedPostback(app: postback.appID, kind: postback.kind, at: now)
            }
        case .duplicate: duplicates.increment()
        case .conflict:
            duplicates.increment()
            conflicts.increment()
        case .signedConflict:
            duplicates.increment()
            conflicts.increment()
            signedConflicts.increment()
        case .quarantined(let newRow):
            quarantined.increment()
            if !newRow { quarantineRepeats.increment() }
        case .dropped: dropped.increment()
        }
    }

    private func storedPostback(app appID: Int64, kind: PostbackKind, at now: Int64) {
        let (counter, gauge) = apps.withLock { apps -> (CoreMetrics.Counter, CoreMetrics.Gauge?) in
            let key = AppSeries.Key(app: apps.label(appID), kind: kind)
            let counter =
                apps.counters[key]
                ?? CoreMetrics.Counter(
                    label: "postbackd_app_postbacks_total",
                    dimensions: [("app", key.app), ("kind", kind.rawValue)],
                    factory: factory
                )
            apps.counters[key] = counter
            return (counter, advance(&apps, app: key.app, seconds: now))
        }
        counter.increment()
        gauge?.record(now)
    }

    /// Moves an app's newest postback time forward to `seconds`; the gauge to record it in,
    /// nil when it already held a later time.
    private func advance(_ apps: inout AppSeries, app: String, seconds: Int64) -> CoreMetrics.Gauge? {
        if let known = apps.newest[app] {
            guard seconds > known.seconds else { return nil }
            apps.newest[app] = (seconds, known.gauge)
            return known.gauge
        }
        let gauge = CoreMetrics.Gauge(
            label: "postbackd_app_newest_postback_timestamp_seconds",
            dimensions: [("app", app)],
            factory: factory
        )
        apps.newest[app] = (seconds, gauge)
        return gauge
    }

    /// The registered apps, whose ids label the per-app series (every other app is `other`),
    /// and the newest postback the store holds for each app (seconds since 1970), so that the
    /// series survive a restart.
    package func apps(registered: Set<Int64>, newest: [Int64: Int64] = [:]) {
        let (updates, dropped) = apps.withLock { apps -> ([(CoreMetrics.Gauge, Int64)], [AppSeries.Dropped]) in
            // An app no longer registered loses its series (its postbacks count as `other`
            // from now on): a frozen newest-postback time would look like an app that stopped.
            var dropped: [AppSeries.Dropped] = []
            for appID in apps.registered.subtracting(registered) {
                let label = String(appID)
                for key in apps.counters.keys where key.app == label {
                    if let counter = apps.counters.removeValue(forKey: key) { dropped.append(.counter(counter)) }
                }
                if let gauge = apps.newest.removeValue(forKey: label)?.gauge { dropped.append(.gauge(gauge)) }
            }
            apps.registered = registered
            var latest: [String: Int64] = [:]
            for (appID, seconds) in newest {
                let label = apps.label(appID)
                latest[label] = max(latest[label] ?? .min, seconds)
            }
            let updates = latest.compactMap { app, seconds in
                advance(&apps, app: app, seconds: seconds).map { ($0, seconds) }
            }
            return (updates, dropped)
        }
        for series in dropped {
            switch series {
            case .counter(let counter): counter.destroy()
            case .gauge(let gauge): gauge.destroy()
            }
        }
        for (gauge, seconds) in updates { gauge.record(seconds) }
    }

    /// When the certificate `serve` answers HTTPS with (`--tls-cert`'s first) expires, in seconds
    /// since 1970: a renewed file is only served after a restart, which this shows.
    func servingCertificate(expiresAt seconds: Int64) {
        CoreMetrics.Gauge(label: "postbackd_tls_certificate_expiry_timestamp_seconds", factory: factory).record(seconds)
    }

    /// Apple Ads tokens waiting to be exchanged, and how long the oldest has waited.
    func appleAds(pending: Int, oldestPendingSeconds: Double) {
        appleAdsPending.record(pending)
        appleAdsOldestPending.record(oldestPendingSeconds)
    }

    func committed(group: Int, duration: Duration) {
        commitDuration.recordNanoseconds(duration.nanoseconds)
        groupSize.record(group)
    }

    func commitFailed(_ group: Int) {
        commitFailures.increment(by: group)
    }

    func connections(_ count: Int) {
        openConnections.record(count)
    }

    /// The Prometheus text exposition of everything above.
    package func text() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

extension ServerMetrics: ForwardMetrics {
    func forwardAttempt(destination: String, state: DeliveryState) {
        let outcome = state == .pending ? "retry" : state.rawValue
        // The registry hands back the collector already made for a name and labels.
        CoreMetrics.Counter(
            label: "postbackd_forward_attempts_total",
            dimensions: [("destination", destination), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    func forwardStatus(_ status: [DeliveryStatus], nowMs: Int64) {
        for destination in status {
            let counts = [
                ("delivered", destination.delivered), ("pending", destination.pending),
                ("retrying", destination.retrying),
                ("rejected", destination.rejected), ("failed", destination.failed),
            ]
            for (state, count) in counts {
                CoreMetrics.Gauge(
                    label: "postbackd_forward_deliveries",
                    dimensions: [("destination", destination.destination), ("state", state)],
                    factory: factory
                ).record(count)
            }
            let age = destination.oldestPendingMs.map { Double(max(0, nowMs - $0)) / 1000 } ?? 0
            CoreMetrics.Gauge(
                label: "postbackd_forward_oldest_pending_seconds",
                dimensions: [("destination", destination.destination)],
                factory: factory
            ).record(age)
        }
    }
}

import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle

/// Keeps the metrics that come from the store current: which apps are registered (the labels
/// of the per-app series), the newest postback of each app as the store holds it (at start,
/// and again when the registered apps change, so that a restart or another receiver of the
/// same store does not make an app look silent), and the Apple Ads tokens waiting.
struct MetricsRefreshService: Service {
    /// How often the store is read: small statements, on the store `--db` names.
    static let interval: Duration = .seconds(30)
    /// How far back the newest postback of each app is looked for: a week and a day, the
    /// longest silence the shipped alert rules look at (`ops/prometheus/postbackd-rules.yml`).
    static let lookBackDays: Int64 = 8

    let metrics: ServerMetrics
    let reader: ReportReader
    let logger: Logger

    func run() async throws {
        // Cancelled as soon as shutdown begins: a wait for an unreachable store included.
        try? await cancelWhenGracefulShutdown {
            var registered: Set<Int64>?
            while !Task.isCancelled {
                registered = await refresh(after: registered)
                try await Task.sleep(for: Self.interval)
            }
        }
    }

    /// One refresh; the registered apps it saw (`known` again when the store could not say).
    private func refresh(after known: Set<Int64>?) async -> Set<Int64>? {
        var seen = known
        do {
            let apps = Set(try await reader.read { store in try await store.apps() }.map(\.appID))
            if apps != known {
                let since = UTCDay(daysSinceEpoch: UTCInstant.now().day.daysSinceEpoch - Self.lookBackDays)
                let newest = try await reader.read { store in try await store.newestPostbacks(since: since) }
                metrics.apps(registered: apps, newest: newest.mapValues { $0 / 1000 })
            }
            seen = apps
            let pending = try await reader.read { store in try await store.appleAdsPending() }
            let now = UTCInstant.now().milliseconds
            metrics.appleAds(
                pending: pending.count,
                oldestPendingSeconds: pending.oldestObtainedMs.map { Double(max(0, now - $0)) / 1000 } ?? 0
            )
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot read the store for the metrics", metadata: ["serve.error": "\(error)"])
            }
        }
        return seen
    }
}

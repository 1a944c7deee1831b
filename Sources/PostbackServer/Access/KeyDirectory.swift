import HTTPTypes
import Hummingbird
import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// The keys `serve` accepts: the options' keys, and the store's, read at start and again every
/// ``reloadInterval``, so that a key added or revoked by any process sharing the store is taken
/// within that time. A secret or cookie is found by comparing its SHA-256 with every key's in
/// time that does not depend on where they differ; no secret is kept, nor logged.
///
/// Which routes need a key: the reading routes (report, summary, dashboard) once any key opens
/// `report` or `dashboard`; the routes apps call (conversion values, the Apple Ads token) once
/// any key opens `conversion-value` or `apple-ads`; the pull API and networks' forwards always. A revoked key counts:
/// routes once guarded stay guarded.
final class KeyDirectory: Sendable {
    static let reloadInterval: Duration = .seconds(5)

    private struct Snapshot: Sendable {
        var keys: [ServeKey] = []
        var scopes: Set<AccessScope> = []
    }

    private let configured: [ServeKey]
    private let snapshot: Mutex<Snapshot>
    /// When each stored key was last used, since the last ``takeUses()``.
    private let uses = Mutex<[String: UTCInstant]>([:])

    init(dashboardToken: String?, apiKeys: [String]) {
        configured = (dashboardToken.map { [ServeKey.dashboardToken($0)] } ?? []) + apiKeys.map(ServeKey.apiKey)
        snapshot = Mutex(Snapshot(keys: configured, scopes: configured.reduce(into: []) { $0.formUnion($1.scopes) }))
    }

    /// The store's keys replace those read before. A revoked key opens nothing, but its scopes
    /// stay guarded: revoking the last key of the reports must not open them to everyone.
    func replace(with stored: [StoredAccessKey]) {
        var scopes = configured.reduce(into: Set<AccessScope>()) { $0.formUnion($1.scopes) }
        for key in stored { scopes.formUnion(key.scopes) }
        let next = Snapshot(keys: configured + stored.compactMap(ServeKey.init), scopes: scopes)
        snapshot.withLock { $0 = next }
    }

    /// Whether a route of `scope` needs a key.
    func guards(_ scope: AccessScope) -> Bool {
        let scopes = snapshot.withLock { $0.scopes }
        switch scope {
        case .report, .dashboard: return scopes.contains(.report) || scopes.contains(.dashboard)
        case .conversionValue, .appleAds: return scopes.contains(.conversionValue) || scopes.contains(.appleAds)
        case .export, .forwards: return true
        }
    }

    /// The key whose secret is `secret`.
    func key(secret: String) -> ServeKey? {
        find(SHA256Digest.hash(Array(secret.utf8)), \.secretSHA256)
    }

    /// The key whose dashboard session cookie is `session`.
    func key(session: String) -> ServeKey? {
        find(SHA256Digest.hash(Array(session.utf8)), \.sessionSHA256)
    }

    private func find(_ hash: [UInt8], _ field: KeyPath<ServeKey, [UInt8]>) -> ServeKey? {
        let keys = snapshot.withLock { $0.keys }
        var found: ServeKey?
        // Every key is compared, whichever matches.
        for key in keys where constantTimeEqual(key[keyPath: field], hash) && found == nil { found = key }
        return found
    }

    /// Notes that `key` was used now (recorded in the store by the next reload).
    func used(_ key: ServeKey) {
        guard key.stored else { return }
        let now = UTCInstant.now()
        uses.withLock { $0[key.name] = now }
    }

    /// The uses noted since the last call.
    func takeUses() -> [String: UTCInstant] {
        uses.withLock { uses in
            defer { uses.removeAll() }
            return uses
        }
    }
}

/// Reloads ``KeyDirectory`` from the store every ``KeyDirectory/reloadInterval``, on a store of
/// `--db` beside the writer's (never `--read-db`'s: a revoked key must be refused however far a
/// standby lags), and hands the keys' last uses to the writer, which records them between two
/// commits. A store that cannot be read keeps the keys read before, and says so in the log.
///
/// The reads wait for no write. A write that waits for the store's lock (another process's
/// transaction on the same SQLite file) holds the connection it waits on; done here, as it
/// was, it put off the next read, and the reading routes with it (CI saw a revocation taken
/// after 10.09 s). The reads also keep a clock of their own: each is due ``KeyDirectory/reloadInterval``
/// after the last was due, not after it ended, so a revoked key is refused within the interval
/// and the time one read takes.
struct KeyReloadService: Service {
    let keys: KeyDirectory
    let reader: ReportReader
    let committer: GroupCommitter
    let logger: Logger

    func run() async throws {
        // Cancelled as soon as shutdown begins, a wait for an unreachable store included: the
        // writer, shut down after this, must not wait for it.
        await cancelWhenGracefulShutdown {
            await Self.every(KeyDirectory.reloadInterval) {
                await reload()
                committer.recordKeyUses(keys.takeUses())
            }
        }
        // The uses since the last turn: the writer, shut down after this, records them.
        committer.recordKeyUses(keys.takeUses())
    }

    /// Runs `body` once every `interval` on the clock, from when each run was due, not from when
    /// the last one ended; a run that overran its turn starts the next at once, with no catching
    /// up. Ends when the task is cancelled.
    static func every(_ interval: Duration, _ body: () async -> Void) async {
        let clock = ContinuousClock()
        var due = clock.now
        while !Task.isCancelled {
            due = max(due + interval, clock.now)
            do { try await clock.sleep(until: due) } catch { return }
            await body()
        }
    }

    private func reload() async {
        do {
            keys.replace(with: try await reader.read { store in try await store.accessKeys() })
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot reload the access keys", metadata: ["serve.error": "\(error)"])
            }
        }
    }
}

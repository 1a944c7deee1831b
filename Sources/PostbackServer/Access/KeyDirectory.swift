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
/// any key opens `conversion-value` or `apple-ads`; the pull API always. A revoked key counts:
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
        case .export: return true
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

/// Reloads ``KeyDirectory`` from the store every ``KeyDirectory/reloadInterval`` and records
/// the keys' last uses, on a store of `--db` beside the writer's (never `--read-db`'s: a
/// standby takes no writes). A store that cannot be read keeps the keys read before, and says
/// so in the log.
struct KeyReloadService: Service {
    let keys: KeyDirectory
    let reader: ReportReader
    let logger: Logger

    func run() async throws {
        // Cancelled as soon as shutdown begins, a wait for an unreachable store included: the
        // writer, shut down after this, must not wait for it.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: KeyDirectory.reloadInterval)
                await reload()
            }
        }
    }

    private func reload() async {
        // The keys first: a revocation must not wait on a write.
        do {
            keys.replace(with: try await reader.read { store in try await store.accessKeys() })
        } catch {
            if !Task.isCancelled {
                logger.warning("cannot reload the access keys", metadata: ["serve.error": "\(error)"])
            }
            return
        }
        let uses = keys.takeUses()
        guard !uses.isEmpty, !Task.isCancelled else { return }
        do {
            try await reader.read { store in try await store.recordAccessKeyUse(uses) }
        } catch {
            logger.warning("cannot record the access keys' use", metadata: ["serve.error": "\(error)"])
        }
    }
}

import Logging
import PostbackKit

/// Opens stores by location.
package enum PostbackStores {
    /// Opens the store at `location`, creating and migrating its schema when needed (unless
    /// `access` is ``StoreAccess/readOnly``), runs `body` with it, and closes it whatever
    /// happens. PostgreSQL's connection pool runs in a task of this scope (as PostgresNIO's
    /// `PostgresClient.run()` asks), ended when `body` returns.
    ///
    /// - Throws: ``StoreFault`` before `body` runs when the store cannot be used
    ///   (unreachable, authentication refused, not a postbackd store, a newer schema).
    package static func with<Result>(
        _ location: StoreLocation,
        access: StoreAccess = .standard,
        logger: Logger = Logger(label: "postbackd.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (any StoreEngine) async throws -> Result
    ) async throws -> Result {
        switch location {
        case .sqlite(let path):
            let store = try SQLiteStore(path: path, access: access)
            defer { store.close() }
            return try await body(store)
        case .postgres(let url):
            return try await PostgresStore.with(url, access: access, logger: logger, body)
        }
    }
}

import PostbackKit

/// What a store is opened for.
package enum StoreAccess: Sendable {
    /// Ingest: a long-lived writer.
    case ingest
    /// `serve`: every commit flushed to disk before it returns.
    case receive
    /// Any other command.
    case standard
    /// `report`, `models list|show`, `check`: reads only. Nothing is created, migrated or
    /// written (an SQLite file is opened read-only, beside it too); a schema of another
    /// version is refused with a ``StoreFault``.
    case readOnly
}

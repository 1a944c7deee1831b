import PostbackKit

/// Where each consumer's last export ended (`export --consumer`, and `forward`'s discovery), on
/// both engines. What a cursor holds is the engine's own (row ids on SQLite, transaction ids on
/// PostgreSQL: `ExportCursor`); reading and writing it is one statement.
package enum ExportCursorsSQL {
    /// Where `consumer`'s export of `table` ended: one row, its position, or none.
    static func select(consumer: String, table: ExportTable) -> SQLQuery {
        "SELECT position FROM export_cursors WHERE consumer = \(consumer) AND table_name = \(table.rawValue)"
    }

    /// Records where `consumer`'s export of `table` ended.
    package static func save(_ cursor: ExportCursor, consumer: String, table: ExportTable) -> SQLQuery {
        """
        INSERT INTO export_cursors (consumer, table_name, position, updated_at)
        VALUES (\(consumer), \(table.rawValue), \(cursor.position), \(UTCInstant.now()))
        ON CONFLICT (consumer, table_name) DO UPDATE SET position = excluded.position,
            updated_at = excluded.updated_at
        """
    }
}

extension ExportSource {
    package func exportCursor(consumer: String, table: ExportTable) async throws -> ExportCursor? {
        try await withSQL("read the export cursor", .statement) { sql in
            try await sql.row(ExportCursorsSQL.select(consumer: consumer, table: table)).map {
                ExportCursor(try $0.string(0))
            }
        }
    }

    package func saveExportCursor(_ cursor: ExportCursor, consumer: String, table: ExportTable) async throws {
        try await withSQL("record the export cursor", .statement) { sql in
            try await sql.execute(ExportCursorsSQL.save(cursor, consumer: consumer, table: table))
        }
    }
}

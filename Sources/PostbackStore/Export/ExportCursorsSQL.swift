import PostbackKit

/// Where each consumer's last export ended (`export --consumer`, and `forward`'s discovery), on
/// both engines. What a cursor holds is the engine's own (row ids on SQLite, transaction ids on
/// PostgreSQL: `ExportCursor`); reading and writing it is one statement.
extension ExportSource {
    package func exportCursor(consumer: String, table: ExportTable) async throws -> ExportCursor? {
        try await withSQL("read the export cursor", .statement) { sql in
            try await sql.row(
                "SELECT position FROM export_cursors WHERE consumer = \(consumer) AND table_name = \(table.rawValue)"
            ).map { ExportCursor(try $0.string(0)) }
        }
    }

    package func saveExportCursor(_ cursor: ExportCursor, consumer: String, table: ExportTable) async throws {
        let now = UTCInstant.now()
        try await withSQL("record the export cursor", .statement) { sql in
            try await sql.execute(
                """
                INSERT INTO export_cursors (consumer, table_name, position, updated_at)
                VALUES (\(consumer), \(table.rawValue), \(cursor.position), \(now))
                ON CONFLICT (consumer, table_name) DO UPDATE SET position = excluded.position,
                    updated_at = excluded.updated_at
                """
            )
        }
    }
}

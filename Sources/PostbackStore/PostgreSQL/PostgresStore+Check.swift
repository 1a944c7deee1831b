import PostbackKit
import PostgresNIO

/// `check`'s engine check on PostgreSQL, its own: the `amcheck` extension.
extension PostgresStore {
    /// `amcheck`'s `bt_index_check` on each B-tree index of postbackd's schema, where the
    /// extension is installed and this user may run it; otherwise skipped, saying why.
    /// PostgreSQL has no check of its own a user without superuser rights can run on tables.
    package func checkEngine() async throws -> EngineCheck {
        let name = "amcheck bt_index_check"
        return try await transaction("check the indexes", isolation: " READ ONLY") { connection in
            let installed = try await connection.value(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'amcheck')",
                as: Bool.self,
                logger: logger
            )
            guard installed == true else {
                return EngineCheck(
                    name: name,
                    outcome: .skipped,
                    messages: [
                        "the amcheck extension is not installed in this database (a superuser can run CREATE EXTENSION amcheck and grant EXECUTE ON FUNCTION bt_index_check(regclass) to this user)"
                    ]
                )
            }
            var indexes: [String] = []
            for try await index in try await connection.send(
                """
                SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                JOIN pg_class t ON t.oid = i.indrelid JOIN pg_am am ON am.oid = c.relam
                WHERE am.amname = 'btree' AND t.relnamespace = current_schema()::regnamespace ORDER BY 1
                """,
                logger: logger
            ).decode(String.self) {
                indexes.append(index)
            }
            var problems: [String] = []
            for index in indexes {
                try await connection.send("SAVEPOINT index_check", logger: logger)
                do {
                    try await connection.send(
                        PostgresQuery(unsafeSQL: "SELECT bt_index_check('\(index)'::regclass)::text"),
                        logger: logger
                    )
                    try await connection.send("RELEASE SAVEPOINT index_check", logger: logger)
                } catch let error as PSQLError {
                    try await connection.send("ROLLBACK TO SAVEPOINT index_check", logger: logger)
                    if error.serverInfo?[.sqlState] == "42501" {
                        return EngineCheck(
                            name: name,
                            outcome: .skipped,
                            messages: [
                                "this user may not run bt_index_check (\(describePostgresError(error))); a superuser can GRANT EXECUTE ON FUNCTION bt_index_check(regclass) to it"
                            ]
                        )
                    }
                    problems.append("index \(index): \(describePostgresError(error))")
                }
            }
            return EngineCheck(name: name, outcome: problems.isEmpty ? .sound : .problems, messages: problems)
        }
    }

}

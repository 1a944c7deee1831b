import PostbackKit

/// The run log (`ingest_runs`): one row per `ingest`, and one per `serve` process, on both
/// engines.
extension PostbackStorage {
    package func beginRun(inputs: [String], receivedAtOption: UTCInstant?, startedAt: UTCInstant) async throws -> Int64
    {
        let inputsJSON = "[" + inputs.map { jsonQuoted($0) }.joined(separator: ",") + "]"
        return try await withSQL("record the run", .write, retry: .run) { sql in
            let row = try await sql.row(
                """
                INSERT INTO ingest_runs (started_at, status, inputs, received_at_option, postbackd_version)
                VALUES (\(startedAt), 'running', \(inputsJSON)\(sqlite: "", postgres: "::jsonb"), \(receivedAtOption),
                    \(PostbackdVersion.current))
                RETURNING id
                """
            )
            guard let row else { throw SQLReadError(.noRow, "recording the run returned no run id") }
            return try row.int64(0)
        }
    }

    package func finishRun(_ id: Int64, summary: IngestSummary, status: String, finishedAt: UTCInstant) async throws {
        try await withSQL("record the end of the run", .write, retry: .run) { sql in
            try await sql.execute(
                """
                UPDATE ingest_runs SET finished_at = \(finishedAt), status = \(status),
                    read = \(summary.read), accepted = \(summary.accepted), duplicates = \(summary.duplicates),
                    conflicts = \(summary.conflicts), signed_conflicts = \(summary.signedConflicts),
                    quarantined = \(summary.quarantined),
                    test_mode = \(summary.testMode), development = \(summary.development)
                WHERE id = \(id)
                """
            )
        }
    }
}

import GRDB

/// The statements of ingest's and `serve`'s writes on SQLite.
extension SQLiteStore {
    /// `INSERT INTO postbacks`, each value bound in column order (the dedup key 37th, the
    /// channel after it), the HTTP request's client address and id after those when `received`. `unlessPruned`: nothing
    /// either when `pruned_keys` holds the key (a postback `prune` removed): for the rows
    /// ``PrunedKeyGuard`` covers.
    static func insertPostback(received: Bool, unlessPruned: Bool) -> String {
        let parameters = Array(repeating: "?", count: received ? 40 : 38).joined(separator: ", ")
        return """
            INSERT INTO postbacks (
                kind, key_space, ad_network_id, transaction_id, postback_sequence_index, version, app_id, campaign_id,
                source_identifier, source_app_id, source_domain, fidelity_type, did_win, redownload, conversion_type,
                marketplace_id, impression_type, ad_interaction_type, fine_value, coarse_value, country_code, test_mode,
                development, key_name, received_at, received_at_source, raw, raw_sha256, source, source_index,
                source_line, run_id, estimated_install_at, install_date, crowd_anonymity_tier, source_identifier_digits,
                dedup_key, channel\(received ? ", client_address, request_id" : ""))
            \(unlessPruned
                ? "SELECT \(parameters) WHERE NOT EXISTS (SELECT 1 FROM pruned_keys WHERE dedup_key = ?37)"
                : "VALUES (\(parameters))")
            ON CONFLICT (dedup_key) DO NOTHING
            """
    }

    /// ``insertPostback(received:unlessPruned:)`` of each kind, indexed by `received` then
    /// `unlessPruned`.
    static let insertPostbacks = [false, true].map { received in
        [false, true].map { unlessPruned in insertPostback(received: received, unlessPruned: unlessPruned) }
    }

    /// Which inserts check `pruned_keys`: read once per write transaction (one writer: no
    /// prune commits inside it).
    static func prunedKeyGuard(_ db: Database) throws -> PrunedKeyGuard {
        try SQLiteSQL.rows(db, PrunedKeyGuard.read).first.map(PrunedKeyGuard.init) ?? PrunedKeyGuard()
    }

    static let selectStored = """
        SELECT id, source, source_index, raw_sha256, fine_value, coarse_value, country_code,
            ad_network_id, transaction_id, postback_sequence_index, kind, key_space, \(SignedColumns.sqlColumns)
        FROM postbacks WHERE dedup_key = ?
        """

    /// `INSERT INTO sightings`, with the HTTP request's client address and id when `received`.
    static func insertSighting(received: Bool) -> String {
        """
        INSERT INTO sightings (
            postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value, country_code,
            conflict, received_at, run_id, channel, ad_interaction_type\(received ? ", client_address, request_id" : ""))
        VALUES (\(Array(repeating: "?", count: received ? 16 : 14).joined(separator: ", ")))
        ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
        """
    }

    /// ``insertSighting(received:)`` of each kind, indexed by `received`.
    static let insertSightings = [false, true].map(insertSighting(received:))

    static let insertConflict = """
        INSERT INTO conflicts (
            sighting_id, postback_id, stored_fine_value, stored_coarse_value, stored_country_code, copy_fine_value,
            copy_coarse_value, copy_country_code, signed_differs)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let insertQuarantine = """
        INSERT INTO quarantine (
            verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256, source,
            source_index, source_line, received_at, run_id, channel)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
        """

    /// A refused HTTP body: one row per distinct body; a repeat adds to its `received_count`.
    /// Returns the row's count (1: the row is new).
    static let upsertReceivedQuarantine = """
        INSERT INTO quarantine (
            verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256, source,
            source_index, source_line, received_at, run_id, client_address, request_id, channel)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (source, source_index, raw_sha256) DO UPDATE SET received_count = received_count + 1
        RETURNING received_count
        """
}

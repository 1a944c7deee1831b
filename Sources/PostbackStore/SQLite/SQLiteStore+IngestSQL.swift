import GRDB

/// The statements of ingest's and `serve`'s writes on SQLite.
extension SQLiteStore {
    /// `INSERT INTO postbacks`, each value bound in column order (the dedup key 37th, the
    /// channel and the row id after it), the HTTP request's client address and id after those
    /// when `received`. The writer has claimed the key under that row id (``claimRecentKey``;
    /// ingest's claims wait to be written in key order, ``RecentKeys``): one row of `VALUES`,
    /// not an `INSERT … SELECT … WHERE NOT EXISTS`, which SQLite runs
    /// with a statement journal (a copy of every page it touches: 1.7× the writer's time).
    static func insertPostback(received: Bool) -> String {
        let parameters = Array(repeating: "?", count: received ? 41 : 39).joined(separator: ", ")
        return """
            INSERT INTO postbacks (
                kind, key_space, ad_network_id, transaction_id, postback_sequence_index, version, app_id, campaign_id,
                source_identifier, source_app_id, source_domain, fidelity_type, did_win, redownload, conversion_type,
                marketplace_id, impression_type, ad_interaction_type, fine_value, coarse_value, country_code, test_mode,
                development, key_name, received_at, received_at_source, raw, raw_sha256, source, source_index,
                source_line, run_id, estimated_install_at, install_date, crowd_anonymity_tier, source_identifier_digits,
                dedup_key, channel, id\(received ? ", client_address, request_id" : ""))
            VALUES (\(parameters))
            """
    }

    /// ``insertPostback(received:)`` of each kind, indexed by `received`.
    package static let insertPostbacks = [false, true].map(insertPostback(received:))

    /// Whether `pruned_keys` holds a key (a postback `prune` removed): asked for the rows
    /// ``PrunedKeyGuard`` covers.
    static let selectPrunedKey = "SELECT 1 FROM pruned_keys WHERE dedup_key = ?"

    /// Which keys are looked up in `pruned_keys`: read once per write transaction (one writer: no
    /// prune commits inside it).
    static func prunedKeyGuard(_ db: Database) throws -> PrunedKeyGuard {
        try SQLiteSQL.rows(db, PrunedKeyGuard.read).first.map(PrunedKeyGuard.init) ?? PrunedKeyGuard()
    }

    /// A new postback's key claimed in the recent level of dedup keys (``DedupLevels``), with
    /// the row id the postback will take: nothing when the level holds the key.
    package static let claimRecentKey = """
        INSERT INTO dedup_recent (dedup_key, postback_id) VALUES (?, ?) ON CONFLICT (dedup_key) DO NOTHING
        """

    /// The largest row id of `postbacks` (0 when empty): the next stored postback takes the one
    /// after it (``SQLiteWriter``), and the store's size is judged by it.
    static func lastPostbackID(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM postbacks") ?? 0
    }

    /// The stored postback of a dedup key, through the level that holds it: one row, or none.
    static let selectStored = ["dedup_recent", "dedup_settled"].map(selectStored(through:))
        .joined(separator: "\nUNION ALL\n")

    /// ``selectStored`` through the recent level alone: for a key the settled level's filter
    /// (``DedupFilter``) does not hold.
    static let selectStoredRecent = selectStored(through: "dedup_recent")

    /// The stored postback of a row id, as ``selectStored`` reads it: a postback this
    /// transaction stored (``RecentKeys``).
    static let selectStoredByID = "\(selectStoredColumns)\nFROM postbacks WHERE id = ?1"

    private static func selectStored(through level: String) -> String {
        """
        \(selectStoredColumns)
        FROM \(level) JOIN postbacks ON postbacks.id = \(level).postback_id
        WHERE \(level).dedup_key = ?1
        """
    }

    /// The columns ``StoredPostback`` reads, in its order.
    private static let selectStoredColumns = """
        SELECT id, source, source_index, raw_sha256, fine_value, coarse_value, country_code,
            ad_network_id, transaction_id, postback_sequence_index, kind, key_space, \(SignedColumns.sqlColumns)
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

    package static let insertQuarantine = """
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

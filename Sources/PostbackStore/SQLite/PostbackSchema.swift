import CPostbackdSQLite
import GRDB
import PostbackKit

/// The database schema, as a sequence of migrations: a database is migrated forward on open,
/// and never backward.
///
/// Tables (documented for `sqlite3` users in docs/ingest.md):
/// - `postbacks`: one row per accepted postback, every parsed field a column, the raw JSON,
///   where it was read; its dedup key unique over `dedup_recent` and `dedup_settled`
///   (``DedupLevels``).
/// - `sightings`: every further copy of a stored postback, one per distinct (source,
///   position, bytes).
/// - `conflicts`: sightings whose unsigned values differ from the stored postback, with both, or
///   whose signed content differs (`signed_differs`).
/// - `quarantine`: every invalid, malformed or unsupported entry with its reason and bytes.
/// - `ingest_runs`: one row per `postbackd ingest`, and one per `postbackd serve` process.
/// - `conversion_models`: every model added, the current one per app with no `replaced_at`.
/// - `aggregate_daily`, `aggregate_daily_revenue`, `aggregate_daily_events`,
///   `aggregate_daily_event_revenue`, `aggregate_fine_values`: what `postbackd aggregate`
///   computes, keyed by their dimensions (no surrogate ids, so a re-run gives identical rows).
/// - `aggregate_daily_intake`: per day received, what `aggregate` counted besides stored
///   postbacks: quarantined bodies, duplicate copies and conflicting copies.
/// - `aggregate_daily_totals`, `aggregate_daily_totals_revenue`, `aggregate_fine_value_totals`,
///   `aggregate_dashboard_received`, `aggregate_dashboard_install`, the same `_by_app`, and
///   their `_revenue`: the dashboard's sums of the rows above over the dimensions it does not
///   show.
/// - `aggregate_daily_references`: the null model's reference groups per day (``NullModel``).
/// - `aggregate_runs`: one row per `postbackd aggregate`.
/// - `campaign_mappings`: each network's source identifier prefixes and their campaign, ad
///   group and creative over time (`postbackd campaigns add`).
package enum PostbackSchema {
    /// A released migration: GRDB's identifier for it and its SQL, literal.
    ///
    /// Frozen: a migration that has shipped is never edited, and names no application type
    /// (no column list, dimension or table built by live code), so that what it creates is what
    /// it created the day it shipped. A change to the schema is a new migration at the end.
    /// `SchemaUpgradeTests` pins each one's SHA-256.
    package struct Migration: Sendable {
        package var identifier: String
        /// SQL functions the migration's statements call (v5's dedup key digest: the stored
        /// key's definition, which no SQL spells).
        var functions: [DatabaseFunction]
        /// The SQL edits tables' SQL in `sqlite_master`: the migrator runs it under `PRAGMA
        /// writable_schema` (``editingSchemaText(_:_:)``).
        var editsSchemaText: Bool
        /// GRDB's default, `.deferred`, turns foreign keys off for the migration and runs
        /// `PRAGMA foreign_key_check` over the whole store before it commits, as a migration that
        /// rebuilds a table needs; `.immediate` keeps them on and checks nothing more.
        var foreignKeyChecks: DatabaseMigrator.ForeignKeyChecks
        package var sql: String

        init(
            _ identifier: String,
            functions: [DatabaseFunction] = [],
            editsSchemaText: Bool = false,
            foreignKeyChecks: DatabaseMigrator.ForeignKeyChecks = .deferred,
            sql: String
        ) {
            self.identifier = identifier
            self.functions = functions
            self.editsSchemaText = editsSchemaText
            self.foreignKeyChecks = foreignKeyChecks
            self.sql = sql
        }
    }

    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in migrations {
            migrator.registerMigration(migration.identifier, foreignKeyChecks: migration.foreignKeyChecks) { db in
                for function in migration.functions { db.add(function: function) }
                if migration.editsSchemaText {
                    try editingSchemaText(db) { try db.execute(sql: migration.sql) }
                } else {
                    try db.execute(sql: migration.sql)
                }
            }
        }
        return migrator
    }

    /// Runs `edit`, which changes tables' SQL in `sqlite_master`, by SQLite's documented
    /// procedure: with `PRAGMA writable_schema` on (and the connection's defensive mode off,
    /// which would refuse it), then `schema_version` moved so that every connection, this one
    /// included, reads the schema again. Both settings are put back whatever happens: a
    /// connection keeps them across a rollback, and this one goes on to serve the store.
    private static func editingSchemaText(_ db: Database, _ edit: () throws -> Void) throws {
        let defensive = postbackd_sqlite3_set_defensive(db.sqliteConnection, 0)
        defer { _ = postbackd_sqlite3_set_defensive(db.sqliteConnection, defensive) }
        try db.execute(sql: "PRAGMA writable_schema = ON")
        defer { try? db.execute(sql: "PRAGMA writable_schema = OFF") }
        try edit()
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
    }

    package static let migrations: [Migration] = [
        Migration(
            "v1: postbacks, sightings, conflicts, quarantine, ingest runs",
            sql: #"""
                CREATE TABLE ingest_runs (
                    id INTEGER PRIMARY KEY,
                    started_at TEXT NOT NULL,
                    finished_at TEXT,
                    status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
                    inputs TEXT NOT NULL,
                    received_at_option TEXT,
                    postbackd_version TEXT NOT NULL,
                    read INTEGER NOT NULL DEFAULT 0,
                    accepted INTEGER NOT NULL DEFAULT 0,
                    duplicates INTEGER NOT NULL DEFAULT 0,
                    conflicts INTEGER NOT NULL DEFAULT 0,
                    quarantined INTEGER NOT NULL DEFAULT 0,
                    test_mode INTEGER NOT NULL DEFAULT 0,
                    development INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE postbacks (
                    id INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL CHECK (kind IN ('skan', 'aak')),
                    key_space TEXT NOT NULL CHECK (key_space IN ('production', 'test', 'development')),
                    ad_network_id TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    postback_sequence_index INTEGER NOT NULL,
                    version TEXT,
                    app_id INTEGER NOT NULL,
                    campaign_id INTEGER,
                    source_identifier TEXT,
                    source_app_id INTEGER,
                    source_domain TEXT,
                    fidelity_type INTEGER,
                    did_win INTEGER,
                    redownload INTEGER,
                    conversion_type TEXT,
                    marketplace_id TEXT,
                    impression_type TEXT,
                    ad_interaction_type TEXT,
                    fine_value INTEGER,
                    coarse_value TEXT,
                    country_code TEXT,
                    test_mode INTEGER NOT NULL,
                    development INTEGER NOT NULL,
                    key_name TEXT NOT NULL,
                    received_at TEXT NOT NULL,
                    received_at_source TEXT NOT NULL,
                    raw BLOB NOT NULL,
                    raw_sha256 BLOB NOT NULL,
                    source TEXT NOT NULL,
                    source_index INTEGER NOT NULL,
                    source_line INTEGER NOT NULL,
                    run_id INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX postbacks_dedup_key
                    ON postbacks (ad_network_id, transaction_id, postback_sequence_index, kind, key_space);
                CREATE INDEX postbacks_received_at ON postbacks (received_at);
                CREATE TABLE sightings (
                    id INTEGER PRIMARY KEY,
                    postback_id INTEGER NOT NULL REFERENCES postbacks (id),
                    source TEXT NOT NULL,
                    source_index INTEGER NOT NULL,
                    source_line INTEGER NOT NULL,
                    raw_sha256 BLOB NOT NULL,
                    raw BLOB,
                    fine_value INTEGER,
                    coarse_value TEXT,
                    country_code TEXT,
                    conflict INTEGER NOT NULL,
                    received_at TEXT NOT NULL,
                    run_id INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX sightings_copy ON sightings (source, source_index, raw_sha256);
                CREATE INDEX sightings_postback ON sightings (postback_id);
                CREATE TABLE conflicts (
                    sighting_id INTEGER PRIMARY KEY REFERENCES sightings (id),
                    postback_id INTEGER NOT NULL REFERENCES postbacks (id),
                    stored_fine_value INTEGER,
                    stored_coarse_value TEXT,
                    stored_country_code TEXT,
                    copy_fine_value INTEGER,
                    copy_coarse_value TEXT,
                    copy_country_code TEXT
                );
                CREATE TABLE quarantine (
                    id INTEGER PRIMARY KEY,
                    verdict TEXT NOT NULL CHECK (verdict IN ('invalid', 'malformed', 'unsupported')),
                    field TEXT,
                    reason TEXT NOT NULL,
                    kind TEXT,
                    version TEXT,
                    ad_network_id TEXT,
                    transaction_id TEXT,
                    raw BLOB NOT NULL,
                    raw_size INTEGER NOT NULL,
                    raw_sha256 BLOB NOT NULL,
                    source TEXT NOT NULL,
                    source_index INTEGER NOT NULL,
                    source_line INTEGER NOT NULL,
                    received_at TEXT NOT NULL,
                    run_id INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX quarantine_copy ON quarantine (source, source_index, raw_sha256);
                """#
        ),
        Migration(
            "v2: conversion models and daily aggregates",
            sql: #"""
                CREATE TABLE conversion_models (
                    id INTEGER PRIMARY KEY,
                    app_id INTEGER NOT NULL,
                    model TEXT NOT NULL,
                    model_sha256 TEXT NOT NULL,
                    source TEXT NOT NULL,
                    added_at TEXT NOT NULL,
                    replaced_at TEXT
                );
                CREATE UNIQUE INDEX conversion_models_current ON conversion_models (app_id) WHERE replaced_at IS NULL;
                CREATE TABLE aggregate_runs (
                    id INTEGER PRIMARY KEY,
                    run_at TEXT NOT NULL,
                    first_day TEXT,
                    last_day TEXT,
                    days INTEGER NOT NULL,
                    postbacks INTEGER NOT NULL,
                    revenue_estimate TEXT NOT NULL,
                    models TEXT NOT NULL,
                    postbackd_version TEXT NOT NULL
                );
                CREATE TABLE aggregate_daily (
                    date TEXT, app_id INTEGER, ad_network_id TEXT, source_identifier TEXT, source_app_id INTEGER, source_domain TEXT, version TEXT, fidelity_type INTEGER, redownload INTEGER, did_win INTEGER, postback_sequence_index INTEGER, country_code TEXT,
                    postbacks INTEGER NOT NULL,
                    installs INTEGER NOT NULL,
                    redownloads INTEGER NOT NULL,
                    non_winning INTEGER NOT NULL,
                    test_mode INTEGER NOT NULL,
                    null_conversion_values INTEGER NOT NULL,
                    unmapped INTEGER NOT NULL,
                    unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_daily_date ON aggregate_daily (date);
                CREATE TABLE aggregate_daily_revenue (
                    date TEXT, app_id INTEGER, ad_network_id TEXT, source_identifier TEXT, source_app_id INTEGER, source_domain TEXT, version TEXT, fidelity_type INTEGER, redownload INTEGER, did_win INTEGER, postback_sequence_index INTEGER, country_code TEXT,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_daily_revenue_date ON aggregate_daily_revenue (date);
                CREATE TABLE aggregate_daily_events (
                    date TEXT, app_id INTEGER, ad_network_id TEXT, source_identifier TEXT, source_app_id INTEGER, source_domain TEXT, version TEXT, fidelity_type INTEGER, redownload INTEGER, did_win INTEGER, postback_sequence_index INTEGER, country_code TEXT,
                    event TEXT NOT NULL,
                    occurrences_min INTEGER NOT NULL,
                    occurrences_max INTEGER NOT NULL,
                    postbacks INTEGER NOT NULL
                );
                CREATE INDEX aggregate_daily_events_date ON aggregate_daily_events (date);
                CREATE TABLE aggregate_daily_event_revenue (
                    date TEXT, app_id INTEGER, ad_network_id TEXT, source_identifier TEXT, source_app_id INTEGER, source_domain TEXT, version TEXT, fidelity_type INTEGER, redownload INTEGER, did_win INTEGER, postback_sequence_index INTEGER, country_code TEXT,
                    event TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_daily_event_revenue_date ON aggregate_daily_event_revenue (date);
                CREATE TABLE aggregate_fine_values (
                    date TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    fine_value INTEGER,
                    postbacks INTEGER NOT NULL
                );
                CREATE INDEX aggregate_fine_values_date ON aggregate_fine_values (date);
                """#
        ),
        // Postbacks are found by their UTC day, never by a time within it. Keyed by the day, an
        // index entry is appended after its day's last one (equal keys go in row order), so
        // inserts touch a handful of pages however the received times are ordered; keyed by
        // the full time, each insert landed at a random place once the index outgrew the page
        // cache (a third of ingest's time at a million postbacks). A day's rows also come back
        // in row order, so aggregate reads the table front to back.
        Migration(
            "v3: postbacks indexed by UTC day received",
            sql: #"""
                DROP INDEX postbacks_received_at;
                CREATE INDEX postbacks_received_day ON postbacks (substr(received_at, 1, 10));
                """#
        ),
        // AdAttributionKit in the aggregates: the marketplace a postback's app came from, and
        // re-engagements and development-key postbacks counted apart. Rows written before
        // hold NULL and 0 until `aggregate` recomputes their days.
        Migration(
            "v4: marketplace, re-engagements and development postbacks in aggregates",
            sql: #"""
                ALTER TABLE aggregate_daily ADD COLUMN marketplace_id TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN marketplace_id TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN marketplace_id TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN marketplace_id TEXT;
                ALTER TABLE aggregate_daily ADD COLUMN reengagements INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily ADD COLUMN development INTEGER NOT NULL DEFAULT 0;
                """#
        ),
        // The dedup key's unique index over a 16-byte digest instead of five text columns
        // (``DedupKeyDigest``): a third of the size, so a million keys stay in the page cache.
        Migration(
            "v5: dedup key digest",
            functions: [DedupKeyDigest.sqlFunction],
            sql: #"""
                ALTER TABLE postbacks ADD COLUMN dedup_key BLOB;
                UPDATE postbacks SET dedup_key = postbackd_dedup_key(
                    kind, key_space, ad_network_id, transaction_id, postback_sequence_index);
                DROP INDEX postbacks_dedup_key;
                CREATE UNIQUE INDEX postbacks_dedup_digest ON postbacks (dedup_key);
                """#
        ),
        // `serve`: who sent an HTTP postback and the request's id; a repeated junk body adds to
        // its quarantine row's count instead of a row.
        Migration(
            "v6: HTTP client address, request id, quarantine repeats",
            sql: #"""
                ALTER TABLE postbacks ADD COLUMN client_address TEXT;
                ALTER TABLE postbacks ADD COLUMN request_id TEXT;
                ALTER TABLE sightings ADD COLUMN client_address TEXT;
                ALTER TABLE sightings ADD COLUMN request_id TEXT;
                ALTER TABLE quarantine ADD COLUMN client_address TEXT;
                ALTER TABLE quarantine ADD COLUMN request_id TEXT;
                ALTER TABLE quarantine ADD COLUMN received_count INTEGER NOT NULL DEFAULT 1;
                """#
        ),
        // Conversion values served to apps: each app's bundle identifier (the client snippet
        // names the app by it), and per device (SHA-256 of its identifier for vendor) the
        // events since its first call. Times in milliseconds since 1970.
        Migration(
            "v7: app bundle identifiers, conversion value devices",
            sql: #"""
                CREATE TABLE app_bundles (
                    app_id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL UNIQUE,
                    added_at TEXT NOT NULL
                );
                CREATE TABLE conversion_value_devices (
                    app_id INTEGER NOT NULL,
                    device BLOB NOT NULL,
                    first_call_ms INTEGER NOT NULL,
                    last_call_ms INTEGER NOT NULL,
                    last_request BLOB NOT NULL,
                    history TEXT NOT NULL,
                    PRIMARY KEY (app_id, device)
                ) WITHOUT ROWID;
                CREATE INDEX conversion_value_devices_first_call ON conversion_value_devices (first_call_ms);
                """#
        ),
        // `export --consumer`: where each consumer's last export ended (row ids on SQLite,
        // whose one writer commits them in order).
        Migration(
            "v8: export cursors",
            sql: #"""
                CREATE TABLE export_cursors (
                    consumer TEXT NOT NULL,
                    table_name TEXT NOT NULL,
                    position TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    PRIMARY KEY (consumer, table_name)
                );
                """#
        ),
        // `forward`: each postback's delivery to each destination, claimed under a lease.
        Migration(
            "v9: deliveries",
            sql: #"""
                CREATE TABLE deliveries (
                    destination TEXT NOT NULL,
                    postback_id INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    discovered_ms INTEGER NOT NULL,
                    next_attempt_ms INTEGER NOT NULL,
                    first_attempt_ms INTEGER,
                    last_attempt_ms INTEGER,
                    last_status INTEGER,
                    last_answer TEXT,
                    lease_until_ms INTEGER NOT NULL DEFAULT 0,
                    leased_by TEXT,
                    PRIMARY KEY (destination, postback_id)
                ) WITHOUT ROWID;
                CREATE INDEX deliveries_due ON deliveries (destination, next_attempt_ms) WHERE state = 'pending';
                CREATE INDEX deliveries_state ON deliveries (destination, state, attempts);
                """#
        ),
        Migration(
            "v10: Apple Ads tokens and attribution records",
            sql: #"""
                CREATE TABLE apple_ads_tokens (
                    id INTEGER PRIMARY KEY,
                    token_sha256 TEXT NOT NULL UNIQUE,
                    token TEXT,
                    app_id INTEGER NOT NULL,
                    obtained_ms INTEGER NOT NULL,
                    received_ms INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    not_found INTEGER NOT NULL DEFAULT 0,
                    due_ms INTEGER NOT NULL,
                    lease_until_ms INTEGER NOT NULL DEFAULT 0,
                    leased_by TEXT,
                    last_status TEXT,
                    last_attempt_ms INTEGER,
                    resolved_ms INTEGER
                );
                CREATE INDEX apple_ads_tokens_due ON apple_ads_tokens (due_ms) WHERE state = 'pending';
                CREATE INDEX apple_ads_tokens_state ON apple_ads_tokens (state);
                CREATE TABLE apple_ads_attributions (
                    token_id INTEGER PRIMARY KEY REFERENCES apple_ads_tokens (id),
                    app_id INTEGER NOT NULL,
                    date TEXT NOT NULL,
                    attribution INTEGER NOT NULL,
                    org_id INTEGER,
                    campaign_id INTEGER,
                    ad_group_id INTEGER,
                    keyword_id INTEGER,
                    ad_id INTEGER,
                    country_or_region TEXT,
                    conversion_type TEXT,
                    claim_type TEXT,
                    click_date TEXT,
                    impression_date TEXT,
                    supply_placement TEXT,
                    raw TEXT NOT NULL,
                    received_ms INTEGER NOT NULL
                );
                CREATE INDEX apple_ads_attributions_date ON apple_ads_attributions (date);
                """#
        ),
        // Section 9 of the spec: each postback's estimated install time and day, crowd-anonymity
        // tier and source identifier digits (filled in here for the rows stored before; stored
        // with each postback after); the campaign mappings; and those, with the campaign, ad
        // group and creative, as aggregate dimensions. Aggregate rows written before hold NULL
        // until `aggregate` recomputes their days (a report says so: `aggregate_runs.dimensions`).
        Migration(
            "v11: install dates, crowd-anonymity tiers, campaign mappings",
            sql: #"""
                ALTER TABLE postbacks ADD COLUMN estimated_install_at TEXT;
                ALTER TABLE postbacks ADD COLUMN install_date TEXT;
                ALTER TABLE postbacks ADD COLUMN crowd_anonymity_tier INTEGER;
                ALTER TABLE postbacks ADD COLUMN source_identifier_digits INTEGER;
                UPDATE postbacks SET
                    estimated_install_at = strftime('%Y-%m-%dT%H:%M:%fZ', received_at, '-' || (CASE WHEN (kind = 'aak' OR version IN ('4.0')) THEN CASE WHEN postback_sequence_index <= 0 THEN 84 WHEN postback_sequence_index = 1 THEN 252 ELSE 924 END ELSE 36 END) || ' hours'),
                    install_date = date(received_at, '-' || (CASE WHEN (kind = 'aak' OR version IN ('4.0')) THEN CASE WHEN postback_sequence_index <= 0 THEN 84 WHEN postback_sequence_index = 1 THEN 252 ELSE 924 END ELSE 36 END) || ' hours'),
                    crowd_anonymity_tier = CASE WHEN (kind = 'aak' OR version IN ('4.0')) AND postback_sequence_index = 0 AND did_win IS NOT FALSE THEN CASE WHEN fine_value IS NOT NULL THEN CASE WHEN source_app_id IS NOT NULL OR source_domain IS NOT NULL THEN 3 ELSE 2 END WHEN coarse_value IS NOT NULL THEN 1 ELSE 0 END END,
                    source_identifier_digits = length(source_identifier);
                ALTER TABLE aggregate_runs ADD COLUMN dimensions TEXT;
                ALTER TABLE aggregate_runs ADD COLUMN whole INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE campaign_mappings (
                    ad_network_id TEXT NOT NULL,
                    source_identifier TEXT NOT NULL,
                    valid_from TEXT,
                    valid_to TEXT,
                    campaign TEXT NOT NULL,
                    ad_group TEXT,
                    creative TEXT,
                    source TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    added_at TEXT NOT NULL
                );
                CREATE INDEX campaign_mappings_network ON campaign_mappings (ad_network_id, source_identifier);
                ALTER TABLE aggregate_daily ADD COLUMN install_date TEXT;
                ALTER TABLE aggregate_daily ADD COLUMN crowd_anonymity_tier INTEGER;
                ALTER TABLE aggregate_daily ADD COLUMN source_identifier_digits INTEGER;
                ALTER TABLE aggregate_daily ADD COLUMN campaign TEXT;
                ALTER TABLE aggregate_daily ADD COLUMN ad_group TEXT;
                ALTER TABLE aggregate_daily ADD COLUMN creative TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN install_date TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN crowd_anonymity_tier INTEGER;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN source_identifier_digits INTEGER;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN campaign TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN ad_group TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN creative TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN install_date TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN crowd_anonymity_tier INTEGER;
                ALTER TABLE aggregate_daily_events ADD COLUMN source_identifier_digits INTEGER;
                ALTER TABLE aggregate_daily_events ADD COLUMN campaign TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN ad_group TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN creative TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN install_date TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN crowd_anonymity_tier INTEGER;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN source_identifier_digits INTEGER;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN campaign TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN ad_group TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN creative TEXT;
                """#
        ),
        // The dashboard's tables. The intake, rather than scanning `quarantine` and `sightings`
        // (neither is indexed by day); the totals, the detailed rows summed over every
        // dimension but day, app, network, install date and tier, filled from the rows already
        // aggregated.
        Migration(
            "v12: the dashboard's tables",
            sql: #"""
                CREATE TABLE aggregate_daily_intake (
                    date TEXT NOT NULL PRIMARY KEY,
                    quarantined INTEGER NOT NULL,
                    duplicates INTEGER NOT NULL,
                    conflicts INTEGER NOT NULL
                );
                CREATE TABLE aggregate_daily_totals (
                    date TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    install_date TEXT,
                    crowd_anonymity_tier INTEGER,
                    postbacks INTEGER NOT NULL,
                installs INTEGER NOT NULL,
                redownloads INTEGER NOT NULL,
                reengagements INTEGER NOT NULL,
                non_winning INTEGER NOT NULL,
                test_mode INTEGER NOT NULL,
                development INTEGER NOT NULL,
                null_conversion_values INTEGER NOT NULL,
                unmapped INTEGER NOT NULL,
                unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_daily_totals_date ON aggregate_daily_totals (date);
                CREATE INDEX aggregate_daily_totals_install ON aggregate_daily_totals (install_date);
                CREATE TABLE aggregate_daily_totals_revenue (
                    date TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    install_date TEXT,
                    crowd_anonymity_tier INTEGER,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_daily_totals_revenue_date ON aggregate_daily_totals_revenue (date);
                CREATE INDEX aggregate_daily_totals_revenue_install ON aggregate_daily_totals_revenue (install_date);
                -- The fine-value histogram per day over every app and network (covering:
                -- the dashboard's histogram reads the index alone).
                CREATE TABLE aggregate_fine_value_totals (
                    date TEXT NOT NULL,
                    fine_value INTEGER,
                    postbacks INTEGER NOT NULL
                );
                CREATE INDEX aggregate_fine_value_totals_date ON aggregate_fine_value_totals (date, fine_value, postbacks);
                INSERT INTO aggregate_fine_value_totals (date, fine_value, postbacks)
                SELECT date, fine_value, SUM(postbacks) FROM aggregate_fine_values GROUP BY date, fine_value;
                INSERT INTO aggregate_daily_totals (date, app_id, ad_network_id, install_date, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled)
                SELECT date, app_id, ad_network_id, install_date, crowd_anonymity_tier, SUM(postbacks), SUM(installs), SUM(redownloads), SUM(reengagements), SUM(non_winning), SUM(test_mode), SUM(development), SUM(null_conversion_values), SUM(unmapped), SUM(unmodelled)
                FROM aggregate_daily GROUP BY date, app_id, ad_network_id, install_date, crowd_anonymity_tier;
                INSERT INTO aggregate_daily_totals_revenue (date, app_id, ad_network_id, install_date, crowd_anonymity_tier, currency, revenue_min, revenue_max, revenue_estimate)
                SELECT date, app_id, ad_network_id, install_date, crowd_anonymity_tier, currency, CAST(SUM(CAST(ROUND(revenue_min * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_max * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_estimate * 2000000) AS BIGINT)) AS DOUBLE PRECISION) / 2000000.0
                FROM aggregate_daily_revenue GROUP BY date, app_id, ad_network_id, install_date, crowd_anonymity_tier, currency;
                CREATE TABLE aggregate_dashboard_received_by_app (
                    date TEXT NOT NULL,
                app_id INTEGER NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    postbacks INTEGER NOT NULL,
                installs INTEGER NOT NULL,
                redownloads INTEGER NOT NULL,
                reengagements INTEGER NOT NULL,
                non_winning INTEGER NOT NULL,
                test_mode INTEGER NOT NULL,
                development INTEGER NOT NULL,
                null_conversion_values INTEGER NOT NULL,
                unmapped INTEGER NOT NULL,
                unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_dashboard_received_by_app_day ON aggregate_dashboard_received_by_app (date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled);
                CREATE TABLE aggregate_dashboard_received_by_app_revenue (
                    date TEXT NOT NULL,
                app_id INTEGER NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_dashboard_received_by_app_revenue_day ON aggregate_dashboard_received_by_app_revenue (
                    date, currency, revenue_min, revenue_max, revenue_estimate, app_id, ad_network_id, crowd_anonymity_tier);
                INSERT INTO aggregate_dashboard_received_by_app (date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled)
                SELECT date, app_id, ad_network_id, crowd_anonymity_tier, SUM(postbacks), SUM(installs), SUM(redownloads), SUM(reengagements), SUM(non_winning), SUM(test_mode), SUM(development), SUM(null_conversion_values), SUM(unmapped), SUM(unmodelled) FROM aggregate_daily_totals WHERE (NULL IS NULL OR date >= NULL) AND (NULL IS NULL OR date <= NULL) GROUP BY date, app_id, ad_network_id, crowd_anonymity_tier;
                INSERT INTO aggregate_dashboard_received_by_app_revenue (date, app_id, ad_network_id, crowd_anonymity_tier, currency, revenue_min, revenue_max, revenue_estimate)
                SELECT date, app_id, ad_network_id, crowd_anonymity_tier, currency, CAST(SUM(CAST(ROUND(revenue_min * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_max * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_estimate * 2000000) AS BIGINT)) AS DOUBLE PRECISION) / 2000000.0
                FROM aggregate_daily_totals_revenue WHERE (NULL IS NULL OR date >= NULL) AND (NULL IS NULL OR date <= NULL) GROUP BY date, app_id, ad_network_id, crowd_anonymity_tier, currency;
                CREATE TABLE aggregate_dashboard_received (
                    date TEXT NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    postbacks INTEGER NOT NULL,
                installs INTEGER NOT NULL,
                redownloads INTEGER NOT NULL,
                reengagements INTEGER NOT NULL,
                non_winning INTEGER NOT NULL,
                test_mode INTEGER NOT NULL,
                development INTEGER NOT NULL,
                null_conversion_values INTEGER NOT NULL,
                unmapped INTEGER NOT NULL,
                unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_dashboard_received_day ON aggregate_dashboard_received (date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled);
                CREATE TABLE aggregate_dashboard_received_revenue (
                    date TEXT NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_dashboard_received_revenue_day ON aggregate_dashboard_received_revenue (
                    date, currency, revenue_min, revenue_max, revenue_estimate, ad_network_id, crowd_anonymity_tier);
                INSERT INTO aggregate_dashboard_received (date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled)
                SELECT date, ad_network_id, crowd_anonymity_tier, SUM(postbacks), SUM(installs), SUM(redownloads), SUM(reengagements), SUM(non_winning), SUM(test_mode), SUM(development), SUM(null_conversion_values), SUM(unmapped), SUM(unmodelled) FROM aggregate_dashboard_received_by_app WHERE (NULL IS NULL OR date >= NULL) AND (NULL IS NULL OR date <= NULL) GROUP BY date, ad_network_id, crowd_anonymity_tier;
                INSERT INTO aggregate_dashboard_received_revenue (date, ad_network_id, crowd_anonymity_tier, currency, revenue_min, revenue_max, revenue_estimate)
                SELECT date, ad_network_id, crowd_anonymity_tier, currency, CAST(SUM(CAST(ROUND(revenue_min * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_max * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_estimate * 2000000) AS BIGINT)) AS DOUBLE PRECISION) / 2000000.0
                FROM aggregate_dashboard_received_by_app_revenue WHERE (NULL IS NULL OR date >= NULL) AND (NULL IS NULL OR date <= NULL) GROUP BY date, ad_network_id, crowd_anonymity_tier, currency;
                CREATE TABLE aggregate_dashboard_install_by_app (
                    install_date TEXT,
                app_id INTEGER NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    postbacks INTEGER NOT NULL,
                installs INTEGER NOT NULL,
                redownloads INTEGER NOT NULL,
                reengagements INTEGER NOT NULL,
                non_winning INTEGER NOT NULL,
                test_mode INTEGER NOT NULL,
                development INTEGER NOT NULL,
                null_conversion_values INTEGER NOT NULL,
                unmapped INTEGER NOT NULL,
                unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_dashboard_install_by_app_day ON aggregate_dashboard_install_by_app (install_date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled);
                CREATE TABLE aggregate_dashboard_install_by_app_revenue (
                    install_date TEXT,
                app_id INTEGER NOT NULL,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_dashboard_install_by_app_revenue_day ON aggregate_dashboard_install_by_app_revenue (
                    install_date, currency, revenue_min, revenue_max, revenue_estimate, app_id, ad_network_id, crowd_anonymity_tier);
                INSERT INTO aggregate_dashboard_install_by_app (install_date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled)
                SELECT install_date, app_id, ad_network_id, crowd_anonymity_tier, SUM(postbacks), SUM(installs), SUM(redownloads), SUM(reengagements), SUM(non_winning), SUM(test_mode), SUM(development), SUM(null_conversion_values), SUM(unmapped), SUM(unmodelled) FROM aggregate_daily_totals WHERE (install_date IS NULL OR (NULL IS NULL OR install_date >= NULL) AND (NULL IS NULL OR install_date <= NULL)) GROUP BY install_date, app_id, ad_network_id, crowd_anonymity_tier;
                INSERT INTO aggregate_dashboard_install_by_app_revenue (install_date, app_id, ad_network_id, crowd_anonymity_tier, currency, revenue_min, revenue_max, revenue_estimate)
                SELECT install_date, app_id, ad_network_id, crowd_anonymity_tier, currency, CAST(SUM(CAST(ROUND(revenue_min * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_max * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_estimate * 2000000) AS BIGINT)) AS DOUBLE PRECISION) / 2000000.0
                FROM aggregate_daily_totals_revenue WHERE (install_date IS NULL OR (NULL IS NULL OR install_date >= NULL) AND (NULL IS NULL OR install_date <= NULL)) GROUP BY install_date, app_id, ad_network_id, crowd_anonymity_tier, currency;
                CREATE TABLE aggregate_dashboard_install (
                    install_date TEXT,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    postbacks INTEGER NOT NULL,
                installs INTEGER NOT NULL,
                redownloads INTEGER NOT NULL,
                reengagements INTEGER NOT NULL,
                non_winning INTEGER NOT NULL,
                test_mode INTEGER NOT NULL,
                development INTEGER NOT NULL,
                null_conversion_values INTEGER NOT NULL,
                unmapped INTEGER NOT NULL,
                unmodelled INTEGER NOT NULL
                );
                CREATE INDEX aggregate_dashboard_install_day ON aggregate_dashboard_install (install_date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled);
                CREATE TABLE aggregate_dashboard_install_revenue (
                    install_date TEXT,
                ad_network_id TEXT NOT NULL,
                crowd_anonymity_tier INTEGER,
                    currency TEXT NOT NULL,
                    revenue_min REAL NOT NULL,
                    revenue_max REAL NOT NULL,
                    revenue_estimate REAL NOT NULL
                );
                CREATE INDEX aggregate_dashboard_install_revenue_day ON aggregate_dashboard_install_revenue (
                    install_date, currency, revenue_min, revenue_max, revenue_estimate, ad_network_id, crowd_anonymity_tier);
                INSERT INTO aggregate_dashboard_install (install_date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled)
                SELECT install_date, ad_network_id, crowd_anonymity_tier, SUM(postbacks), SUM(installs), SUM(redownloads), SUM(reengagements), SUM(non_winning), SUM(test_mode), SUM(development), SUM(null_conversion_values), SUM(unmapped), SUM(unmodelled) FROM aggregate_dashboard_install_by_app WHERE (install_date IS NULL OR (NULL IS NULL OR install_date >= NULL) AND (NULL IS NULL OR install_date <= NULL)) GROUP BY install_date, ad_network_id, crowd_anonymity_tier;
                INSERT INTO aggregate_dashboard_install_revenue (install_date, ad_network_id, crowd_anonymity_tier, currency, revenue_min, revenue_max, revenue_estimate)
                SELECT install_date, ad_network_id, crowd_anonymity_tier, currency, CAST(SUM(CAST(ROUND(revenue_min * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_max * 1000000) AS BIGINT)) AS DOUBLE PRECISION) / 1000000.0, CAST(SUM(CAST(ROUND(revenue_estimate * 2000000) AS BIGINT)) AS DOUBLE PRECISION) / 2000000.0
                FROM aggregate_dashboard_install_by_app_revenue WHERE (install_date IS NULL OR (NULL IS NULL OR install_date >= NULL) AND (NULL IS NULL OR install_date <= NULL)) GROUP BY install_date, ad_network_id, crowd_anonymity_tier, currency;
                """#
        ),
        // Models over time (issue 36): each app has a timeline of models per conversion type, each
        // in force from `effective_from` (NULL: from the beginning, as every current model was:
        // an upgraded store decodes as it did); a replaced model (`replaced_at`) is out of the
        // timeline. Aggregate counts the postbacks whose model changed within the span their value
        // could have been set in (`model_ambiguous`); the dashboard's covering indexes hold it too.
        Migration(
            "v13: model timelines, model_ambiguous",
            sql: #"""
                ALTER TABLE conversion_models ADD COLUMN conversion_type TEXT NOT NULL DEFAULT 'install';
                ALTER TABLE conversion_models ADD COLUMN effective_from TEXT;
                DROP INDEX conversion_models_current;
                CREATE UNIQUE INDEX conversion_models_timeline ON conversion_models (app_id, conversion_type, coalesce(effective_from, '')) WHERE replaced_at IS NULL;
                ALTER TABLE aggregate_daily ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install ADD COLUMN model_ambiguous INTEGER NOT NULL DEFAULT 0;
                DROP INDEX aggregate_dashboard_received_by_app_day;
                CREATE INDEX aggregate_dashboard_received_by_app_day ON aggregate_dashboard_received_by_app (date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous);
                DROP INDEX aggregate_dashboard_received_day;
                CREATE INDEX aggregate_dashboard_received_day ON aggregate_dashboard_received (date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous);
                DROP INDEX aggregate_dashboard_install_by_app_day;
                CREATE INDEX aggregate_dashboard_install_by_app_day ON aggregate_dashboard_install_by_app (install_date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous);
                DROP INDEX aggregate_dashboard_install_day;
                CREATE INDEX aggregate_dashboard_install_day ON aggregate_dashboard_install (install_date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous);
                """#
        ),
        // A copy under a stored postback's dedup key whose signed content differs (another
        // validly signed postback, which Apple never sends) is a conflict flagged as such; each
        // run counts them.
        Migration(
            "v14: conflicts of signed content",
            sql: #"""
                ALTER TABLE conflicts ADD COLUMN signed_differs INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE ingest_runs ADD COLUMN signed_conflicts INTEGER NOT NULL DEFAULT 0;
                """#
        ),
        // A model per conversion type and modeled null values (issue 36): the detailed rows are
        // kept per conversion type (NULL in rows aggregated before, which count as downloads'
        // until re-aggregated); every revenue row says whether it is re-engagements' and carries
        // the revenue modeled for the null values beside the observed; the counts say on which
        // basis the nulls were modeled. The dashboard's covering indexes hold the new columns.
        Migration(
            "v15: conversion types, modeled null values",
            sql: #"""
                ALTER TABLE aggregate_daily ADD COLUMN conversion_type TEXT;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN conversion_type TEXT;
                ALTER TABLE aggregate_daily_events ADD COLUMN conversion_type TEXT;
                ALTER TABLE aggregate_daily_event_revenue ADD COLUMN conversion_type TEXT;
                ALTER TABLE aggregate_daily ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install ADD COLUMN modeled_day INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install ADD COLUMN modeled_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install ADD COLUMN modeled_app_week INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install ADD COLUMN modeled_none INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_daily_totals_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_by_app_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_received_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_by_app_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_revenue ADD COLUMN reengagement INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_revenue ADD COLUMN modeled_min REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_revenue ADD COLUMN modeled_max REAL NOT NULL DEFAULT 0;
                ALTER TABLE aggregate_dashboard_install_revenue ADD COLUMN modeled_estimate REAL NOT NULL DEFAULT 0;
                DROP INDEX aggregate_dashboard_received_by_app_day;
                CREATE INDEX aggregate_dashboard_received_by_app_day ON aggregate_dashboard_received_by_app (date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous, modeled_day, modeled_week, modeled_app_week, modeled_none);
                DROP INDEX aggregate_dashboard_received_by_app_revenue_day;
                CREATE INDEX aggregate_dashboard_received_by_app_revenue_day ON aggregate_dashboard_received_by_app_revenue (date, currency, revenue_min, revenue_max, revenue_estimate, app_id, ad_network_id, crowd_anonymity_tier, reengagement, modeled_min, modeled_max, modeled_estimate);
                DROP INDEX aggregate_dashboard_received_day;
                CREATE INDEX aggregate_dashboard_received_day ON aggregate_dashboard_received (date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous, modeled_day, modeled_week, modeled_app_week, modeled_none);
                DROP INDEX aggregate_dashboard_received_revenue_day;
                CREATE INDEX aggregate_dashboard_received_revenue_day ON aggregate_dashboard_received_revenue (date, currency, revenue_min, revenue_max, revenue_estimate, ad_network_id, crowd_anonymity_tier, reengagement, modeled_min, modeled_max, modeled_estimate);
                DROP INDEX aggregate_dashboard_install_by_app_day;
                CREATE INDEX aggregate_dashboard_install_by_app_day ON aggregate_dashboard_install_by_app (install_date, app_id, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous, modeled_day, modeled_week, modeled_app_week, modeled_none);
                DROP INDEX aggregate_dashboard_install_by_app_revenue_day;
                CREATE INDEX aggregate_dashboard_install_by_app_revenue_day ON aggregate_dashboard_install_by_app_revenue (install_date, currency, revenue_min, revenue_max, revenue_estimate, app_id, ad_network_id, crowd_anonymity_tier, reengagement, modeled_min, modeled_max, modeled_estimate);
                DROP INDEX aggregate_dashboard_install_day;
                CREATE INDEX aggregate_dashboard_install_day ON aggregate_dashboard_install (install_date, ad_network_id, crowd_anonymity_tier, postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous, modeled_day, modeled_week, modeled_app_week, modeled_none);
                DROP INDEX aggregate_dashboard_install_revenue_day;
                CREATE INDEX aggregate_dashboard_install_revenue_day ON aggregate_dashboard_install_revenue (install_date, currency, revenue_min, revenue_max, revenue_estimate, ad_network_id, crowd_anonymity_tier, reengagement, modeled_min, modeled_max, modeled_estimate);
                """#
        ),
        // The null model's reference groups, stored per day (issue 36): a report of the detailed
        // rows computes their modeled revenue from them, instead of a run storing it in
        // `aggregate_daily_revenue` (rows written before keep theirs there; a run writes 0), and a
        // run over some days reads the days before from them.
        Migration(
            "v16: the null model's reference groups",
            sql: #"""
                CREATE TABLE aggregate_daily_references (
                    date TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    postback_sequence_index INTEGER NOT NULL,
                    reengagement INTEGER NOT NULL,
                    basis TEXT NOT NULL,
                    postbacks INTEGER NOT NULL,
                    currency TEXT,
                    revenue_min_micros INTEGER NOT NULL,
                    revenue_max_micros INTEGER NOT NULL
                );
                CREATE INDEX aggregate_daily_references_key ON aggregate_daily_references (date, app_id, ad_network_id, postback_sequence_index);
                """#
        ),
        // Apple Ads (issue 37): a token Apple answered `attribution: false` for is
        // `not_attributed`, not `organic` (a view-through or a campaign with age or gender
        // targeting also answers so).
        Migration(
            "v17: Apple Ads not_attributed",
            sql: #"""
                UPDATE apple_ads_tokens SET state = 'not_attributed' WHERE state = 'organic';
                """#
        ),
        // Apple Ads (issue 37): the install a token belongs to, as the app says (a new token
        // each time the user changes their tracking permission); the report counts installs.
        Migration(
            "v18: Apple Ads install ids",
            sql: #"""
                ALTER TABLE apple_ads_tokens ADD COLUMN install_id TEXT;
                """#
        ),
        // Spend and exchange rates (issue 37): a cost row is keyed by its day and dimensions, an
        // absent app as 0 and an absent campaign or country as '' (a key of NULLs would not be
        // unique); spend in micros, so that sums are exact.
        Migration(
            "v19: costs and exchange rates",
            sql: #"""
                CREATE TABLE costs (
                    date TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    campaign TEXT NOT NULL,
                    country_code TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    spend_micros INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    added_at TEXT NOT NULL,
                    PRIMARY KEY (date, ad_network_id, app_id, campaign, country_code)
                ) WITHOUT ROWID;
                CREATE TABLE exchange_rates (
                    date TEXT NOT NULL,
                    base TEXT NOT NULL,
                    quote TEXT NOT NULL,
                    rate REAL NOT NULL,
                    source TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    added_at TEXT NOT NULL,
                    PRIMARY KEY (base, quote, date)
                ) WITHOUT ROWID;
                """#
        ),
        // Many advertisers (issue 38): access keys, each opening a set of apps (NULL: every app)
        // to a set of scopes, only the SHA-256 of its secret stored (a revoked key stays, named,
        // for the record); the registered apps; settings kept in the store (the apps policy).
        Migration(
            "v20: access keys, apps",
            sql: #"""
                CREATE TABLE access_keys (
                    name TEXT PRIMARY KEY,
                    secret_sha256 TEXT NOT NULL UNIQUE,
                    session_sha256 TEXT NOT NULL,
                    apps TEXT,
                    scopes TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    last_used_at TEXT,
                    revoked_at TEXT
                );
                CREATE TABLE apps (
                    app_id INTEGER PRIMARY KEY,
                    name TEXT,
                    bundle_id TEXT,
                    added_at TEXT NOT NULL
                );
                CREATE TABLE settings (
                    name TEXT PRIMARY KEY,
                    value TEXT NOT NULL
                );
                """#
        ),
        // Retention (issue 39): the policy per kind of data, each kind's progress (the first
        // received day not yet examined); the dedup keys of pruned postbacks with when each was
        // first seen, so that a replay stays a duplicate; the intake counts of pruned quarantine
        // and sightings, which `aggregate` adds back; a record of each prune; the quarantine by
        // day received.
        Migration(
            "v21: retention, pruned keys",
            sql: #"""
                CREATE TABLE retention (
                    kind TEXT PRIMARY KEY,
                    days INTEGER,
                    set_at TEXT,
                    examined_before TEXT
                );
                CREATE TABLE pruned_keys (
                    dedup_key BLOB PRIMARY KEY,
                    kind TEXT NOT NULL,
                    first_seen TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    pruned_at TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE pruned_intake (
                    date TEXT PRIMARY KEY,
                    quarantined INTEGER NOT NULL DEFAULT 0,
                    duplicates INTEGER NOT NULL DEFAULT 0,
                    conflicts INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE prune_runs (
                    id INTEGER PRIMARY KEY,
                    started_at TEXT NOT NULL,
                    finished_at TEXT,
                    status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
                    dry_run INTEGER NOT NULL,
                    removed TEXT NOT NULL DEFAULT '{}'
                );
                CREATE INDEX quarantine_received_day ON quarantine (substr(received_at, 1, 10));
                """#
        ),
        // A store that grows for years (issue 39): the copies by day received, so that a day's
        // intake (`aggregate`) and `check --quick` read that day's sightings, not all of them.
        Migration(
            "v22: sightings by day received",
            sql: #"""
                CREATE INDEX sightings_received_day ON sightings (substr(received_at, 1, 10));
                """#
        ),
        // Pruned test-mode and development postbacks stay countable (issue 59): the columns
        // `aggregate` reads of each (no transaction id, no bytes), so that a day aggregated
        // again after a prune reports what it reported before.
        Migration(
            "v23: pruned postbacks' aggregated columns",
            sql: #"""
                CREATE TABLE pruned_postbacks (
                    app_id INTEGER NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    key_space TEXT NOT NULL,
                    version TEXT,
                    campaign_id INTEGER,
                    source_identifier TEXT,
                    source_app_id INTEGER,
                    source_domain TEXT,
                    fidelity_type INTEGER,
                    redownload INTEGER,
                    did_win INTEGER,
                    postback_sequence_index INTEGER NOT NULL,
                    country_code TEXT,
                    fine_value INTEGER,
                    coarse_value TEXT,
                    conversion_type TEXT,
                    marketplace_id TEXT,
                    install_date TEXT,
                    crowd_anonymity_tier INTEGER,
                    source_identifier_digits INTEGER,
                    received_at TEXT NOT NULL
                );
                CREATE INDEX pruned_postbacks_received_day ON pruned_postbacks (substr(received_at, 1, 10));
                """#
        ),
        // Channels (issue 60): the channel each postback, sighting and quarantined entry came by.
        // What `serve` received (source `http`) came from devices; everything else from a file.
        // A key of scope `forwards` opens the channels it names (NULL: every channel).
        Migration(
            "v24: channels",
            sql: #"""
                ALTER TABLE access_keys ADD COLUMN channels TEXT;
                ALTER TABLE postbacks ADD COLUMN channel TEXT NOT NULL DEFAULT 'file';
                ALTER TABLE sightings ADD COLUMN channel TEXT NOT NULL DEFAULT 'file';
                ALTER TABLE quarantine ADD COLUMN channel TEXT NOT NULL DEFAULT 'file';
                UPDATE postbacks SET channel = 'device' WHERE source = 'http';
                UPDATE sightings SET channel = 'device' WHERE source = 'http';
                UPDATE quarantine SET channel = 'device' WHERE source = 'http';
                """#
        ),
        // Reconciliation (issue 60). The copy's unsigned AdAttributionKit `ad-interaction-type` on
        // each sighting, so that `reconcile` compares all of a copy's unsigned values with its
        // forward's: a sighting of the stored bytes (no `raw` of its own) has the stored
        // postback's; an older sighting with bytes of its own stays unknown (NULL). And
        // `reconcile_daily`, which `aggregate` fills: each day's production postbacks (by the day
        // their stored row was received) classified and counted by network, app, kind, postback,
        // forwarding channel (NULL: none) and campaign (NULL: unmapped); unmatched postbacks are
        // counted as such, copy_only, forward_only or pending only when read. And the same
        // summed by day, network and app alone (`reconcile_daily_totals`), which the dashboard and
        // a reconciliation by those dimensions read: a fourth of the rows or fewer, kept in the
        // order of that key (no rowid), so that a sum by day and network reads them in order
        // without sorting them (32 ms for a year of 1 M, against 56 ms through an index of the day).
        Migration(
            "v25: reconciliation",
            sql: #"""
                ALTER TABLE sightings ADD COLUMN ad_interaction_type TEXT;
                UPDATE sightings SET ad_interaction_type =
                    (SELECT ad_interaction_type FROM postbacks WHERE postbacks.id = sightings.postback_id)
                WHERE raw IS NULL;
                CREATE TABLE reconcile_daily (
                    date TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    postback_sequence_index INTEGER NOT NULL,
                    channel TEXT,
                    campaign TEXT,
                    copies INTEGER NOT NULL,
                    forwarded_won INTEGER NOT NULL,
                    forwarded_nonwon INTEGER NOT NULL,
                    matched INTEGER NOT NULL,
                    matched_identical INTEGER NOT NULL,
                    fine_higher INTEGER NOT NULL,
                    fine_lower INTEGER NOT NULL,
                    coarse_higher INTEGER NOT NULL,
                    coarse_lower INTEGER NOT NULL,
                    value_dropped INTEGER NOT NULL,
                    value_added INTEGER NOT NULL,
                    country_differs INTEGER NOT NULL,
                    interaction_differs INTEGER NOT NULL,
                    unmatched_copies INTEGER NOT NULL,
                    unmatched_forwards INTEGER NOT NULL,
                    impossible INTEGER NOT NULL,
                    early INTEGER NOT NULL
                );
                CREATE INDEX reconcile_daily_date ON reconcile_daily (date, ad_network_id);
                CREATE TABLE reconcile_daily_totals (
                    date TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    copies INTEGER NOT NULL,
                    forwarded_won INTEGER NOT NULL,
                    forwarded_nonwon INTEGER NOT NULL,
                    matched INTEGER NOT NULL,
                    matched_identical INTEGER NOT NULL,
                    fine_higher INTEGER NOT NULL,
                    fine_lower INTEGER NOT NULL,
                    coarse_higher INTEGER NOT NULL,
                    coarse_lower INTEGER NOT NULL,
                    value_dropped INTEGER NOT NULL,
                    value_added INTEGER NOT NULL,
                    country_differs INTEGER NOT NULL,
                    interaction_differs INTEGER NOT NULL,
                    unmatched_copies INTEGER NOT NULL,
                    unmatched_forwards INTEGER NOT NULL,
                    impossible INTEGER NOT NULL,
                    early INTEGER NOT NULL,
                    PRIMARY KEY (date, ad_network_id, app_id)
                ) WITHOUT ROWID;
                """#
        ),
        // What networks claim (issue 61, `postbackd claims add`): installs, and re-downloads and
        // conversions where the network says, per day of its basis (`install` or `postback`),
        // network, app (0: none), campaign and country ('': none), as `costs` keys spend. The
        // basis is part of the key: a network's figures by install date and by postback date
        // for the same day are two facts, not one correcting the other.
        Migration(
            "v26: claims",
            sql: #"""
                CREATE TABLE claims (
                    date TEXT NOT NULL,
                    date_basis TEXT NOT NULL,
                    ad_network_id TEXT NOT NULL,
                    app_id INTEGER NOT NULL,
                    campaign TEXT NOT NULL,
                    country_code TEXT NOT NULL,
                    installs INTEGER NOT NULL,
                    redownloads INTEGER,
                    conversions INTEGER,
                    modeled INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    added_at TEXT NOT NULL,
                    PRIMARY KEY (date, date_basis, ad_network_id, app_id, campaign, country_code)
                ) WITHOUT ROWID;
                """#
        ),
        // A store whose size costs nothing (issue 62): the dedup keys in two levels instead of
        // one unique index on `postbacks`. A digest is random, so each commit's new keys landed
        // on most leaves of the one index: at 20 M postbacks every commit rewrote about 600 MB.
        // New keys now go to the small `dedup_recent`, claimed by the writer before it inserts
        // the postback (an insert trigger would make every insert keep a statement journal: 2.2×
        // the writer's time); settling moves them, one sixteenth of the key space at a time, into
        // `dedup_settled`, in key order. Triggers keep both levels with every delete and every
        // change of `postbacks.dedup_key` or `id`, and refuse a changed key either level holds.
        // `dedup_settled_filter` holds a filter of each range's settled keys, built by the writer.
        Migration(
            "v27: dedup keys in two levels",
            sql: #"""
                CREATE TABLE dedup_settled (
                    dedup_key BLOB PRIMARY KEY,
                    postback_id INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE dedup_recent (
                    dedup_key BLOB PRIMARY KEY,
                    postback_id INTEGER NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO dedup_settled (dedup_key, postback_id)
                    SELECT dedup_key, id FROM postbacks WHERE dedup_key IS NOT NULL ORDER BY dedup_key;
                DROP INDEX postbacks_dedup_digest;
                CREATE TABLE dedup_settled_filter (
                    key_range INTEGER PRIMARY KEY,
                    keys INTEGER NOT NULL,
                    built INTEGER NOT NULL,
                    bits BLOB NOT NULL
                );
                CREATE TRIGGER postbacks_dedup_delete AFTER DELETE ON postbacks
                WHEN OLD.dedup_key IS NOT NULL
                BEGIN
                    DELETE FROM dedup_recent WHERE dedup_key = OLD.dedup_key AND postback_id = OLD.id;
                    DELETE FROM dedup_settled WHERE dedup_key = OLD.dedup_key AND postback_id = OLD.id;
                END;
                CREATE TRIGGER postbacks_dedup_update AFTER UPDATE OF dedup_key, id ON postbacks
                BEGIN
                    DELETE FROM dedup_recent WHERE dedup_key = OLD.dedup_key AND postback_id = OLD.id;
                    DELETE FROM dedup_settled WHERE dedup_key = OLD.dedup_key AND postback_id = OLD.id;
                    SELECT RAISE(ABORT, 'UNIQUE constraint failed: postbacks.dedup_key')
                    WHERE EXISTS (SELECT 1 FROM dedup_settled WHERE dedup_key = NEW.dedup_key);
                    INSERT INTO dedup_recent (dedup_key, postback_id)
                        SELECT NEW.dedup_key, NEW.id WHERE NEW.dedup_key IS NOT NULL;
                END;
                """#
        ),
        // The writer's insert no longer builds a table for each row (issue 62). SQLite checks
        // `x IN (a, b, c)`, a list of three or more, through an ephemeral table it opens, fills and
        // closes on every insert: 1.5–2.5 µs of the SQLite writer's 7.4–8.5 µs a postback. The same
        // constraints as comparisons, by SQLite's documented edit of a table's SQL (ALTER TABLE,
        // "making other kinds of table schema changes"), which leaves the rows' format as it is:
        // every stored row meets the new text as it met the old. `postbacks` and `quarantine`
        // take a row for each postback; `ingest_runs`' status is written once a run. Nothing is
        // rebuilt, so the foreign keys stay on rather than being checked over the whole store.
        Migration(
            "v28: CHECK constraints without a list",
            editsSchemaText: true,
            foreignKeyChecks: .immediate,
            sql: #"""
                UPDATE sqlite_master SET sql = replace(
                    sql,
                    'key_space IN (''production'', ''test'', ''development'')',
                    '(key_space = ''production'' OR key_space = ''test'' OR key_space = ''development'')'
                ) WHERE type = 'table' AND name = 'postbacks';
                UPDATE sqlite_master SET sql = replace(
                    sql,
                    'verdict IN (''invalid'', ''malformed'', ''unsupported'')',
                    '(verdict = ''invalid'' OR verdict = ''malformed'' OR verdict = ''unsupported'')'
                ) WHERE type = 'table' AND name = 'quarantine';
                """#
        ),
    ]
}

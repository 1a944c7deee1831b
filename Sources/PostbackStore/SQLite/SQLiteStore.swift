import Foundation
import GRDB
import PostbackKit

/// The SQLite engine: one database file, opened in WAL mode so that several processes share it.
///
/// Ingest writes verified batches into one open transaction, many batches per commit. Dedup is
/// enforced by the database: the `postbacks_dedup_digest` unique index over a 128-bit digest of
/// the dedup key (``DedupKeyDigest``) and `INSERT … ON CONFLICT DO NOTHING`. Only a valid
/// postback ever reaches `postbacks`, so a forged copy can never claim a key before the genuine
/// one arrives.
///
/// Its own, beyond the statements written once for both engines: ingest's and `serve`'s writes
/// bind through SQLite's C API into cached statements (the ingest path's speed), as do
/// aggregate's reads and rows; claims rely on its one writer; an export cursor is a row id.
///
/// `Sendable`: its one connection (GRDB's `DatabaseQueue`) serializes every access, a
/// transaction of several holds it until it ends (``ConnectionTurn``), and what an ingest run
/// has not committed lives in its ``SQLiteIngestSession``, not here.
package final class SQLiteStore: StoreEngine {
    package let queue: DatabaseQueue
    package let location: StoreLocation
    package let devicePrune = PruneSchedule()
    /// Whose transaction the connection holds (``withSQL(_:_:retry:_:)``).
    let turn = ConnectionTurn()

    /// `serve`'s checkpoints, off the commit path.
    private let checkpointer: WALCheckpointer?

    /// Opens (creating and migrating) the database at `path`.
    package init(path: String, access: StoreAccess = .standard) throws(DatabaseOpenError) {
        self.queue =
            access == .readOnly
            ? try PostbackDatabase.openReadOnly(path)
            : try PostbackDatabase.open(path, allowingOpenTransactions: access == .ingest)
        self.location = .sqlite(path: path)
        guard access == .receive else {
            self.checkpointer = nil
            return
        }
        do {
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(WALCheckpointer.backstopPages)")
            }
            self.checkpointer = try WALCheckpointer(path: path)
        } catch {
            throw DatabaseOpenError(.cannotOpen, "cannot open a second connection to \(path): \(error)")
        }
    }

    /// Wraps a queue opened by ``PostbackDatabase/open(_:allowingOpenTransactions:)``.
    package init(queue: DatabaseQueue, path: String) {
        self.queue = queue
        self.location = .sqlite(path: path)
        self.checkpointer = nil
    }

    /// Stops the checkpointer; the connection closes with the queue.
    func close() {
        checkpointer?.stop()
    }

    /// Ingest's session: its writes go into one transaction on the store's connection, open
    /// across batches (the store was opened for ``StoreAccess/ingest``).
    package func withIngestSession<Result>(
        _ body: (any IngestSession) async throws -> Result
    ) async throws -> Result {
        try await lend(SQLiteIngestSession(queue: queue), to: body)
    }

    // MARK: - Received over HTTP

    package func receive(
        _ verified: VerifiedBatch,
        requests: [ReceivedRequest],
        runID: Int64
    ) throws -> [ReceiptOutcome] {
        let entries = verified.batch.entries
        let results = verified.results
        precondition(requests.count == entries.count, "one request per entry")
        // One transaction for the whole group, committed with `synchronous = FULL` (the store
        // was opened for `.receive`): durable when `write` returns.
        return try queue.write { db in
            let prunedKeys = try Self.prunedKeyGuard(db)
            var outcomes: [ReceiptOutcome] = []
            outcomes.reserveCapacity(entries.count)
            var counts = IngestSummary()
            for index in entries.indices {
                let entry = entries[index]
                let request = requests[index]
                let raw = verified.batch.bytes[entry.range]
                let digest = verified.rawDigests[index]
                /// - Parameter overBudget: quarantine even when the request may not (the budget
                ///   is spent): for a valid postback, which is always kept.
                func refuse(_ result: VerificationResult, overBudget: Bool = false) throws -> ReceiptOutcome {
                    guard request.mayQuarantine || overBudget else { return .dropped }
                    let size = quarantinedSize(entry, rawCount: raw.count)
                    let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
                    let count = try Int.fetchOne(
                        db,
                        sql: Self.upsertReceivedQuarantine,
                        arguments: [
                            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
                            result.identity.version, result.identity.adNetworkID, result.identity.transactionID,
                            Data(raw), size, Data(digest), ReceivedRequest.source, entry.location.index,
                            entry.location.line, request.receivedAt.iso8601, runID, request.clientAddress,
                            request.requestID,
                        ]
                    )
                    return .quarantined(newRow: count == 1)
                }
                let result = results[index]
                guard result.verdict == .valid, let postback = result.postback else {
                    outcomes.append(try refuse(result))
                    continue
                }
                let outcome = try Self.store(
                    db,
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: ReceivedRequest.source,
                    location: entry.location,
                    receivedAt: request.receivedAt,
                    receivedSource: .http,
                    runID: runID,
                    request: request,
                    prunedKeys: prunedKeys,
                    counts: &counts
                )
                switch outcome {
                case .stored: outcomes.append(.stored)
                case .duplicate(let comparison): outcomes.append(comparison.outcome)
                case .digestCollision(let storedID):
                    outcomes.append(try refuse(digestCollision(result, storedID: storedID), overBudget: true))
                }
            }
            return outcomes
        }
    }

    package func checkWritable() throws {
        // Takes the write lock and lets it go: fails when another process holds it past the
        // busy timeout, or the file or its folder is read-only.
        try queue.inDatabase { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(sql: "ROLLBACK")
        }
    }

    static func store(
        _ db: Database,
        _ postback: Postback,
        _ result: VerificationResult,
        raw: ArraySlice<UInt8>,
        digest: [UInt8],
        source: String,
        location: EntryLocation,
        receivedAt: UTCInstant,
        receivedSource: ReceivedTimeSource,
        runID: Int64,
        request: ReceivedRequest? = nil,
        prunedKeys: PrunedKeyGuard,
        counts: inout IngestSummary
    ) throws -> StoreOutcome {
        let columns = StoredColumns(postback)
        let keySpace = KeySpace(result)
        var insert = SQLiteBinder(
            try db.cachedStatement(
                sql: Self.insertPostbacks[request == nil ? 0 : 1][prunedKeys.covers(keySpace) ? 1 : 0]
            )
        )
        insert.bind(postback.kind.rawValue)
        insert.bind(keySpace.rawValue)
        insert.bind(columns.adNetworkID)
        insert.bind(columns.transactionID)
        insert.bind(columns.sequenceIndex)
        insert.bind(columns.signed.version)
        insert.bind(columns.signed.appID)
        insert.bind(columns.signed.campaignID)
        insert.bind(columns.signed.sourceIdentifier)
        insert.bind(columns.signed.sourceAppID)
        insert.bind(columns.signed.sourceDomain)
        insert.bind(columns.signed.fidelityType)
        insert.bind(columns.signed.didWin)
        insert.bind(columns.signed.redownload)
        insert.bind(columns.signed.conversionType)
        insert.bind(columns.signed.marketplaceID)
        insert.bind(columns.signed.impressionType)
        insert.bind(columns.adInteractionType)
        insert.bind(postback.conversionValue?.fine)
        insert.bind(postback.conversionValue?.coarse?.rawValue)
        insert.bind(postback.countryCode)
        insert.bind(result.testMode)
        insert.bind(result.development)
        insert.bind(result.keyName ?? "")
        receivedAt.withISO8601Bytes { insert.bindText($0) }
        insert.bind(receivedSource.rawValue)
        insert.bindBlob(raw)
        digest.withUnsafeBytes { insert.bindBlob($0) }
        insert.bind(source)
        insert.bind(location.index)
        insert.bind(location.line)
        insert.bind(runID)
        let inference = PostbackInference(postback, receivedAt: receivedAt)
        inference.estimatedInstallAt.withISO8601Bytes { bytes in
            insert.bindText(bytes)
            insert.bindText(UnsafeRawBufferPointer(rebasing: bytes[0..<10]))
        }
        insert.bind(inference.crowdAnonymityTier)
        insert.bind(inference.sourceIdentifierDigits)
        let dedupKey = DedupKeyDigest.digest(
            kind: postback.kind.rawValue,
            keySpace: keySpace.rawValue,
            adNetworkID: columns.adNetworkID,
            transactionID: columns.transactionID,
            sequenceIndex: Int64(columns.sequenceIndex)
        )
        dedupKey.withUnsafeBytes { insert.bindBlob($0) }
        if let request {
            insert.bind(request.clientAddress)
            insert.bind(request.requestID)
        }
        if try insert.step(db) == 1 {
            counts.countAccepted(result)
            return .stored
        }

        // The key is taken: this is a copy of a stored postback. Its row is read through
        // SQLite's C API (a re-read input is all copies; GRDB's `Row` boxed each value).
        let lookup = SQLiteRowReader(try db.cachedStatement(sql: Self.selectStored)) { binder in
            dedupKey.withUnsafeBytes { binder.bindBlob($0) }
        }
        guard try lookup.next(db) else {
            lookup.reset()
            // No row holds the key: `prune` removed its postback and kept the key.
            counts.countCopyOfPruned()
            try SQLiteSQL.execute(db, RetentionSQL.countCopyOfPruned(receivedAt: receivedAt))
            return .duplicate(.ofPruned)
        }
        let stored = StoredPostback(lookup, dedupKey: dedupKey)
        lookup.reset()
        // The digest is 128 bits of SHA-256: two keys sharing one is beyond reach, but if it ever
        // happened the postback is quarantined, not counted as a duplicate.
        guard
            stored.adNetworkID == columns.adNetworkID, stored.transactionID == columns.transactionID,
            stored.sequenceIndex == columns.sequenceIndex, stored.kind == postback.kind.rawValue,
            stored.keySpace == keySpace.rawValue
        else {
            return .digestCollision(storedID: stored.id)
        }
        let copyFine = postback.conversionValue?.fine
        let copyCoarse = postback.conversionValue?.coarse?.rawValue
        let comparison = CopyComparison(
            stored: (stored.fine, stored.coarse, stored.country, stored.signed),
            copy: (copyFine, copyCoarse, postback.countryCode, columns.signed)
        )
        counts.countCopy(comparison)
        let sameBytes = stored.rawDigest == digest
        // Re-reading the stored copy itself (same source, position and bytes) adds nothing.
        if sameBytes && stored.source == source && stored.sourceIndex == Int64(location.index) {
            return .duplicate(comparison)
        }
        let sighting = try db.cachedStatement(sql: request == nil ? Self.insertSighting : Self.insertReceivedSighting)
        var arguments: StatementArguments = [
            stored.id, source, location.index, location.line, Data(digest), sameBytes ? nil : Data(raw),
            copyFine, copyCoarse, postback.countryCode, comparison.isConflict, receivedAt.iso8601, runID,
        ]
        if let request { arguments += [request.clientAddress, request.requestID] }
        try sighting.execute(arguments: arguments)
        guard db.changesCount == 1, comparison.isConflict else { return .duplicate(comparison) }
        let record = try db.cachedStatement(sql: Self.insertConflict)
        try record.execute(arguments: [
            db.lastInsertedRowID, stored.id, stored.fine, stored.coarse, stored.country, copyFine, copyCoarse,
            postback.countryCode, comparison.signedDiffers,
        ])
        return .duplicate(comparison)
    }

    /// What ``store(_:_:_:raw:digest:source:location:receivedAt:receivedSource:runID:request:counts:)`` did.
    enum StoreOutcome {
        case stored
        /// A copy of a stored postback, and how it compares with it.
        case duplicate(CopyComparison)
        /// Another key's postback holds the same dedup digest.
        case digestCollision(storedID: Int64)
    }

    static func quarantine(
        _ db: Database,
        _ entry: RawEntry,
        _ result: VerificationResult,
        raw: ArraySlice<UInt8>,
        digest: [UInt8],
        source: String,
        receivedAt: UTCInstant,
        runID: Int64
    ) throws {
        let size = quarantinedSize(entry, rawCount: raw.count)
        let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
        let statement = try db.cachedStatement(sql: Self.insertQuarantine)
        try statement.execute(arguments: [
            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
            result.identity.version, result.identity.adNetworkID, result.identity.transactionID, Data(raw), size,
            Data(digest), source, entry.location.index, entry.location.line, receivedAt.iso8601, runID,
        ])
    }

    // MARK: - SQL

    /// `INSERT INTO postbacks`, each value bound in column order (the dedup key 37th), the
    /// HTTP request's client address and id after it when `received`. `unlessPruned`: nothing
    /// either when `pruned_keys` holds the key (a postback `prune` removed): for the rows
    /// ``PrunedKeyGuard`` covers.
    static func insertPostback(received: Bool, unlessPruned: Bool) -> String {
        let parameters = Array(repeating: "?", count: received ? 39 : 37).joined(separator: ", ")
        return """
            INSERT INTO postbacks (
                kind, key_space, ad_network_id, transaction_id, postback_sequence_index, version, app_id, campaign_id,
                source_identifier, source_app_id, source_domain, fidelity_type, did_win, redownload, conversion_type,
                marketplace_id, impression_type, ad_interaction_type, fine_value, coarse_value, country_code, test_mode,
                development, key_name, received_at, received_at_source, raw, raw_sha256, source, source_index,
                source_line, run_id, estimated_install_at, install_date, crowd_anonymity_tier, source_identifier_digits,
                dedup_key\(received ? ", client_address, request_id" : ""))
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

    static let insertSighting = """
        INSERT INTO sightings (
            postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value, country_code,
            conflict, received_at, run_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
        """

    /// ``insertSighting`` with the HTTP request's client address and id.
    static let insertReceivedSighting = insertSighting.replacingOccurrences(
        of: "received_at, run_id)\nVALUES (?,",
        with: "received_at, run_id, client_address, request_id)\nVALUES (?, ?, ?,"
    )

    static let insertConflict = """
        INSERT INTO conflicts (
            sighting_id, postback_id, stored_fine_value, stored_coarse_value, stored_country_code, copy_fine_value,
            copy_coarse_value, copy_country_code, signed_differs)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let insertQuarantine = """
        INSERT INTO quarantine (
            verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256, source,
            source_index, source_line, received_at, run_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
        """

    /// A refused HTTP body: one row per distinct body; a repeat adds to its `received_count`.
    /// Returns the row's count (1: the row is new).
    static let upsertReceivedQuarantine = """
        INSERT INTO quarantine (
            verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256, source,
            source_index, source_line, received_at, run_id, client_address, request_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (source, source_index, raw_sha256) DO UPDATE SET received_count = received_count + 1
        RETURNING received_count
        """
}

extension StoredPostback {
    /// The row ``SQLiteStore/selectStored`` is on (`dedupKey` is the one it looked up).
    init(_ row: SQLiteRowReader, dedupKey: [UInt8]) {
        self.init(
            id: row.int64(0) ?? 0,
            source: row.text(1) ?? "",
            sourceIndex: row.int64(2) ?? 0,
            rawDigest: row.blob(3) ?? [],
            fine: row.int64(4).map(Int.init),
            coarse: row.text(5),
            country: row.text(6),
            adNetworkID: row.text(7) ?? "",
            transactionID: row.text(8) ?? "",
            sequenceIndex: Int(row.int64(9) ?? 0),
            kind: row.text(10) ?? "",
            keySpace: row.text(11) ?? "",
            dedupKey: dedupKey,
            signed: SignedColumns(
                version: row.text(12),
                appID: row.int64(13) ?? 0,
                campaignID: row.int64(14),
                sourceIdentifier: row.text(15),
                sourceAppID: row.int64(16),
                sourceDomain: row.text(17),
                fidelityType: row.int64(18).map(Int.init),
                didWin: row.int64(19).map { $0 != 0 },
                redownload: row.int64(20).map { $0 != 0 },
                conversionType: row.text(21),
                marketplaceID: row.text(22),
                impressionType: row.text(23)
            )
        )
    }
}

/// Ingest's writes on SQLite: one write transaction on the store's connection, open across
/// batches and committed by ``commit()``. One task owns it.
final class SQLiteIngestSession: IngestSession {
    private let queue: DatabaseQueue
    /// What the open write transaction has written, counted when it commits.
    private var uncommitted = IngestSummary()
    /// Which inserts check `pruned_keys`, read when the open write transaction began.
    private var prunedKeys = PrunedKeyGuard()

    init(queue: DatabaseQueue) {
        self.queue = queue
    }

    /// Writes one verified batch, in input order, into the open write transaction, beginning
    /// one if none is open, and returns the entries it quarantined.
    ///
    /// Nothing is durable, and nothing is counted in the run's summary, until ``commit()``.
    /// A transaction holds many batches: each commit rewrites every index page the transaction
    /// touched, and the dedup key's pages are touched at random, so fewer, larger commits write
    /// far less (a commit per 256-postback batch spent more time in the kernel than in SQLite).
    /// Only the batch being written is held in memory; SQLite spills what its cache cannot hold.
    func write(_ verified: VerifiedBatch, context: BatchContext) throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        let now = UTCInstant.now()
        try queue.writeWithoutTransaction { db in
            if !db.isInsideTransaction {
                try db.beginTransaction(.immediate)
                uncommitted = IngestSummary()
                prunedKeys = try SQLiteStore.prunedKeyGuard(db)
            }
            // Indexed arrays rather than `verified.items`: the `Zip2Sequence` PostbackKit makes,
            // iterated in this module, copied every result through its value witness (a
            // profile of the ingest showed the extra retains and releases).
            let entries = verified.batch.entries
            let results = verified.results
            for index in entries.indices {
                let entry = entries[index]
                let result = results[index]
                uncommitted.read += 1
                let raw = verified.batch.bytes[entry.range]
                let digest = verified.rawDigests[index]
                let source = context.storedSource(entry.location.source)
                func refuse(_ result: VerificationResult, receivedAt: UTCInstant) throws {
                    try SQLiteStore.quarantine(
                        db,
                        entry,
                        result,
                        raw: raw,
                        digest: digest,
                        source: source,
                        receivedAt: receivedAt,
                        runID: context.runID
                    )
                    uncommitted.countQuarantined(result)
                    quarantined.append(QuarantinedEntry(location: entry.location, result: result))
                }
                guard result.verdict == .valid, let postback = result.postback else {
                    try refuse(result, receivedAt: context.rule.receivedTime(forwarderTimestamp: nil, now: now).0)
                    continue
                }
                let (receivedAt, receivedSource) = context.rule.receivedTime(
                    forwarderTimestamp: postback.forwarderTimestamp,
                    now: now
                )
                let outcome = try SQLiteStore.store(
                    db,
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: source,
                    location: entry.location,
                    receivedAt: receivedAt,
                    receivedSource: receivedSource,
                    runID: context.runID,
                    prunedKeys: prunedKeys,
                    counts: &uncommitted
                )
                if case .digestCollision(let storedID) = outcome {
                    try refuse(digestCollision(result, storedID: storedID), receivedAt: receivedAt)
                }
            }
        }
        return quarantined
    }

    func commit() throws -> IngestSummary {
        try queue.writeWithoutTransaction { db in
            guard db.isInsideTransaction else { return }
            try db.commit()
        }
        defer { uncommitted = IngestSummary() }
        return uncommitted
    }

    /// Rolls back the open write transaction, if any: after a failed write, so that the
    /// database holds only whole commits (a re-run writes the rest).
    func rollback() {
        try? queue.writeWithoutTransaction { db in
            if db.isInsideTransaction { try db.rollback() }
        }
        uncommitted = IngestSummary()
    }
}

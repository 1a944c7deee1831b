import Foundation
import PostbackKit
import PostgresNIO

/// What ingest has handed the PostgreSQL store and not yet committed.
struct PendingWrites {
    struct Candidate {
        var columns: StoredColumns
        var kind: String
        var keySpace: KeySpace
        var result: VerificationResult
        var fine: Int?
        var coarse: String?
        var country: String?
        var raw: ArraySlice<UInt8>
        var digest: [UInt8]
        var dedupKey: [UInt8]
        var source: String
        var location: EntryLocation
        var receivedAt: UTCInstant
        var receivedSource: ReceivedTimeSource
        var runID: Int64
    }

    struct Refused {
        var location: EntryLocation
        /// The whole entry's size, even when only a part of it was kept.
        var size: Int
        var result: VerificationResult
        var raw: ArraySlice<UInt8>
        var digest: [UInt8]
        var source: String
        var receivedAt: UTCInstant
        var runID: Int64
    }

    var read = 0
    var candidates: [Candidate] = []
    var refused: [Refused] = []

    var isEmpty: Bool { read == 0 }
}

extension PostgresStore {
    /// Keeps the batch for the next commit (sending it at once when many entries wait), and
    /// returns the entries it quarantines.
    ///
    /// Nothing reaches the server until a commit: a transaction is then one multi-row insert
    /// per table, whatever the number of batches, and can be retried whole.
    package func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        let now = UTCInstant.now()
        let entries = verified.batch.entries
        let results = verified.results
        for index in entries.indices {
            let entry = entries[index]
            let result = results[index]
            pending.read += 1
            let raw = verified.batch.bytes[entry.range]
            let digest = verified.rawDigests[index]
            let source = context.storedSource(entry.location.source)
            guard result.verdict == .valid, let postback = result.postback else {
                pending.refused.append(
                    PendingWrites.Refused(
                        location: entry.location,
                        size: quarantinedSize(entry, rawCount: raw.count),
                        result: result,
                        raw: raw,
                        digest: digest,
                        source: source,
                        receivedAt: context.rule.receivedTime(forwarderTimestamp: nil, now: now).0,
                        runID: context.runID
                    )
                )
                quarantined.append(QuarantinedEntry(location: entry.location, result: result))
                continue
            }
            let (receivedAt, receivedSource) = context.rule.receivedTime(
                forwarderTimestamp: postback.forwarderTimestamp,
                now: now
            )
            let columns = StoredColumns(postback)
            let keySpace = KeySpace(result)
            pending.candidates.append(
                PendingWrites.Candidate(
                    columns: columns,
                    kind: postback.kind.rawValue,
                    keySpace: keySpace,
                    result: result,
                    fine: postback.conversionValue?.fine,
                    coarse: postback.conversionValue?.coarse?.rawValue,
                    country: postback.countryCode,
                    raw: raw,
                    digest: digest,
                    dedupKey: DedupKeyDigest.digest(
                        kind: postback.kind.rawValue,
                        keySpace: keySpace.rawValue,
                        adNetworkID: columns.adNetworkID,
                        transactionID: columns.transactionID,
                        sequenceIndex: Int64(columns.sequenceIndex)
                    ),
                    source: source,
                    location: entry.location,
                    receivedAt: receivedAt,
                    receivedSource: receivedSource,
                    runID: context.runID
                )
            )
        }
        if pending.read >= Self.maximumPendingEntries {
            flushed.add(try await flush())
        }
        return quarantined
    }

    package func commit() async throws -> IngestSummary {
        var summary = flushed
        summary.add(try await flush())
        flushed = IngestSummary()
        return summary
    }

    package func rollback() async {
        pending = PendingWrites()
        flushed = IngestSummary()
    }

    /// Writes everything pending in one transaction and returns what it counted.
    private func flush() async throws -> IngestSummary {
        guard !pending.isEmpty else { return IngestSummary() }
        let writes = pending
        let counts = try await transaction("store postbacks") { connection in
            try await Self.write(writes, connection, logger: logger)
        }
        pending = PendingWrites()
        return counts
    }

    /// The transaction's statements: the new postbacks (first copy of each key, sorted by key
    /// so that concurrent writers take the unique index's locks in one order and cannot
    /// deadlock), the stored rows of every copy, the sightings and conflicts, the quarantine.
    private static func write(
        _ writes: PendingWrites,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> IngestSummary {
        var counts = IngestSummary()
        counts.read = writes.read

        // 1. The first copy of each key in input order claims it.
        var firstOfKey: [[UInt8]: Int] = [:]
        var claims: [Int] = []
        for (index, candidate) in writes.candidates.enumerated() where firstOfKey[candidate.dedupKey] == nil {
            firstOfKey[candidate.dedupKey] = index
            claims.append(index)
        }
        claims.sort { writes.candidates[$0].dedupKey.lexicographicallyPrecedes(writes.candidates[$1].dedupKey) }
        var inserted = Set<[UInt8]>()
        if !claims.isEmpty {
            let rows = try await connection.send(insertPostbacks(claims.map { writes.candidates[$0] }), logger: logger)
            for try await key in rows.decode(ByteBuffer.self) {
                inserted.insert(Array(key.readableBytesView))
            }
        }

        // 2. Every other copy is a duplicate of the stored postback with its key.
        var copies: [Int] = []
        for (index, candidate) in writes.candidates.enumerated() {
            if firstOfKey[candidate.dedupKey] == index && inserted.contains(candidate.dedupKey) {
                counts.countAccepted(candidate.result)
            } else {
                copies.append(index)
            }
        }
        var stored: [[UInt8]: StoredPostback] = [:]
        if !copies.isEmpty {
            var keys = PostgresArrayColumn(.bytea, capacity: copies.count)
            for key in Set(copies.map { writes.candidates[$0].dedupKey }) { keys.append(bytes: key) }
            var binds = PostgresBindings()
            binds.append(keys)
            let rows = try await connection.send(
                PostgresQuery(unsafeSQL: selectStored, binds: binds),
                logger: logger
            )
            for try await row in rows {
                let postback = try StoredPostback(row)
                stored[postback.dedupKey] = postback
            }
        }
        var refused = writes.refused
        var sightings = SightingColumns()
        for index in copies {
            let copy = writes.candidates[index]
            guard let original = stored[copy.dedupKey] else {
                // Unreachable: our insert of this key conflicted with a committed row, or waited
                // for the transaction holding it, which committed.
                throw PostgresStoreError(
                    store: "",
                    action: "store postbacks",
                    reason: "the stored postback a copy conflicted with is not visible"
                )
            }
            // The digest is 128 bits of SHA-256: two keys sharing one is beyond reach, but if it
            // ever happened the postback is quarantined, not counted as a duplicate.
            guard
                original.adNetworkID == copy.columns.adNetworkID, original.transactionID == copy.columns.transactionID,
                original.sequenceIndex == copy.columns.sequenceIndex, original.kind == copy.kind,
                original.keySpace == copy.keySpace.rawValue
            else {
                refused.append(
                    PendingWrites.Refused(
                        location: copy.location,
                        size: copy.raw.count,
                        result: digestCollision(copy.result, storedID: original.id),
                        raw: copy.raw,
                        digest: copy.digest,
                        source: copy.source,
                        receivedAt: copy.receivedAt,
                        runID: copy.runID
                    )
                )
                continue
            }
            counts.duplicates += 1
            let conflict = original.fine != copy.fine || original.coarse != copy.coarse || original.country != copy.country
            if conflict { counts.conflicts += 1 }
            let sameBytes = original.rawDigest == copy.digest
            // Re-reading the stored copy itself (same source, position and bytes) adds nothing.
            if sameBytes && original.source == copy.source && original.sourceIndex == Int64(copy.location.index) {
                continue
            }
            sightings.append(copy, postbackID: original.id, sameBytes: sameBytes, conflict: conflict)
        }
        if sightings.count > 0 {
            try await connection.send(sightings.insert, logger: logger)
        }

        // 3. Quarantine, each entry once per (source, position, bytes).
        if !refused.isEmpty {
            for entry in refused { counts.countQuarantined(entry.result) }
            try await connection.send(insertQuarantine(refused), logger: logger)
        }
        return counts
    }

    private static func insertPostbacks(_ rows: [PendingWrites.Candidate]) -> PostgresQuery {
        var columns = PostbackInsertColumns(capacity: rows.count)
        for row in rows { columns.append(row) }
        return columns.query
    }

    static let selectStored = """
        SELECT id, source, source_index, raw_sha256, fine_value, coarse_value, country_code,
            ad_network_id, transaction_id, postback_sequence_index, kind, key_space, dedup_key
        FROM postbacks WHERE dedup_key = ANY($1)
        """

    private static func insertQuarantine(_ rows: [PendingWrites.Refused]) -> PostgresQuery {
        var verdict = PostgresArrayColumn(.text, capacity: rows.count)
        var field = PostgresArrayColumn(.text, capacity: rows.count)
        var reason = PostgresArrayColumn(.text, capacity: rows.count)
        var kind = PostgresArrayColumn(.text, capacity: rows.count)
        var version = PostgresArrayColumn(.text, capacity: rows.count)
        var network = PostgresArrayColumn(.text, capacity: rows.count)
        var transaction = PostgresArrayColumn(.text, capacity: rows.count)
        var raw = PostgresArrayColumn(.bytea, capacity: rows.count * 64)
        var size = PostgresArrayColumn(.int8, capacity: rows.count)
        var digest = PostgresArrayColumn(.bytea, capacity: rows.count * 3)
        var source = PostgresArrayColumn(.text, capacity: rows.count)
        var sourceIndex = PostgresArrayColumn(.int8, capacity: rows.count)
        var sourceLine = PostgresArrayColumn(.int8, capacity: rows.count)
        var receivedAt = PostgresArrayColumn(.timestamptz, capacity: rows.count)
        var runID = PostgresArrayColumn(.int8, capacity: rows.count)
        for row in rows {
            let result = row.result
            verdict.append((result.verdict == .valid ? Verdict.malformed : result.verdict).rawValue)
            field.append(result.field)
            reason.append(result.reason ?? "not a postback")
            kind.append(result.kind?.rawValue)
            version.append(result.identity.version)
            network.append(result.identity.adNetworkID)
            transaction.append(result.identity.transactionID)
            raw.append(bytes: row.raw)
            size.append(row.size)
            digest.append(bytes: row.digest)
            source.append(row.source)
            sourceIndex.append(row.location.index)
            sourceLine.append(row.location.line)
            receivedAt.append(row.receivedAt)
            runID.append(row.runID)
        }
        return unnestInsert(
            """
            INSERT INTO quarantine (
                verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256,
                source, source_index, source_line, received_at, run_id)
            """,
            [
                verdict, field, reason, kind, version, network, transaction, raw, size, digest, source, sourceIndex,
                sourceLine, receivedAt, runID,
            ],
            suffix: "ON CONFLICT (source, source_index, raw_sha256) DO NOTHING"
        )
    }
}

/// `INSERT … SELECT * FROM unnest($1, $2, …) suffix`, each column one array parameter.
func unnestInsert(_ insert: String, _ columns: [PostgresArrayColumn], suffix: String = "") -> PostgresQuery {
    var binds = PostgresBindings(capacity: columns.count)
    for column in columns { binds.append(column) }
    let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
    return PostgresQuery(unsafeSQL: "\(insert) SELECT * FROM unnest(\(parameters)) \(suffix)", binds: binds)
}

/// The columns of new `postbacks` rows.
struct PostbackInsertColumns {
    var kind, keySpace, network, transaction: PostgresArrayColumn
    var sequenceIndex, version, appID, campaignID, sourceIdentifier, sourceAppID, sourceDomain: PostgresArrayColumn
    var fidelityType, didWin, redownload, conversionType, marketplaceID, impressionType: PostgresArrayColumn
    var adInteractionType, fine, coarse, country, testMode, development, keyName: PostgresArrayColumn
    var receivedAt, receivedSource, raw, rawDigest, source, sourceIndex, sourceLine, runID, dedupKey: PostgresArrayColumn

    init(capacity n: Int) {
        kind = PostgresArrayColumn(.text, capacity: n)
        keySpace = PostgresArrayColumn(.text, capacity: n)
        network = PostgresArrayColumn(.text, capacity: n)
        transaction = PostgresArrayColumn(.text, capacity: n * 3)
        sequenceIndex = PostgresArrayColumn(.int4, capacity: n)
        version = PostgresArrayColumn(.text, capacity: n)
        appID = PostgresArrayColumn(.int8, capacity: n)
        campaignID = PostgresArrayColumn(.int8, capacity: n)
        sourceIdentifier = PostgresArrayColumn(.text, capacity: n)
        sourceAppID = PostgresArrayColumn(.int8, capacity: n)
        sourceDomain = PostgresArrayColumn(.text, capacity: n)
        fidelityType = PostgresArrayColumn(.int4, capacity: n)
        didWin = PostgresArrayColumn(.bool, capacity: n)
        redownload = PostgresArrayColumn(.bool, capacity: n)
        conversionType = PostgresArrayColumn(.text, capacity: n)
        marketplaceID = PostgresArrayColumn(.text, capacity: n)
        impressionType = PostgresArrayColumn(.text, capacity: n)
        adInteractionType = PostgresArrayColumn(.text, capacity: n)
        fine = PostgresArrayColumn(.int4, capacity: n)
        coarse = PostgresArrayColumn(.text, capacity: n)
        country = PostgresArrayColumn(.text, capacity: n)
        testMode = PostgresArrayColumn(.bool, capacity: n)
        development = PostgresArrayColumn(.bool, capacity: n)
        keyName = PostgresArrayColumn(.text, capacity: n * 2)
        receivedAt = PostgresArrayColumn(.timestamptz, capacity: n)
        receivedSource = PostgresArrayColumn(.text, capacity: n)
        raw = PostgresArrayColumn(.bytea, capacity: n * 64)
        rawDigest = PostgresArrayColumn(.bytea, capacity: n * 3)
        source = PostgresArrayColumn(.text, capacity: n * 4)
        sourceIndex = PostgresArrayColumn(.int8, capacity: n)
        sourceLine = PostgresArrayColumn(.int8, capacity: n)
        runID = PostgresArrayColumn(.int8, capacity: n)
        dedupKey = PostgresArrayColumn(.bytea, capacity: n * 2)
    }

    mutating func append(_ row: PendingWrites.Candidate) {
        let columns = row.columns
        kind.append(row.kind)
        keySpace.append(row.keySpace.rawValue)
        network.append(columns.adNetworkID)
        transaction.append(columns.transactionID)
        sequenceIndex.append(columns.sequenceIndex)
        version.append(columns.version)
        appID.append(columns.appID)
        campaignID.append(columns.campaignID)
        sourceIdentifier.append(columns.sourceIdentifier)
        sourceAppID.append(columns.sourceAppID)
        sourceDomain.append(columns.sourceDomain)
        fidelityType.append(columns.fidelityType)
        didWin.append(columns.didWin)
        redownload.append(columns.redownload)
        conversionType.append(columns.conversionType)
        marketplaceID.append(columns.marketplaceID)
        impressionType.append(columns.impressionType)
        adInteractionType.append(columns.adInteractionType)
        fine.append(row.fine)
        coarse.append(row.coarse)
        country.append(row.country)
        testMode.append(row.result.testMode)
        development.append(row.result.development)
        keyName.append(row.result.keyName ?? "")
        receivedAt.append(row.receivedAt)
        receivedSource.append(row.receivedSource.rawValue)
        raw.append(bytes: row.raw)
        rawDigest.append(bytes: row.digest)
        source.append(row.source)
        sourceIndex.append(row.location.index)
        sourceLine.append(row.location.line)
        runID.append(row.runID)
        dedupKey.append(bytes: row.dedupKey)
    }

    var query: PostgresQuery {
        unnestInsert(
            """
            INSERT INTO postbacks (
                kind, key_space, ad_network_id, transaction_id, postback_sequence_index, version, app_id, campaign_id,
                source_identifier, source_app_id, source_domain, fidelity_type, did_win, redownload, conversion_type,
                marketplace_id, impression_type, ad_interaction_type, fine_value, coarse_value, country_code, test_mode,
                development, key_name, received_at, received_at_source, raw, raw_sha256, source, source_index,
                source_line, run_id, dedup_key)
            """,
            [
                kind, keySpace, network, transaction, sequenceIndex, version, appID, campaignID, sourceIdentifier,
                sourceAppID, sourceDomain, fidelityType, didWin, redownload, conversionType, marketplaceID,
                impressionType, adInteractionType, fine, coarse, country, testMode, development, keyName, receivedAt,
                receivedSource, raw, rawDigest, source, sourceIndex, sourceLine, runID, dedupKey,
            ],
            suffix: "ON CONFLICT (dedup_key) DO NOTHING RETURNING dedup_key"
        )
    }
}

/// The columns of new `sightings` rows, and the conflicts among them.
struct SightingColumns {
    var postbackID = PostgresArrayColumn(.int8)
    var source = PostgresArrayColumn(.text)
    var sourceIndex = PostgresArrayColumn(.int8)
    var sourceLine = PostgresArrayColumn(.int8)
    var rawDigest = PostgresArrayColumn(.bytea)
    var raw = PostgresArrayColumn(.bytea)
    var fine = PostgresArrayColumn(.int4)
    var coarse = PostgresArrayColumn(.text)
    var country = PostgresArrayColumn(.text)
    var conflict = PostgresArrayColumn(.bool)
    var receivedAt = PostgresArrayColumn(.timestamptz)
    var runID = PostgresArrayColumn(.int8)

    var count: Int { postbackID.count }

    mutating func append(_ copy: PendingWrites.Candidate, postbackID id: Int64, sameBytes: Bool, conflict isConflict: Bool) {
        postbackID.append(id)
        source.append(copy.source)
        sourceIndex.append(copy.location.index)
        sourceLine.append(copy.location.line)
        rawDigest.append(bytes: copy.digest)
        raw.append(bytes: sameBytes ? nil : copy.raw)
        fine.append(copy.fine)
        coarse.append(copy.coarse)
        country.append(copy.country)
        conflict.append(isConflict)
        receivedAt.append(copy.receivedAt)
        runID.append(copy.runID)
    }

    /// Inserts the sightings and, for each new one that conflicts, its `conflicts` row with the
    /// stored postback's values: one statement.
    var insert: PostgresQuery {
        let columns = [
            postbackID, source, sourceIndex, sourceLine, rawDigest, raw, fine, coarse, country, conflict, receivedAt,
            runID,
        ]
        var binds = PostgresBindings(capacity: columns.count)
        for column in columns { binds.append(column) }
        let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: """
                WITH new_sightings AS (
                    INSERT INTO sightings (
                        postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id)
                    SELECT * FROM unnest(\(parameters))
                    ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
                    RETURNING id, postback_id, conflict, fine_value, coarse_value, country_code)
                INSERT INTO conflicts (
                    sighting_id, postback_id, stored_fine_value, stored_coarse_value, stored_country_code,
                    copy_fine_value, copy_coarse_value, copy_country_code)
                SELECT s.id, s.postback_id, p.fine_value, p.coarse_value, p.country_code, s.fine_value,
                    s.coarse_value, s.country_code
                FROM new_sightings s JOIN postbacks p ON p.id = s.postback_id
                WHERE s.conflict
                """,
            binds: binds
        )
    }
}

/// A stored postback as a copy is compared with it.
struct StoredPostback {
    var id: Int64
    var source: String
    var sourceIndex: Int64
    var rawDigest: [UInt8]
    var fine: Int?
    var coarse: String?
    var country: String?
    var adNetworkID: String
    var transactionID: String
    var sequenceIndex: Int
    var kind: String
    var keySpace: String
    var dedupKey: [UInt8]

    init(_ row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        self.id = try cells[0].decode(Int64.self)
        self.source = try cells[1].decode(String.self)
        self.sourceIndex = try cells[2].decode(Int64.self)
        self.rawDigest = Array(try cells[3].decode(ByteBuffer.self).readableBytesView)
        self.fine = try cells[4].decode(Int32?.self).map(Int.init)
        self.coarse = try cells[5].decode(String?.self)
        self.country = try cells[6].decode(String?.self)
        self.adNetworkID = try cells[7].decode(String.self)
        self.transactionID = try cells[8].decode(String.self)
        self.sequenceIndex = Int(try cells[9].decode(Int32.self))
        self.kind = try cells[10].decode(String.self)
        self.keySpace = try cells[11].decode(String.self)
        self.dedupKey = Array(try cells[12].decode(ByteBuffer.self).readableBytesView)
    }
}

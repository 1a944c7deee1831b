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
        /// Received over HTTP: the request, and the entry's position in its group.
        var request: ReceivedRequest? = nil
        var entry = 0
        /// Section 9's inferences from the postback and `receivedAt`.
        var inference: PostbackInference
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
        /// Received over HTTP: the request, and the entry's position in its group.
        var request: ReceivedRequest? = nil
        var entry = 0
    }

    var read = 0
    var candidates: [Candidate] = []
    var refused: [Refused] = []

    var isEmpty: Bool { read == 0 }
}

/// Ingest and `serve`'s receipts on PostgreSQL, its own: a transaction's postbacks, sightings,
/// conflicts and quarantine as one multi-row array insert per table (`unnest`), retried whole.
extension PostgresStore {
    package func withIngestSession<Result>(
        _ body: (any IngestSession) async throws -> Result
    ) async throws -> Result {
        try await lend(PostgresIngestSession(store: self), to: body)
    }

    package func receive(
        _ verified: VerifiedBatch,
        requests: [ReceivedRequest],
        runID: Int64
    ) async throws -> [ReceiptOutcome] {
        let entries = verified.batch.entries
        let results = verified.results
        precondition(requests.count == entries.count, "one request per entry")
        var writes = PendingWrites()
        writes.read = entries.count
        for index in entries.indices {
            let entry = entries[index]
            let result = results[index]
            let request = requests[index]
            let raw = verified.batch.bytes[entry.range]
            let digest = verified.rawDigests[index]
            guard result.verdict == .valid, let postback = result.postback else {
                writes.refused.append(
                    PendingWrites.Refused(
                        location: entry.location,
                        size: quarantinedSize(entry, rawCount: raw.count),
                        result: result,
                        raw: raw,
                        digest: digest,
                        source: ReceivedRequest.source,
                        receivedAt: request.receivedAt,
                        runID: runID,
                        request: request,
                        entry: index
                    )
                )
                continue
            }
            writes.candidates.append(
                PendingWrites.Candidate(
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
                    entry: index
                )
            )
        }
        // A device waits for the answer: a broken-off transaction is retried briefly, then the
        // group is answered 503 and the devices retry later.
        var attempt = WriteAttempt()
        // Answered within the bound from the group's first arrival, even after waiting for the
        // commit before (one commit runs at a time).
        let deadline = Self.answerDeadline(arrivedAt: requests.map(\.receivedAt).min() ?? .now())
        return try await transaction(
            "store received postbacks",
            retryingFor: Self.receiveRetrySeconds,
            answerBy: deadline
        ) {
            connection in
            var outcomes = [ReceiptOutcome](repeating: .dropped, count: entries.count)
            _ = try await Self.write(writes, connection, logger: logger, outcomes: &outcomes, attempt: &attempt)
            return outcomes
        }
    }

    /// How long `receive` retries a transaction the server broke off.
    static let receiveRetrySeconds: Int64 = 5

    package func checkWritable() async throws {
        try await transaction("check that the database accepts writes", retryingFor: 0, answerBy: Self.answerDeadline())
        {
            connection -> Void in
            // A standby, or a database set read-only, refuses the lock a write would take.
            try await connection.send("LOCK TABLE postbacks IN ROW EXCLUSIVE MODE NOWAIT", logger: logger)
        }
    }

    /// The transaction's statements: the new postbacks (first copy of each key, sorted by key
    /// so that concurrent writers take the unique index's locks in one order and cannot
    /// deadlock), the stored rows of every copy, the sightings and conflicts, the quarantine.
    ///
    /// - Parameter attempt: kept across the attempts of one transaction: the server's ids of
    ///   the earlier attempts, one of whose COMMIT may have committed unanswered (the
    ///   connection broke): a retry that meets that attempt's rows counts them stored, not as
    ///   copies.
    static func write(
        _ writes: PendingWrites,
        _ connection: PostgresConnection,
        logger: Logger,
        outcomes: inout [ReceiptOutcome],
        attempt: inout WriteAttempt
    ) async throws -> IngestSummary {
        let earlierAttempts = attempt.transactionIDs
        var counts = IngestSummary()
        counts.read = writes.read
        /// A valid copy of a postback `prune` removed: a duplicate, on its day's intake.
        func countCopyOfPruned(_ copy: PendingWrites.Candidate) async throws {
            counts.countCopyOfPruned()
            if copy.request != nil { outcomes[copy.entry] = CopyComparison.ofPruned.outcome }
            try await connection.send(
                PostgresSQL.query(RetentionSQL.countCopyOfPruned(receivedAt: copy.receivedAt)),
                logger: logger
            )
        }

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
            for try await (key, transaction) in rows.decode((ByteBuffer, String).self) {
                inserted.insert(Array(key.readableBytesView))
                attempt.transactionIDs.insert(transaction)
            }
        }

        // 1b. A key `prune` kept (its postback removed) is taken: a row just inserted under it is
        // removed again, and every copy with it is a duplicate. Checked by a statement after the
        // insert, so with a snapshot that sees a prune that committed while the insert waited on
        // its row: one statement more a transaction (a read of `pruned_keys` by its key; the delete
        // only when it found one).
        let pruned = try await prunedKeys(among: inserted, connection, logger: logger)
        if !pruned.isEmpty {
            var taken = PostgresArrayColumn(.bytea, capacity: pruned.count)
            for key in pruned { taken.append(bytes: key) }
            var binds = PostgresBindings()
            binds.append(taken)
            try await connection.send(
                PostgresQuery(unsafeSQL: "DELETE FROM postbacks WHERE dedup_key = ANY($1)", binds: binds),
                logger: logger
            )
            inserted.subtract(pruned)
        }

        // 2. Every other copy is a duplicate of the stored postback with its key.
        var copies: [Int] = []
        for (index, candidate) in writes.candidates.enumerated() {
            if pruned.contains(candidate.dedupKey) {
                try await countCopyOfPruned(candidate)
                continue
            }
            if firstOfKey[candidate.dedupKey] == index && inserted.contains(candidate.dedupKey) {
                counts.countAccepted(candidate.result)
                if candidate.request != nil { outcomes[candidate.entry] = .stored }
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
        // A copy whose stored postback `prune` removed since the insert conflicted with it: its
        // key is in `pruned_keys` now (read by a statement of its own, so with a later snapshot).
        let prunedMeanwhile = try await prunedKeys(
            among: Set(copies.map { writes.candidates[$0].dedupKey }.filter { stored[$0] == nil }),
            connection,
            logger: logger
        )
        var refused = writes.refused
        var sightings = SightingColumns()
        for index in copies {
            let copy = writes.candidates[index]
            if prunedMeanwhile.contains(copy.dedupKey) {
                try await countCopyOfPruned(copy)
                continue
            }
            guard let original = stored[copy.dedupKey] else {
                // Unreachable: our insert of this key conflicted with a committed row, or waited
                // for the transaction holding it, which committed; and no prune removed it.
                throw PostgresStoreError(
                    store: "",
                    action: "store postbacks",
                    detail: "the stored postback a copy conflicted with is not visible"
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
                        runID: copy.runID,
                        // A valid postback is kept whatever the quarantine budget says.
                        request: copy.request.map { request in
                            var overBudget = request
                            overBudget.mayQuarantine = true
                            return overBudget
                        },
                        entry: copy.entry
                    )
                )
                continue
            }
            // Inserted by an earlier attempt of this transaction, whose COMMIT committed but
            // whose answer was lost with the connection (a failover, a restart): stored, not a
            // copy (an attempt inserts only the first entry of each key). The ids of attempts
            // that rolled back match no row.
            if let insertedBy = original.insertedBy, earlierAttempts.contains(insertedBy),
                firstOfKey[copy.dedupKey] == index
            {
                counts.countAccepted(copy.result)
                if copy.request != nil { outcomes[copy.entry] = .stored }
                continue
            }
            let comparison = CopyComparison(
                stored: (original.fine, original.coarse, original.country, original.signed),
                copy: (copy.fine, copy.coarse, copy.country, copy.columns.signed)
            )
            counts.countCopy(comparison)
            if copy.request != nil { outcomes[copy.entry] = comparison.outcome }
            let sameBytes = original.rawDigest == copy.digest
            // Re-reading the stored copy itself (same source, position and bytes) adds nothing.
            if sameBytes && original.source == copy.source && original.sourceIndex == Int64(copy.location.index) {
                continue
            }
            sightings.append(copy, postbackID: original.id, sameBytes: sameBytes, comparison: comparison)
        }
        if sightings.count > 0 {
            try await connection.send(sightings.insert, logger: logger)
        }

        // 3. Quarantine, each entry once per (source, position, bytes); an HTTP body once, its
        // repeats counted in `received_count`.
        let files = refused.filter { $0.request == nil }
        if !files.isEmpty {
            for entry in files { counts.countQuarantined(entry.result) }
            try await connection.send(insertQuarantine(files), logger: logger)
        }
        let received = refused.filter { $0.request != nil }
        if !received.isEmpty {
            try await quarantineReceived(received, connection, logger: logger, counts: &counts, outcomes: &outcomes)
        }
        return counts
    }

    /// Quarantines refused HTTP bodies (those whose request may), one row per distinct body,
    /// and records each one's outcome.
    private static func quarantineReceived(
        _ refused: [PendingWrites.Refused],
        _ connection: PostgresConnection,
        logger: Logger,
        counts: inout IngestSummary,
        outcomes: inout [ReceiptOutcome]
    ) async throws {
        // One row per body in the statement (PostgreSQL refuses to update a row twice in one),
        // with how many times the group holds it.
        var groups: [[UInt8]: (first: Int, copies: Int)] = [:]
        var order: [[UInt8]] = []
        for (index, entry) in refused.enumerated() {
            guard entry.request?.mayQuarantine == true else {
                outcomes[entry.entry] = .dropped
                continue
            }
            counts.countQuarantined(entry.result)
            if let group = groups[entry.digest] {
                groups[entry.digest] = (group.first, group.copies + 1)
                outcomes[entry.entry] = .quarantined(newRow: false)
            } else {
                groups[entry.digest] = (index, 1)
                order.append(entry.digest)
            }
        }
        let firsts = order.compactMap { groups[$0] }
        guard !firsts.isEmpty else { return }
        let rows = try await connection.send(
            insertQuarantine(firsts.map { refused[$0.first] }, copies: firsts.map(\.copies)),
            logger: logger
        )
        var newRows = Set<[UInt8]>()
        for try await (digest, isNew) in rows.decode((ByteBuffer, Bool).self) where isNew {
            newRows.insert(Array(digest.readableBytesView))
        }
        for group in firsts {
            let entry = refused[group.first]
            outcomes[entry.entry] = .quarantined(newRow: newRows.contains(entry.digest))
        }
    }

    /// Which of `keys` `pruned_keys` holds (none read when `keys` is empty).
    private static func prunedKeys(
        among keys: Set<[UInt8]>,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> Set<[UInt8]> {
        guard !keys.isEmpty else { return [] }
        var column = PostgresArrayColumn(.bytea, capacity: keys.count)
        for key in keys { column.append(bytes: key) }
        var binds = PostgresBindings()
        binds.append(column)
        let rows = try await connection.send(
            PostgresQuery(unsafeSQL: "SELECT dedup_key FROM pruned_keys WHERE dedup_key = ANY($1)", binds: binds),
            logger: logger
        )
        var held = Set<[UInt8]>()
        for try await key in rows.decode(ByteBuffer.self) { held.insert(Array(key.readableBytesView)) }
        return held
    }

    private static func insertPostbacks(_ rows: [PendingWrites.Candidate]) -> PostgresQuery {
        var columns = PostbackInsertColumns(capacity: rows.count)
        for row in rows { columns.append(row) }
        return columns.query
    }

    static let selectStored = """
        SELECT id, source, source_index, raw_sha256, fine_value, coarse_value, country_code,
            ad_network_id, transaction_id, postback_sequence_index, kind, key_space, dedup_key,
            \(SignedColumns.sqlColumns), xmin::text
        FROM postbacks WHERE dedup_key = ANY($1)
        """

    /// Inserts quarantine rows; with `copies` (HTTP bodies, one row each), a body already there
    /// adds its copies to `received_count`, and each row returns its digest and whether it is new.
    private static func insertQuarantine(_ rows: [PendingWrites.Refused], copies: [Int]? = nil) -> PostgresQuery {
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
        var clientAddress = PostgresArrayColumn(.text, capacity: rows.count)
        var requestID = PostgresArrayColumn(.text, capacity: rows.count * 2)
        var receivedCount = PostgresArrayColumn(.int8, capacity: rows.count)
        for (index, row) in rows.enumerated() {
            let result = row.result
            clientAddress.append(row.request?.clientAddress)
            requestID.append(row.request?.requestID)
            receivedCount.append(copies?[index] ?? 1)
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
                source, source_index, source_line, received_at, run_id, client_address, request_id, received_count)
            """,
            [
                verdict, field, reason, kind, version, network, transaction, raw, size, digest, source, sourceIndex,
                sourceLine, receivedAt, runID, clientAddress, requestID, receivedCount,
            ],
            suffix: copies == nil
                ? "ON CONFLICT (source, source_index, raw_sha256) DO NOTHING"
                : """
                ON CONFLICT (source, source_index, raw_sha256)
                DO UPDATE SET received_count = quarantine.received_count + EXCLUDED.received_count
                RETURNING raw_sha256, xmax = 0
                """
        )
    }
}

/// `INSERT … SELECT * FROM unnest($1, $2, …) suffix`, each column one array parameter;
/// `columnsSuffix` adds constant columns after the arrays' (`, 0, ''`).
func unnestInsert(
    _ insert: String,
    _ columns: [PostgresArrayColumn],
    columnsSuffix: String = "",
    suffix: String = ""
) -> PostgresQuery {
    var binds = PostgresBindings(capacity: columns.count)
    for column in columns { binds.append(column) }
    let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
    let select = columnsSuffix.isEmpty ? "SELECT *" : "SELECT u.*\(columnsSuffix)"
    return PostgresQuery(unsafeSQL: "\(insert) \(select) FROM unnest(\(parameters)) AS u \(suffix)", binds: binds)
}

extension PendingWrites.Candidate {
    init(
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
        entry: Int = 0
    ) {
        let columns = StoredColumns(postback)
        let keySpace = KeySpace(result)
        self.init(
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
            location: location,
            receivedAt: receivedAt,
            receivedSource: receivedSource,
            runID: runID,
            request: request,
            entry: entry,
            inference: PostbackInference(postback, receivedAt: receivedAt)
        )
    }
}

/// The columns of new `postbacks` rows.
struct PostbackInsertColumns {
    var kind, keySpace, network, transaction: PostgresArrayColumn
    var sequenceIndex, version, appID, campaignID, sourceIdentifier, sourceAppID, sourceDomain: PostgresArrayColumn
    var fidelityType, didWin, redownload, conversionType, marketplaceID, impressionType: PostgresArrayColumn
    var adInteractionType, fine, coarse, country, testMode, development, keyName: PostgresArrayColumn
    var receivedAt, receivedSource, raw, rawDigest, source, sourceIndex, sourceLine, runID,
        dedupKey: PostgresArrayColumn
    var clientAddress, requestID: PostgresArrayColumn
    var estimatedInstallAt, installDate, crowdAnonymityTier, sourceIdentifierDigits: PostgresArrayColumn

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
        clientAddress = PostgresArrayColumn(.text, capacity: n)
        requestID = PostgresArrayColumn(.text, capacity: n)
        estimatedInstallAt = PostgresArrayColumn(.timestamptz, capacity: n)
        installDate = PostgresArrayColumn(.date, capacity: n)
        crowdAnonymityTier = PostgresArrayColumn(.int4, capacity: n)
        sourceIdentifierDigits = PostgresArrayColumn(.int4, capacity: n)
    }

    mutating func append(_ row: PendingWrites.Candidate) {
        let columns = row.columns
        kind.append(row.kind)
        keySpace.append(row.keySpace.rawValue)
        network.append(columns.adNetworkID)
        transaction.append(columns.transactionID)
        sequenceIndex.append(columns.sequenceIndex)
        version.append(columns.signed.version)
        appID.append(columns.signed.appID)
        campaignID.append(columns.signed.campaignID)
        sourceIdentifier.append(columns.signed.sourceIdentifier)
        sourceAppID.append(columns.signed.sourceAppID)
        sourceDomain.append(columns.signed.sourceDomain)
        fidelityType.append(columns.signed.fidelityType)
        didWin.append(columns.signed.didWin)
        redownload.append(columns.signed.redownload)
        conversionType.append(columns.signed.conversionType)
        marketplaceID.append(columns.signed.marketplaceID)
        impressionType.append(columns.signed.impressionType)
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
        clientAddress.append(row.request?.clientAddress)
        requestID.append(row.request?.requestID)
        estimatedInstallAt.append(row.inference.estimatedInstallAt)
        installDate.append(row.inference.installDate)
        crowdAnonymityTier.append(row.inference.crowdAnonymityTier)
        sourceIdentifierDigits.append(row.inference.sourceIdentifierDigits)
    }

    var query: PostgresQuery {
        unnestInsert(
            """
            INSERT INTO postbacks (
                kind, key_space, ad_network_id, transaction_id, postback_sequence_index, version, app_id, campaign_id,
                source_identifier, source_app_id, source_domain, fidelity_type, did_win, redownload, conversion_type,
                marketplace_id, impression_type, ad_interaction_type, fine_value, coarse_value, country_code, test_mode,
                development, key_name, received_at, received_at_source, raw, raw_sha256, source, source_index,
                source_line, run_id, dedup_key, client_address, request_id, estimated_install_at, install_date,
                crowd_anonymity_tier, source_identifier_digits)
            """,
            [
                kind, keySpace, network, transaction, sequenceIndex, version, appID, campaignID, sourceIdentifier,
                sourceAppID, sourceDomain, fidelityType, didWin, redownload, conversionType, marketplaceID,
                impressionType, adInteractionType, fine, coarse, country, testMode, development, keyName, receivedAt,
                receivedSource, raw, rawDigest, source, sourceIndex, sourceLine, runID, dedupKey, clientAddress,
                requestID, estimatedInstallAt, installDate, crowdAnonymityTier, sourceIdentifierDigits,
            ],
            suffix: "ON CONFLICT (dedup_key) DO NOTHING RETURNING dedup_key, xmin::text"
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
    var clientAddress = PostgresArrayColumn(.text)
    var requestID = PostgresArrayColumn(.text)
    /// Not a column of `sightings`: the new `conflicts` row's `signed_differs`.
    var signedDiffers = PostgresArrayColumn(.bool)

    var count: Int { postbackID.count }

    mutating func append(
        _ copy: PendingWrites.Candidate,
        postbackID id: Int64,
        sameBytes: Bool,
        comparison: CopyComparison
    ) {
        postbackID.append(id)
        source.append(copy.source)
        sourceIndex.append(copy.location.index)
        sourceLine.append(copy.location.line)
        rawDigest.append(bytes: copy.digest)
        raw.append(bytes: sameBytes ? nil : copy.raw)
        fine.append(copy.fine)
        coarse.append(copy.coarse)
        country.append(copy.country)
        conflict.append(comparison.isConflict)
        receivedAt.append(copy.receivedAt)
        runID.append(copy.runID)
        clientAddress.append(copy.request?.clientAddress)
        requestID.append(copy.request?.requestID)
        signedDiffers.append(comparison.signedDiffers)
    }

    /// Inserts the sightings and, for each new one that conflicts, its `conflicts` row with the
    /// stored postback's values: one statement. `signed_differs` is no column of `sightings`, so
    /// it is found again in the input by the sighting's unique key (copies with one key have the
    /// same bytes, so the same flag).
    var insert: PostgresQuery {
        let columns = [
            postbackID, source, sourceIndex, sourceLine, rawDigest, raw, fine, coarse, country, conflict, receivedAt,
            runID, clientAddress, requestID, signedDiffers,
        ]
        var binds = PostgresBindings(capacity: columns.count)
        for column in columns { binds.append(column) }
        let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: """
                WITH copies AS (
                    SELECT * FROM unnest(\(parameters)) AS c (
                        postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id, signed_differs)),
                new_sightings AS (
                    INSERT INTO sightings (
                        postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id)
                    SELECT postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id
                    FROM copies
                    ON CONFLICT (source, source_index, raw_sha256) DO NOTHING
                    RETURNING id, postback_id, conflict, fine_value, coarse_value, country_code, source, source_index,
                        raw_sha256)
                INSERT INTO conflicts (
                    sighting_id, postback_id, stored_fine_value, stored_coarse_value, stored_country_code,
                    copy_fine_value, copy_coarse_value, copy_country_code, signed_differs)
                SELECT s.id, s.postback_id, p.fine_value, p.coarse_value, p.country_code, s.fine_value,
                    s.coarse_value, s.country_code, d.source IS NOT NULL
                FROM new_sightings s JOIN postbacks p ON p.id = s.postback_id
                LEFT JOIN (SELECT DISTINCT source, source_index, raw_sha256 FROM copies WHERE signed_differs) d
                    ON d.source = s.source AND d.source_index = s.source_index AND d.raw_sha256 = s.raw_sha256
                WHERE s.conflict
                """,
            binds: binds
        )
    }
}

extension StoredPostback {
    /// A row of ``PostgresStore/selectStored``.
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
        self.signed = SignedColumns(
            version: try cells[13].decode(String?.self),
            appID: try cells[14].decode(Int64.self),
            campaignID: try cells[15].decode(Int64?.self),
            sourceIdentifier: try cells[16].decode(String?.self),
            sourceAppID: try cells[17].decode(Int64?.self),
            sourceDomain: try cells[18].decode(String?.self),
            fidelityType: try cells[19].decode(Int32?.self).map(Int.init),
            didWin: try cells[20].decode(Bool?.self),
            redownload: try cells[21].decode(Bool?.self),
            conversionType: try cells[22].decode(String?.self),
            marketplaceID: try cells[23].decode(String?.self),
            impressionType: try cells[24].decode(String?.self)
        )
        self.insertedBy = try cells[25].decode(String.self)
    }
}

/// What one attempt of a transaction of ``PostgresStore/write(_:_:logger:outcomes:attempt:)``
/// leaves to the next.
struct WriteAttempt {
    /// The server's ids of the attempts' transactions (their rows' `xmin`) that inserted
    /// postbacks.
    var transactionIDs: Set<String> = []
}

/// Ingest's writes on PostgreSQL: batches kept until a commit (or until many entries wait),
/// then sent in one transaction retried whole. One task owns it.
final class PostgresIngestSession: IngestSession {
    private let store: PostgresStore
    /// What ingest has written and not yet committed.
    private var pending = PendingWrites()
    /// What was committed by flushes since the last ``commit()``.
    private var flushed = IngestSummary()

    init(store: PostgresStore) {
        self.store = store
    }

    /// Keeps the batch for the next commit (sending it at once when many entries wait), and
    /// returns the entries it quarantines.
    ///
    /// Nothing reaches the server until a commit: a transaction is then one multi-row insert
    /// per table, whatever the number of batches, and can be retried whole.
    func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
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
            pending.candidates.append(
                PendingWrites.Candidate(
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: source,
                    location: entry.location,
                    receivedAt: receivedAt,
                    receivedSource: receivedSource,
                    runID: context.runID
                )
            )
        }
        if pending.read >= PostgresStore.maximumPendingEntries {
            flushed.add(try await flush())
        }
        return quarantined
    }

    func commit() async throws -> IngestSummary {
        var summary = flushed
        summary.add(try await flush())
        flushed = IngestSummary()
        return summary
    }

    func rollback() async {
        pending = PendingWrites()
        flushed = IngestSummary()
    }

    /// Writes everything pending in one transaction and returns what it counted.
    private func flush() async throws -> IngestSummary {
        guard !pending.isEmpty else { return IngestSummary() }
        let writes = pending
        let logger = store.logger
        var attempt = WriteAttempt()
        let counts = try await store.transaction("store postbacks") { connection in
            var unused: [ReceiptOutcome] = []
            return try await PostgresStore.write(
                writes,
                connection,
                logger: logger,
                outcomes: &unused,
                attempt: &attempt
            )
        }
        pending = PendingWrites()
        return counts
    }
}

import Foundation
import GRDB
import PostbackKit

/// One verified postback stored, or compared with the stored postback of its key, through
/// SQLite's C API into cached statements (the ingest path's speed); one refused entry quarantined.
extension SQLiteStore {
    static func store(
        _ db: Database,
        _ item: IngestEntry,
        _ valid: (postback: Postback, receivedSource: ReceivedTimeSource, prepared: PreparedPostback),
        runID: Int64,
        request: ReceivedRequest? = nil,
        writer: inout SQLiteWriter,
        counts: inout IngestSummary,
        statements: inout StoreStatements
    ) throws -> StoreOutcome {
        let (postback, receivedSource, prepared) = valid
        let (result, raw, digest, source) = (item.result, item.raw, item.digest, item.source)
        let (location, receivedAt) = (item.entry.location, item.receivedAt)
        let (columns, keySpace, dedupKey) = (prepared.columns, prepared.keySpace, prepared.dedupKey)
        let flush: Bool
        switch try claim(db, dedupKey, keySpace, writer: &writer, statements: &statements) {
        case .copy(let stored):
            return try recordCopy(
                db,
                item,
                valid,
                of: stored,
                runID: runID,
                request: request,
                counts: &counts,
                statements: &statements
            )
        case .copyOfPruned:
            // `prune` removed its postback and kept the key.
            counts.countCopyOfPruned()
            try SQLiteSQL.execute(db, RetentionSQL.countCopyOfPruned(receivedAt: receivedAt))
            return .duplicate(.ofPruned)
        case .claimed(let flushDue):
            flush = flushDue
        }
        let statement = try statements.statement(request == nil ? .insert : .insertReceived, db)
        // The raw bytes, their digest, the dedup key and the two times are bound without SQLite
        // copying them (`SQLITE_STATIC`): they stay where they are until the step, inside these
        // closures, and every step binds every parameter again.
        _ = try raw.withUnsafeBytes { rawBytes in
            try digest.withUnsafeBytes { digestBytes in
                try dedupKey.withUnsafeBytes { keyBytes in
                    try prepared.receivedAtText.withBytes { receivedText in
                        try prepared.estimatedInstallText.withBytes { installText in
                            var insert = SQLiteBinder(statement)
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
                            insert.bindStatic(receivedText)
                            insert.bind(receivedSource.rawValue)
                            insert.bindBlobStatic(rawBytes)
                            insert.bindBlobStatic(digestBytes)
                            insert.bind(source)
                            insert.bind(location.index)
                            insert.bind(location.line)
                            insert.bind(runID)
                            insert.bindStatic(installText)
                            insert.bindStatic(UnsafeRawBufferPointer(rebasing: installText[0..<10]))
                            insert.bind(prepared.inference.crowdAnonymityTier)
                            insert.bind(prepared.inference.sourceIdentifierDigits)
                            insert.bindBlobStatic(keyBytes)
                            insert.bind(item.channel.name)
                            insert.bind(writer.nextID)
                            if let request {
                                insert.bind(request.clientAddress)
                                insert.bind(request.requestID)
                            }
                            return try insert.step(db)
                        }
                    }
                }
            }
        }
        writer.nextID += 1
        counts.countAccepted(result)
        if flush { try writer.recent.flush(db, statement: try statements.statement(.claimRecentKey, db)) }
        return .stored
    }

    /// What ``claim(_:_:_:writer:statements:)`` found of a key.
    private enum KeyClaim {
        /// A stored postback holds it.
        case copy(StoredPostback)
        /// `prune` removed the postback that held it, and kept the key.
        case copyOfPruned
        /// The key is the next postback's: claimed in the recent level, or waiting to be
        /// (``RecentKeys``), and true when the waiting keys are due to be written.
        case claimed(flushDue: Bool)
    }

    /// Claims `dedupKey` for the postback the writer stores next, unless a stored postback, or
    /// `pruned_keys`, holds it.
    ///
    /// Ingest's claims wait, to be written in key order (``RecentKeys``), once the recent level's
    /// filters are read (until then it claims as `serve` does: ``SQLiteWriter/claimsAtOnce``): a
    /// key that waits is looked up among this transaction's postbacks, and a key that a level may
    /// hold (their filters say) in the levels. `serve` claims a key that neither the settled
    /// level's filter (``DedupFilter``) nor `pruned_keys` may hold in the recent level at once,
    /// under the id its postback will take: the claim that finds the key taken is the look-up.
    /// It looks up any other key first.
    private static func claim(
        _ db: Database,
        _ dedupKey: [UInt8],
        _ keySpace: KeySpace,
        writer: inout SQLiteWriter,
        statements: inout StoreStatements
    ) throws -> KeyClaim {
        let maySettled = dedupKey.withUnsafeBytes(writer.filter.mayHold)
        let mayBePruned = writer.prunedKeys.covers(keySpace)
        if writer.sortsClaims, !writer.claimsAtOnce, let key = dedupKey.withUnsafeBytes(RecentKeys.Key.init) {
            let (waitingID, mayBeRecent) = writer.recent.find(key)
            if let id = waitingID {
                guard let stored = try lookUp(db, .selectStoredByID, dedupKey, id: id, statements: &statements) else {
                    throw DatabaseError(
                        resultCode: .SQLITE_CORRUPT,
                        message: "a dedup key claimed in this transaction has no postback"
                    )
                }
                return .copy(stored)
            }
            if let held = try holder(
                db,
                dedupKey,
                inLevels: maySettled || mayBeRecent,
                maySettled: maySettled,
                mayBePruned: mayBePruned,
                statements: &statements
            ) {
                return held
            }
            return .claimed(flushDue: writer.recent.claim(key, id: writer.nextID))
        }
        let lookFirst = maySettled || mayBePruned
        if try !lookFirst && claimRecent(db, dedupKey, id: writer.nextID, statements: &statements) {
            return .claimed(flushDue: false)
        }
        if let held = try holder(
            db,
            dedupKey,
            inLevels: true,
            maySettled: maySettled,
            mayBePruned: mayBePruned,
            statements: &statements
        ) {
            return held
        }
        guard try lookFirst && claimRecent(db, dedupKey, id: writer.nextID, statements: &statements) else {
            throw DatabaseError(
                resultCode: .SQLITE_CORRUPT,
                message: "dedup_recent holds a dedup key that no stored postback holds; run `postbackd check`"
            )
        }
        return .claimed(flushDue: false)
    }

    /// What holds `dedupKey` besides a claim: the stored postback, read from the levels when
    /// `inLevels` (the settled one too where its filter says `maySettled`), else `pruned_keys`'
    /// record of a pruned postback where `mayBePruned`; nil when neither holds it.
    private static func holder(
        _ db: Database,
        _ dedupKey: [UInt8],
        inLevels: Bool,
        maySettled: Bool,
        mayBePruned: Bool,
        statements: inout StoreStatements
    ) throws -> KeyClaim? {
        let levels: StoreStatements.Kind = maySettled ? .selectStored : .selectStoredRecent
        if inLevels, let stored = try lookUp(db, levels, dedupKey, statements: &statements) { return .copy(stored) }
        if try mayBePruned && isPruned(db, dedupKey, statements: &statements) { return .copyOfPruned }
        return nil
    }

    /// The stored postback of `dedupKey` through the statement of `kind` (by key, or by row id),
    /// read through SQLite's C API (a re-read input is all copies; GRDB's `Row` boxed each value).
    private static func lookUp(
        _ db: Database,
        _ kind: StoreStatements.Kind,
        _ dedupKey: [UInt8],
        id: Int64? = nil,
        statements: inout StoreStatements
    ) throws -> StoredPostback? {
        let lookup = SQLiteRowReader(try statements.statement(kind, db)) { binder in
            if let id { binder.bind(id) } else { dedupKey.withUnsafeBytes { binder.bindBlob($0) } }
        }
        defer { lookup.reset() }
        return try lookup.next(db) ? StoredPostback(lookup, dedupKey: dedupKey) : nil
    }

    /// Whether `pruned_keys` holds `dedupKey`.
    private static func isPruned(_ db: Database, _ dedupKey: [UInt8], statements: inout StoreStatements) throws -> Bool
    {
        let pruned = SQLiteRowReader(try statements.statement(.selectPrunedKey, db)) { binder in
            dedupKey.withUnsafeBytes { binder.bindBlob($0) }
        }
        defer { pruned.reset() }
        return try pruned.next(db)
    }

    /// Claims `dedupKey` in the recent level of dedup keys (``DedupLevels``) for the postback of
    /// row id `id`; false when the recent level holds it already.
    private static func claimRecent(
        _ db: Database,
        _ dedupKey: [UInt8],
        id: Int64,
        statements: inout StoreStatements
    ) throws -> Bool {
        var claim = SQLiteBinder(try statements.statement(.claimRecentKey, db))
        return try dedupKey.withUnsafeBytes { keyBytes in
            claim.bindBlobStatic(keyBytes)
            claim.bind(id)
            return try claim.step(db) == 1
        }
    }

    /// A copy of the `stored` postback of its key: counted, and recorded as a sighting (with a
    /// conflict when its values differ) unless it is the stored bytes at the stored position.
    private static func recordCopy(
        _ db: Database,
        _ item: IngestEntry,
        _ valid: (postback: Postback, receivedSource: ReceivedTimeSource, prepared: PreparedPostback),
        of stored: StoredPostback,
        runID: Int64,
        request: ReceivedRequest?,
        counts: inout IngestSummary,
        statements: inout StoreStatements
    ) throws -> StoreOutcome {
        let (postback, columns, keySpace) = (valid.postback, valid.prepared.columns, valid.prepared.keySpace)
        let (raw, digest, source, location) = (item.raw, item.digest, item.source, item.entry.location)
        let receivedAt = item.receivedAt
        let copyFine = postback.conversionValue?.fine
        let copyCoarse = postback.conversionValue?.coarse?.rawValue
        let comparison: CopyComparison
        let sameBytes: Bool
        switch stored.decide(
            copy: columns,
            kind: postback.kind.rawValue,
            keySpace: keySpace,
            values: (copyFine, copyCoarse, postback.countryCode),
            digest: digest,
            source: source,
            sourceIndex: location.index
        ) {
        case .digestCollision(let storedID):
            return .digestCollision(storedID: storedID)
        case .stored(let copy):
            counts.countCopy(copy)
            return .duplicate(copy)
        case .sighting(let copy, let same):
            counts.countCopy(copy)
            (comparison, sameBytes) = (copy, same)
        }
        let sighting = try statements.statement(request == nil ? .insertSighting : .insertReceivedSighting, db)
        var arguments: StatementArguments = [
            stored.id, source, location.index, location.line, Data(digest), sameBytes ? nil : Data(raw),
            copyFine, copyCoarse, postback.countryCode, comparison.isConflict, receivedAt.iso8601, runID,
            item.channel.name, columns.adInteractionType,
        ]
        if let request { arguments += [request.clientAddress, request.requestID] }
        try sighting.execute(arguments: arguments)
        guard db.changesCount == 1, comparison.isConflict else { return .duplicate(comparison) }
        let record = try statements.statement(.insertConflict, db)
        try record.execute(arguments: [
            db.lastInsertedRowID, stored.id, stored.fine, stored.coarse, stored.country, copyFine, copyCoarse,
            postback.countryCode, comparison.signedDiffers,
        ])
        return .duplicate(comparison)
    }

    /// What ``store(_:_:_:runID:request:writer:counts:statements:)`` did.
    enum StoreOutcome {
        case stored
        /// A copy of a stored postback, and how it compares with it.
        case duplicate(CopyComparison)
        /// Another key's postback holds the same dedup digest.
        case digestCollision(storedID: Int64)
    }

    static func quarantine(
        _ db: Database,
        _ item: IngestEntry,
        _ result: VerificationResult,
        runID: Int64,
        statements: inout StoreStatements
    ) throws {
        let (entry, raw, digest, source, receivedAt) = (item.entry, item.raw, item.digest, item.source, item.receivedAt)
        let size = quarantinedSize(entry, rawCount: raw.count)
        let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
        let statement = try statements.statement(.insertQuarantine, db)
        try statement.execute(arguments: [
            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
            result.identity.version, result.identity.adNetworkID, result.identity.transactionID, Data(raw), size,
            Data(digest), source, entry.location.index, entry.location.line, receivedAt.iso8601, runID,
            item.channel.name,
        ])
    }
}

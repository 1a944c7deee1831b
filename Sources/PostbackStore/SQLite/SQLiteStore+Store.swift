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
        prunedKeys: PrunedKeyGuard,
        counts: inout IngestSummary,
        statements: inout StoreStatements
    ) throws -> StoreOutcome {
        let (postback, receivedSource, prepared) = valid
        let (result, raw, digest, source) = (item.result, item.raw, item.digest, item.source)
        let (location, receivedAt) = (item.entry.location, item.receivedAt)
        let (columns, keySpace, dedupKey) = (prepared.columns, prepared.keySpace, prepared.dedupKey)
        let statement = try statements.insertPostback(
            db,
            received: request != nil,
            unlessPruned: prunedKeys.covers(keySpace)
        )
        // The raw bytes, their digest, the dedup key and the two times are bound without SQLite
        // copying them (`SQLITE_STATIC`): they stay where they are until the step, inside these
        // closures, and every step binds every parameter again.
        let changes = try raw.withUnsafeBytes { rawBytes in
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
        if changes == 1 {
            counts.countAccepted(result)
            return .stored
        }

        // The key is taken: this is a copy of a stored postback. Its row is read through
        // SQLite's C API (a re-read input is all copies; GRDB's `Row` boxed each value).
        let lookup = SQLiteRowReader(try statements.statement(.selectStored, db)) { binder in
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

    /// What ``store(_:_:_:runID:request:prunedKeys:counts:statements:)`` did.
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

/// The statements ``SQLiteStore/store(_:_:_:runID:request:prunedKeys:counts:statements:)`` and
/// ``SQLiteStore/quarantine(_:_:_:runID:statements:)`` step, taken from GRDB's cache once per
/// ingest session or `serve` group rather than once per postback: GRDB's cache is keyed by the
/// SQL text, which it hashes whole on every look-up (the insert's 1.3 KB: about 0.5 µs of the
/// writer's time a postback).
struct StoreStatements {
    enum Kind: Int, CaseIterable {
        case insert, insertUnlessPruned, insertReceived, insertReceivedUnlessPruned
        case selectStored, insertSighting, insertReceivedSighting, insertConflict, insertQuarantine

        var sql: String {
            switch self {
            case .insert: SQLiteStore.insertPostbacks[0][0]
            case .insertUnlessPruned: SQLiteStore.insertPostbacks[0][1]
            case .insertReceived: SQLiteStore.insertPostbacks[1][0]
            case .insertReceivedUnlessPruned: SQLiteStore.insertPostbacks[1][1]
            case .selectStored: SQLiteStore.selectStored
            case .insertSighting: SQLiteStore.insertSightings[0]
            case .insertReceivedSighting: SQLiteStore.insertSightings[1]
            case .insertConflict: SQLiteStore.insertConflict
            case .insertQuarantine: SQLiteStore.insertQuarantine
            }
        }
    }

    private var taken = [Statement?](repeating: nil, count: Kind.allCases.count)

    /// The statement of `kind` on `db`'s connection (every call of one value passes the same).
    mutating func statement(_ kind: Kind, _ db: Database) throws -> Statement {
        if let statement = taken[kind.rawValue] { return statement }
        let statement = try db.cachedStatement(sql: kind.sql)
        taken[kind.rawValue] = statement
        return statement
    }

    /// `INSERT INTO postbacks` of the kind `received` and `unlessPruned` ask for.
    mutating func insertPostback(_ db: Database, received: Bool, unlessPruned: Bool) throws -> Statement {
        let kind: Kind =
            switch (received, unlessPruned) {
            case (false, false): .insert
            case (false, true): .insertUnlessPruned
            case (true, false): .insertReceived
            case (true, true): .insertReceivedUnlessPruned
            }
        return try statement(kind, db)
    }
}

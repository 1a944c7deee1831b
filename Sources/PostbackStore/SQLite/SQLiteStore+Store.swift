import Foundation
import GRDB
import PostbackKit

/// One verified postback stored, or compared with the stored postback of its key, through
/// SQLite's C API into cached statements (the ingest path's speed); one refused entry quarantined.
extension SQLiteStore {
    static func store(
        _ db: Database,
        _ item: IngestEntry,
        _ valid: (postback: Postback, receivedSource: ReceivedTimeSource),
        runID: Int64,
        request: ReceivedRequest? = nil,
        prunedKeys: PrunedKeyGuard,
        counts: inout IngestSummary
    ) throws -> StoreOutcome {
        let (postback, receivedSource) = valid
        let (result, raw, digest, source) = (item.result, item.raw, item.digest, item.source)
        let (location, receivedAt) = (item.entry.location, item.receivedAt)
        let prepared = item.prepared ?? PreparedPostback(postback, result, receivedAt: item.receivedAt)
        let (columns, keySpace) = (prepared.columns, prepared.keySpace)
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
        let inference = prepared.inference
        inference.estimatedInstallAt.withISO8601Bytes { bytes in
            insert.bindText(bytes)
            insert.bindText(UnsafeRawBufferPointer(rebasing: bytes[0..<10]))
        }
        insert.bind(inference.crowdAnonymityTier)
        insert.bind(inference.sourceIdentifierDigits)
        let dedupKey = prepared.dedupKey
        dedupKey.withUnsafeBytes { insert.bindBlob($0) }
        insert.bind(item.channel.name)
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
        let sighting = try db.cachedStatement(sql: Self.insertSightings[request == nil ? 0 : 1])
        var arguments: StatementArguments = [
            stored.id, source, location.index, location.line, Data(digest), sameBytes ? nil : Data(raw),
            copyFine, copyCoarse, postback.countryCode, comparison.isConflict, receivedAt.iso8601, runID,
            item.channel.name, columns.adInteractionType,
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

    /// What ``store(_:_:_:runID:request:prunedKeys:counts:)`` did.
    enum StoreOutcome {
        case stored
        /// A copy of a stored postback, and how it compares with it.
        case duplicate(CopyComparison)
        /// Another key's postback holds the same dedup digest.
        case digestCollision(storedID: Int64)
    }

    static func quarantine(_ db: Database, _ item: IngestEntry, _ result: VerificationResult, runID: Int64) throws {
        let (entry, raw, digest, source, receivedAt) = (item.entry, item.raw, item.digest, item.source, item.receivedAt)
        let size = quarantinedSize(entry, rawCount: raw.count)
        let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
        let statement = try db.cachedStatement(sql: Self.insertQuarantine)
        try statement.execute(arguments: [
            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
            result.identity.version, result.identity.adNetworkID, result.identity.transactionID, Data(raw), size,
            Data(digest), source, entry.location.index, entry.location.line, receivedAt.iso8601, runID,
            item.channel.name,
        ])
    }
}

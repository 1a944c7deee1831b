import PostgresNIO

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
    var channel: PostgresArrayColumn

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
        channel = PostgresArrayColumn(.text, capacity: n)
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
        channel.append(row.channel.name)
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
                crowd_anonymity_tier, source_identifier_digits, channel)
            """,
            [
                kind, keySpace, network, transaction, sequenceIndex, version, appID, campaignID, sourceIdentifier,
                sourceAppID, sourceDomain, fidelityType, didWin, redownload, conversionType, marketplaceID,
                impressionType, adInteractionType, fine, coarse, country, testMode, development, keyName, receivedAt,
                receivedSource, raw, rawDigest, source, sourceIndex, sourceLine, runID, dedupKey, clientAddress,
                requestID, estimatedInstallAt, installDate, crowdAnonymityTier, sourceIdentifierDigits, channel,
            ],
            suffix: "ON CONFLICT (dedup_key) DO NOTHING RETURNING dedup_key, xmin::text"
        )
    }
}

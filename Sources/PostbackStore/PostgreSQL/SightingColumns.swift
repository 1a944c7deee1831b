import PostgresNIO

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
    var channel = PostgresArrayColumn(.text)
    var interaction = PostgresArrayColumn(.text)
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
        channel.append(copy.channel.name)
        interaction.append(copy.columns.adInteractionType)
        signedDiffers.append(comparison.signedDiffers)
    }

    /// Inserts the sightings and, for each new one that conflicts, its `conflicts` row with the
    /// stored postback's values: one statement. `signed_differs` is no column of `sightings`, so
    /// it is found again in the input by the sighting's unique key (copies with one key have the
    /// same bytes, so the same flag).
    var insert: PostgresQuery {
        let columns = [
            postbackID, source, sourceIndex, sourceLine, rawDigest, raw, fine, coarse, country, conflict, receivedAt,
            runID, clientAddress, requestID, channel, interaction, signedDiffers,
        ]
        var binds = PostgresBindings(capacity: columns.count)
        for column in columns { binds.append(column) }
        let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: """
                WITH copies AS (
                    SELECT * FROM unnest(\(parameters)) AS c (
                        postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id, channel,
                        ad_interaction_type, signed_differs)),
                new_sightings AS (
                    INSERT INTO sightings (
                        postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id, channel,
                        ad_interaction_type)
                    SELECT postback_id, source, source_index, source_line, raw_sha256, raw, fine_value, coarse_value,
                        country_code, conflict, received_at, run_id, client_address, request_id, channel,
                        ad_interaction_type
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

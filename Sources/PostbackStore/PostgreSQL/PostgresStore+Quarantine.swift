import Foundation
import PostbackKit
import PostgresNIO

extension PostgresStore {
    /// Inserts quarantine rows; with `copies` (HTTP bodies, one row each), a body already there
    /// adds its copies to `received_count`, and each row returns its digest and whether it is new.
    static func insertQuarantine(_ rows: [PendingWrites.Refused], copies: [Int]? = nil) -> PostgresQuery {
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
        var channel = PostgresArrayColumn(.text, capacity: rows.count)
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
            channel.append(row.channel.name)
        }
        return unnestInsert(
            """
            INSERT INTO quarantine (
                verdict, field, reason, kind, version, ad_network_id, transaction_id, raw, raw_size, raw_sha256,
                source, source_index, source_line, received_at, run_id, client_address, request_id, received_count,
                channel)
            """,
            [
                verdict, field, reason, kind, version, network, transaction, raw, size, digest, source, sourceIndex,
                sourceLine, receivedAt, runID, clientAddress, requestID, receivedCount, channel,
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

import PostbackKit

/// The stored production postbacks as a reconciliation counts them: classified and summed by
/// the statement, one row per group of postbacks that share every dimension and what the
/// campaign mappings need (the network's identifier and install date), so the server sends
/// groups, not postbacks (on PostgreSQL, decoding every postback here cost more than the rest
/// of `aggregate`'s count together). See docs/auditing.md for what each count means.
enum ReconciledPostbacks {
    /// Each production postback received from `from` to `to` (inclusive; nil: unbounded), with
    /// its first reading of the other kind of channel (sightings are numbered in reading order):
    /// the first forward of one stored from a device's copy, the first copy of one stored from
    /// a forward. Its columns: `received_day`, `ad_network_id`, `app_id`, `kind`, `seq`,
    /// `channel` (the forwarding channel), `identifier` and `install_date` (for networks in
    /// `mapped` only, else null), then the copy's and the forward's values and the signed facts
    /// the counts read.
    ///
    /// The first readings of the other kind are found for all the postbacks at once, a join the
    /// planner may hash, not looked up postback by postback: on PostgreSQL that correlated
    /// look-up was a third of the statement (100,000 postbacks: 300 ms against 232 ms on one
    /// core; docs/benchmarks/2026-11-28-reconcile.md).
    static func readings(_ request: ReconcileRequest, from: UTCDay?, to: UTCDay?, mapped: [String]) -> SQLQuery {
        // By the day received, as both engines index it (there is no index of `received_at` itself).
        func filters(_ alias: String) -> SQLQuery {
            var filters: [SQLQuery] = ["\(raw: alias).key_space = 'production'"]
            if let from { filters.append("\(ReconcileSQL.receivedDay(alias)) >= \(from)") }
            if let to { filters.append("\(ReconcileSQL.receivedDay(alias)) <= \(to)") }
            filters += ReconcileSQL.filters(request, prefix: alias + ".")
            return "\(list: filters, separator: " AND ")"
        }
        // The campaign mappings' key: the first four digits of the source identifier (before
        // 4.0, of the campaign id), and the install date; for the networks that have mappings.
        let isMapped: SQLQuery =
            mapped.isEmpty ? "1 = 0" : "p.ad_network_id IN (\(list: mapped.map { "\($0)" as SQLQuery }))"
        let device = "CASE WHEN p.channel = 'device' THEN"
        func side(_ column: String, copy: Bool) -> SQLQuery {
            copy
                ? SQLQuery(raw: "\(device) p.\(column) ELSE o.\(column) END")
                : SQLQuery(raw: "\(device) o.\(column) ELSE p.\(column) END")
        }
        let values = ["fine_value", "coarse_value", "country_code", "ad_interaction_type"]
        let copy = values.map { side($0, copy: true) }
        let forward = values.map { side($0, copy: false) }
        let select: [SQLQuery] =
            [
                "\(ReconcileSQL.receivedDay("p")) AS received_day", "p.ad_network_id", "p.app_id",
                "p.kind",
                "p.postback_sequence_index AS seq",
                "\(raw: device) o.channel ELSE p.channel END AS channel",
                "CASE WHEN \(isMapped) THEN substr(COALESCE(p.source_identifier, CAST(p.campaign_id AS TEXT)), 1, 4) END AS identifier",
                "CASE WHEN \(isMapped) THEN p.install_date END AS install_date",
                "CASE WHEN p.channel = 'device' OR o.channel IS NOT NULL THEN 1 ELSE 0 END AS has_copy",
                "CASE WHEN p.channel <> 'device' OR o.channel IS NOT NULL THEN 1 ELSE 0 END AS has_forward",
                // Before 3.0 every postback is the winner's.
                "CASE WHEN p.did_win IS NULL OR p.did_win THEN 1 ELSE 0 END AS won",
                "CASE WHEN p.version = '3.0' THEN 1 ELSE 0 END AS v3",
                "CASE WHEN p.source_app_id IS NOT NULL THEN 1 ELSE 0 END AS has_source_app",
                "p.received_at",
            ]
            + zip(copy, ["c_fine", "c_coarse", "c_country", "c_interaction"]).map { "\($0) AS \(raw: $1)" }
            + zip(forward, ["f_fine", "f_coarse", "f_country", "f_interaction"]).map { "\($0) AS \(raw: $1)" }
        return """
            SELECT \(list: select)
            FROM postbacks p
            LEFT JOIN (
                SELECT s.postback_id, min(s.id) AS id
                FROM sightings s JOIN postbacks q ON q.id = s.postback_id
                WHERE (CASE WHEN s.channel = 'device' THEN 1 ELSE 0 END)
                    <> (CASE WHEN q.channel = 'device' THEN 1 ELSE 0 END)
                    AND \(filters("q"))
                GROUP BY s.postback_id
            ) f ON f.postback_id = p.id
            LEFT JOIN sightings o ON o.id = f.id
            WHERE \(filters("p"))
            """
    }

    /// The last instant of year 9999: a cutoff later than any a store holds.
    static let latestInstant = UTCInstant(milliseconds: 253_402_300_799_999)

    /// The counts the statement sums, each beside the condition a postback of it meets (`early`
    /// is the mappings', counted per group). Unmatched winning postbacks first received before
    /// `cutoff` are missing their other side, later ones pending (nil: all missing).
    static func classes(cutoff: UTCInstant?) -> [(path: WritableKeyPath<ReconcileCounts, Int>, condition: SQLQuery)] {
        let matched: SQLQuery = "won = 1 AND has_copy = 1 AND has_forward = 1"
        let unmatched: SQLQuery = "won = 1 AND (has_copy = 0 OR has_forward = 0)"
        let before: SQLQuery = cutoff.map { "received_at < \($0)" } ?? "1 = 1"
        // Two readings' values the same, none and none included.
        func same(_ column: String, _ none: SQLQuery) -> SQLQuery {
            "COALESCE(c_\(raw: column), \(none)) = COALESCE(f_\(raw: column), \(none))"
        }
        let sameValues: SQLQuery =
            "\(same("fine", "-1")) AND \(same("coarse", "'~'")) AND \(same("country", "'~'"))"
        let sameInteraction: SQLQuery = "(kind <> 'aak' OR \(same("interaction", "'~'")))"
        func rank(_ column: String) -> SQLQuery {
            "(CASE \(raw: column) WHEN 'low' THEN 0 WHEN 'medium' THEN 1 WHEN 'high' THEN 2 END)"
        }
        // A shape Apple never sends (docs/auditing.md), in the postback or either reading: a
        // non-winning postback with a sequence index above 0, copied by a device, or of 3.0
        // with a source app or any value; a fine value on postback 1 or 2, or with a coarse one.
        let impossible: SQLQuery = """
            (won = 0 AND (seq > 0 OR has_copy = 1 OR (v3 = 1 AND (has_source_app = 1
                OR c_fine IS NOT NULL OR c_coarse IS NOT NULL OR f_fine IS NOT NULL OR f_coarse IS NOT NULL))))
            OR (c_fine IS NOT NULL AND (seq > 0 OR c_coarse IS NOT NULL))
            OR (f_fine IS NOT NULL AND (seq > 0 OR f_coarse IS NOT NULL))
            """
        return [
            (\.copies, "has_copy = 1"), (\.forwardedWon, "has_forward = 1 AND won = 1"),
            (\.forwardedNonwon, "has_forward = 1 AND won = 0"), (\.matched, matched),
            (\.matchedIdentical, "\(matched) AND \(sameValues) AND \(sameInteraction)"),
            (\.fineHigher, "\(matched) AND f_fine > c_fine"), (\.fineLower, "\(matched) AND f_fine < c_fine"),
            (\.coarseHigher, "\(matched) AND \(rank("f_coarse")) > \(rank("c_coarse"))"),
            (\.coarseLower, "\(matched) AND \(rank("f_coarse")) < \(rank("c_coarse"))"),
            (
                \.valueDropped,
                "\(matched) AND ((c_fine IS NOT NULL AND f_fine IS NULL) OR (c_coarse IS NOT NULL AND f_coarse IS NULL))"
            ),
            (
                \.valueAdded,
                "\(matched) AND ((c_fine IS NULL AND f_fine IS NOT NULL) OR (c_coarse IS NULL AND f_coarse IS NOT NULL))"
            ),
            (\.countryDiffers, "\(matched) AND NOT \(same("country", "'~'"))"),
            (\.interactionDiffers, "\(matched) AND NOT \(sameInteraction)"),
            (\.impossible, impossible),
            (\.copyOnly, "\(unmatched) AND has_forward = 0 AND \(before)"),
            (\.forwardOnly, "\(unmatched) AND has_copy = 0 AND \(before)"),
            (\.pending, "\(unmatched) AND NOT (\(before))"),
        ]
    }

    /// ``readings(_:from:to:mapped:)`` summed by its first eight columns: the number of
    /// postbacks, then the rows meeting each of `conditions` (``classes(cutoff:)``'s), in order.
    ///
    /// The readings are kept a subquery of their own (an offset of 0, which neither engine
    /// flattens into the sums), so each reading's `CASE` is worked out once a postback rather
    /// than once for every condition that names it: 100,000 postbacks in 205 ms against 245 ms
    /// on PostgreSQL, 0.34 s against 0.37 s on SQLite.
    static func summed(
        _ request: ReconcileRequest,
        from: UTCDay?,
        to: UTCDay?,
        mapped: [String],
        conditions: [SQLQuery]
    ) -> SQLQuery {
        """
        SELECT received_day, ad_network_id, app_id, kind, seq, channel, identifier, install_date,
            COUNT(*), \(list: conditions.map(SQLQuery.counted))
        FROM (\(readings(request, from: from, to: to, mapped: mapped))\(sqlite: " LIMIT -1 OFFSET 0", postgres: " OFFSET 0")) r
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
        """
    }

    /// A group of ``summed(_:from:to:mapped:conditions:)``: its key by the request's dimensions
    /// (the campaign looked up in `mappings`), and its counts (`paths`, the conditions' counts).
    static func group(
        _ row: SQLRow,
        _ dimensions: [ReconcileDimension],
        paths: [WritableKeyPath<ReconcileCounts, Int>],
        mappings: CampaignMappings
    ) throws -> (ReconcileKey, ReconcileCounts) {
        let day = try row.day(0)
        let network = try row.string(1)
        let sequenceIndex = try row.int(4)
        let identifier = try row.optionalString(6)
        var key = ReconcileKey()
        for dimension in dimensions {
            switch dimension {
            case .date: key.date = day
            case .adNetworkID: key.adNetworkID = network
            case .appID: key.appID = try row.int64(2)
            case .kind: key.kind = try row.string(3)
            case .postbackSequenceIndex: key.sequenceIndex = sequenceIndex
            case .channel: key.channel = try row.optionalString(5)
            case .campaign:
                // As reports map it: the mapping in force on the install date.
                key.campaign = try row.optionalDay(7).flatMap {
                    mappings.lookup(network: network, identifier: identifier, installDate: $0)
                }.map { mappings.rows[$0].campaign }
            }
        }
        var counts = ReconcileCounts()
        for (offset, path) in paths.enumerated() {
            counts[keyPath: path] = try row.int(9 + offset)
        }
        if isEarly(network: network, identifier: identifier, sequenceIndex: sequenceIndex, day: day, mappings) {
            counts.early = try row.int(8)
        }
        return (key, counts)
    }

    /// Whether postbacks first received on `day` came sooner after the start of their campaign
    /// (the mapping in force on that day) than their conversion window allows: a day for
    /// postback 0 (and before 4.0), four days for postback 1, nine for postback 2. The campaign
    /// starts at midnight of its first day, so a postback's instant matters only through its day.
    static func isEarly(
        network: String,
        identifier: String?,
        sequenceIndex: Int,
        day: UTCDay,
        _ mappings: CampaignMappings
    ) -> Bool {
        guard let index = mappings.lookup(network: network, identifier: identifier, installDate: day),
            let validFrom = mappings.rows[index].validFrom
        else { return false }
        let days: Int64 = sequenceIndex >= 2 ? 9 : sequenceIndex == 1 ? 4 : 1
        return day.daysSinceEpoch < validFrom.daysSinceEpoch + days
    }
}

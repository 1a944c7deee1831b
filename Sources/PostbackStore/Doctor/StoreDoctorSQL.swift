import PostbackKit

/// The statements of `doctor --db`'s checks (``StoreDoctor``), each written once for both
/// engines. Each reads the production postbacks of the claimed apps received within a window
/// before `now`, found through `postbacks`' index on the day received (``SQLQuery/receivedDay``)
/// and then narrowed to the instant: a handful of days of rows, however large the store.
package enum StoreDoctorSQL {
    /// The postbacks received from `from` (included) to `to` (excluded) that count: production
    /// ones of claimed apps. The days bound the index; the instants, the window.
    static func window(from: UTCInstant, to: UTCInstant) -> SQLQuery {
        """
        \(SQLQuery.receivedDay) >= \(from.day) AND \(SQLQuery.receivedDay) <= \(to.day)
            AND received_at >= \(from) AND received_at < \(to)
            AND key_space = 'production' AND \(raw: AppsSQL.claimed)
        """
    }

    /// Rows `(app, SKAdNetwork postbacks)`: the apps with at least `minimum` SKAdNetwork
    /// postbacks and no AdAttributionKit one in the window.
    package static func withoutCopies(from: UTCInstant, to: UTCInstant, minimum: Int) -> SQLQuery {
        """
        SELECT app_id, \(SQLQuery.counted("kind = 'skan'")) FROM postbacks
        WHERE \(window(from: from, to: to))
        GROUP BY app_id
        HAVING \(SQLQuery.counted("kind = 'aak'")) = 0 AND \(SQLQuery.counted("kind = 'skan'")) >= \(minimum)
        ORDER BY app_id
        """
    }

    /// Rows `(app, last received, postbacks of each day of `days`…)`: the apps with at least
    /// `minimum` postbacks from `days[0]` to `quiet` and none from `quiet` to `to`. Day i is
    /// `[days[i], days[i + 1])`, the last one's end `quiet`.
    package static func stopped(days: [UTCInstant], quiet: UTCInstant, to: UTCInstant, minimum: Int) -> SQLQuery {
        let ends = days.dropFirst() + [quiet]
        let perDay: [SQLQuery] = zip(days, ends).map { start, end in
            SQLQuery.counted("received_at >= \(start) AND received_at < \(end)")
        }
        return """
            SELECT app_id, \(SQLQuery.instantText("MAX(received_at)")), \(list: perDay) FROM postbacks
            WHERE \(window(from: days.first ?? quiet, to: to))
            GROUP BY app_id
            HAVING \(SQLQuery.counted("received_at >= \(quiet)")) = 0 AND COUNT(*) >= \(minimum)
            ORDER BY app_id
            """
    }

    /// Rows `(network, app, recent, recent without a value, before, before without a value)`:
    /// the first postbacks (sequence index 0) that won, from `from` to `recent` and from
    /// `recent` to `to`, of each network and app with at least `minimum` of each.
    package static func nullRates(
        from: UTCInstant,
        recent: UTCInstant,
        to: UTCInstant,
        minimum: (recent: Int, baseline: Int)
    ) -> SQLQuery {
        let noValue: SQLQuery = "fine_value IS NULL AND coarse_value IS NULL"
        return """
            SELECT ad_network_id, app_id,
                \(SQLQuery.counted("received_at >= \(recent)")), \(SQLQuery.counted("received_at >= \(recent) AND \(noValue)")),
                \(SQLQuery.counted("received_at < \(recent)")), \(SQLQuery.counted("received_at < \(recent) AND \(noValue)"))
            FROM postbacks
            WHERE \(window(from: from, to: to)) AND postback_sequence_index = 0 AND did_win IS NOT FALSE
            GROUP BY ad_network_id, app_id
            HAVING \(SQLQuery.counted("received_at >= \(recent)")) >= \(minimum.recent)
                AND \(SQLQuery.counted("received_at < \(recent)")) >= \(minimum.baseline)
            """
    }

    /// Rows `(app, kind, conversion type, sequence index, fine value, coarse value, postbacks)`:
    /// the postbacks of `apps` in the window, by what decodes them.
    package static func values(apps: [Int64], from: UTCInstant, to: UTCInstant) -> SQLQuery {
        let ids: [SQLQuery] = apps.map { "\($0)" }
        return """
            SELECT app_id, kind, conversion_type, postback_sequence_index, fine_value, coarse_value, COUNT(*)
            FROM postbacks
            WHERE \(window(from: from, to: to)) AND app_id IN (\(list: ids))
            GROUP BY app_id, kind, conversion_type, postback_sequence_index, fine_value, coarse_value
            """
    }
}

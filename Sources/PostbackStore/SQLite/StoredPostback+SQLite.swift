extension StoredPostback {
    /// The row ``SQLiteStore/selectStored`` is on (`dedupKey` is the one it looked up).
    init(_ row: SQLiteRowReader, dedupKey: [UInt8]) {
        self.init(
            id: row.int64(0) ?? 0,
            source: row.text(1) ?? "",
            sourceIndex: row.int64(2) ?? 0,
            rawDigest: row.blob(3) ?? [],
            fine: row.int64(4).map(Int.init),
            coarse: row.text(5),
            country: row.text(6),
            adNetworkID: row.text(7) ?? "",
            transactionID: row.text(8) ?? "",
            sequenceIndex: Int(row.int64(9) ?? 0),
            kind: row.text(10) ?? "",
            keySpace: row.text(11) ?? "",
            dedupKey: dedupKey,
            signed: SignedColumns(
                version: row.text(12),
                appID: row.int64(13) ?? 0,
                campaignID: row.int64(14),
                sourceIdentifier: row.text(15),
                sourceAppID: row.int64(16),
                sourceDomain: row.text(17),
                fidelityType: row.int64(18).map(Int.init),
                didWin: row.int64(19).map { $0 != 0 },
                redownload: row.int64(20).map { $0 != 0 },
                conversionType: row.text(21),
                marketplaceID: row.text(22),
                impressionType: row.text(23)
            )
        )
    }
}

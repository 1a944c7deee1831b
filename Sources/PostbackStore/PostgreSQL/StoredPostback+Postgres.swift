import PostgresNIO

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

import PostbackKit

/// A stored campaign mapping row and when it was added.
package struct StoredCampaignMapping: Sendable, Hashable {
    package var mapping: CampaignMapping
    /// ISO 8601.
    package var addedAt: String
}

/// What `campaigns add` changed: per network, the rows it had and has.
package struct CampaignMappingChange: Sendable, Hashable {
    package struct Network: Sendable, Hashable {
        package var adNetworkID: String
        package var removed: Int
        package var added: Int
    }

    package var networks: [Network] = []

    /// For people: one line per network.
    package var text: String {
        networks.map { network in
            "\(network.adNetworkID): \(formatCount(network.added)) row\(network.added == 1 ? "" : "s") stored"
                + (network.removed > 0 ? ", replacing \(formatCount(network.removed))" : "")
        }.joined(separator: "\n")
            + "\nrun postbackd aggregate to apply the mappings to the aggregates"
    }

    package var json: String {
        var object = JSONObjectWriter()
        object.addRaw(
            "networks",
            json: "["
                + networks.map { network in
                    var entry = JSONObjectWriter()
                    entry.add("ad_network_id", network.adNetworkID)
                    entry.add("added", network.added)
                    entry.add("removed", network.removed)
                    return entry.text
                }.joined(separator: ",") + "]"
        )
        return object.text
    }
}

/// `postbackd campaigns add` and `campaigns list`.
package enum CampaignsJob {
    /// Reads and checks the files together, then replaces the mappings of the networks they
    /// name, in one transaction: any problem in any file, and nothing is stored.
    package static func add(_ location: StoreLocation, files: [String]) async throws -> CampaignMappingChange {
        let rows: [CampaignMapping]
        switch CampaignMappingFile.read(files) {
        case .success(let read): rows = read
        case .failure(let error): throw error
        }
        guard !rows.isEmpty else {
            throw FileProblemsError(
                .empty,
                problems: ["\(files.joined(separator: ", ")): no mapping rows (only a header)"]
            )
        }
        return try await PostbackStores.with(location) { store in
            try await store.replaceCampaignMappings(rows)
        }
    }

    /// Every stored row, or those of `network`.
    package static func list(_ location: StoreLocation, network: String?) async throws -> [StoredCampaignMapping] {
        try await PostbackStores.with(location) { store in
            try await store.campaignMappings().filter { network == nil || $0.mapping.adNetworkID == network }
        }
    }

    /// The rows as CSV: a mapping file's columns (`campaigns add` reads it back), then where
    /// each was read and when it was added.
    package static func csv(_ rows: [StoredCampaignMapping]) -> String {
        var out = CampaignMapping.header + ",source,line,added_at\n"
        for stored in rows {
            let row = stored.mapping
            let cells = [
                row.adNetworkID, row.prefix, row.validFrom?.description ?? "", row.validTo?.description ?? "",
                row.campaign, row.adGroup ?? "", row.creative ?? "", row.source, String(row.line), stored.addedAt,
            ]
            out += cells.map(csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    /// JSON Lines, one object per row (null for empty cells).
    package static func json(_ rows: [StoredCampaignMapping]) -> String {
        JSONObjectWriter.lines(rows) { stored, object in
            let row = stored.mapping
            object.add("ad_network_id", row.adNetworkID)
            object.add("source_identifier", row.prefix)
            object.add("valid_from", row.validFrom?.description)
            object.add("valid_to", row.validTo?.description)
            object.add("campaign", row.campaign)
            object.add("ad_group", row.adGroup)
            object.add("creative", row.creative)
            object.add("source", row.source)
            object.add("line", row.line)
            object.add("added_at", stored.addedAt)
        }
    }

    /// An aligned table for people.
    package static func table(_ rows: [StoredCampaignMapping]) -> String {
        guard !rows.isEmpty else { return "no campaign mappings (postbackd campaigns add FILE)\n" }
        func column(_ header: String, _ cell: (CampaignMapping) -> String) -> TableColumn {
            TableColumn(header: header, rightAligned: false, cells: rows.map { cell($0.mapping) }, priority: 90)
        }
        let columns = [
            column("ad network") { $0.adNetworkID }, column("prefix") { $0.prefix }, column("valid") { $0.period },
            column("campaign") { $0.campaign }, column("ad group") { $0.adGroup ?? "-" },
            column("creative") { $0.creative ?? "-" }, column("read from") { $0.place },
        ]
        return TableColumn.lines(columns, rows: rows.count).joined(separator: "\n") + "\n"
    }
}

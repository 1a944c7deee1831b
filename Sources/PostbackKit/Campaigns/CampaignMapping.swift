/// One row of a network's campaign mapping (`../shared/spec/postbacks.md`, section 9): the
/// postbacks of `adNetworkID` whose source identifier (before 4.0: campaign id in decimal)
/// begins with `prefix`, installed on a day from `validFrom` to `validTo` (inclusive; nil is
/// open-ended), stand for `campaign`, `adGroup` and `creative`.
package struct CampaignMapping: Sendable, Hashable {
    package var adNetworkID: String
    /// 1 to 4 decimal digits.
    package var prefix: String
    package var validFrom: UTCDay?
    package var validTo: UTCDay?
    package var campaign: String
    package var adGroup: String?
    package var creative: String?
    /// Where the row was read: the file, and its line.
    package var source: String
    package var line: Int

    package init(
        adNetworkID: String,
        prefix: String,
        validFrom: UTCDay?,
        validTo: UTCDay?,
        campaign: String,
        adGroup: String?,
        creative: String?,
        source: String,
        line: Int
    ) {
        self.adNetworkID = adNetworkID
        self.prefix = prefix
        self.validFrom = validFrom
        self.validTo = validTo
        self.campaign = campaign
        self.adGroup = adGroup
        self.creative = creative
        self.source = source
        self.line = line
    }

    /// Whether `day` is within the validity period.
    package func isValid(on day: UTCDay) -> Bool {
        (validFrom.map { $0 <= day } ?? true) && (validTo.map { day <= $0 } ?? true)
    }

    /// Whether the two validity periods share a day.
    func overlaps(_ other: CampaignMapping) -> Bool {
        let start = max(validFrom?.daysSinceEpoch ?? .min, other.validFrom?.daysSinceEpoch ?? .min)
        let end = min(validTo?.daysSinceEpoch ?? .max, other.validTo?.daysSinceEpoch ?? .max)
        return start <= end
    }

    /// `source:line`.
    package var place: String { "\(source):\(line)" }

    /// The CSV header of mapping files, in column order.
    package static let header = "ad_network_id,source_identifier,valid_from,valid_to,campaign,ad_group,creative"
}

/// Campaign mapping files: CSV with the header ``CampaignMapping/header``, read and checked.
package enum CampaignMappingFile {
    /// The largest file read (a mapping of every prefix of a thousand networks is far less).
    package static let maximumBytes = ConversionModelFile.maximumBytes
    /// The most problems listed (the count of the rest follows).
    static let maximumProblems = 200
    /// The longest campaign, ad group or creative name.
    static let maximumNameBytes = 1_024

    /// Reads and checks the files (`-`: standard input) together: every problem, each naming
    /// its file and line, or every row. Rows of one network and prefix whose validity periods
    /// share a day are a problem naming both lines, across files too.
    package static func read(_ paths: [String]) -> Result<[CampaignMapping], FileProblemsError> {
        var rows: [CampaignMapping] = []
        var problems: [String] = []
        for path in paths {
            let name = path == "-" ? "standard input" : path
            let bytes: [UInt8]
            do {
                bytes = try WholeFile.read(path, limit: maximumBytes, what: "a campaign mapping file")
            } catch {
                problems.append(error.reason)
                continue
            }
            let parsed = parse(bytes, source: name)
            rows += parsed.rows
            problems += parsed.problems
        }
        problems += overlaps(rows)
        if problems.count > maximumProblems {
            let more = problems.count - maximumProblems
            problems = Array(problems.prefix(maximumProblems)) + ["… and \(more) more problems"]
        }
        return problems.isEmpty ? .success(rows) : .failure(FileProblemsError(.invalid, problems: problems))
    }

    /// Parses one file's bytes; `source` names it in problems and rows. Returns the rows that
    /// can be read and a problem for each that cannot.
    package static func parse(_ bytes: [UInt8], source: String) -> (rows: [CampaignMapping], problems: [String]) {
        var records = CSVRecords(bytes)
        var problems: [String] = []
        guard let first = records.next() else {
            return ([], ["\(source): empty; expected the header \(CampaignMapping.header)"])
        }
        if let problem = first.problem {
            return ([], ["\(source):\(first.line): \(problem)"])
        }
        let header = first.fields
        // Further columns (a note, or `campaigns list --format csv`'s source and time) are
        // allowed after the seven and ignored.
        guard header.prefix(7).joined(separator: ",") == CampaignMapping.header else {
            return (
                [],
                [
                    "\(source):\(first.line): the header is \"\(header.joined(separator: ","))\"; expected \(CampaignMapping.header) (further columns after these are ignored)"
                ]
            )
        }
        var rows: [CampaignMapping] = []
        problems += records.rows(source: source, header: header, headerText: CampaignMapping.header) { cells, line in
            let place = "\(source):\(line)"
            var rowProblems: [String] = []
            let network = cells[0]
            if network.isEmpty || network.utf8.count > 255
                || network.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value > 0x7E })
            {
                rowProblems.append("ad_network_id: expected the network's id, e.g. example123.skadnetwork")
            }
            let prefix = cells[1]
            if !(1...4).contains(prefix.utf8.count) || !prefix.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                rowProblems.append("source_identifier: expected a prefix of 1 to 4 digits, found \"\(prefix)\"")
            }
            func day(_ index: Int, _ column: String) -> UTCDay?? {
                if cells[index].isEmpty { return .some(nil) }
                guard cells[index].utf8.count == 10, let day = UTCDay(cells[index]) else {
                    rowProblems.append("\(column): expected a day as YYYY-MM-DD or empty, found \"\(cells[index])\"")
                    return nil
                }
                return .some(day)
            }
            let from = day(2, "valid_from")
            let to = day(3, "valid_to")
            if case .some(.some(let start)) = from, case .some(.some(let end)) = to, end < start {
                rowProblems.append("valid_to \(end) is before valid_from \(start)")
            }
            if cells[4].isEmpty { rowProblems.append("campaign: empty; every row names its campaign") }
            for (index, column) in [(4, "campaign"), (5, "ad_group"), (6, "creative")]
            where cells[index].utf8.count > maximumNameBytes {
                rowProblems.append("\(column): longer than \(maximumNameBytes) bytes")
            }
            guard rowProblems.isEmpty, case .some(let validFrom) = from, case .some(let validTo) = to else {
                return rowProblems.map { "\(place): \($0)" }
            }
            rows.append(
                CampaignMapping(
                    adNetworkID: network,
                    prefix: prefix,
                    validFrom: validFrom,
                    validTo: validTo,
                    campaign: cells[4],
                    adGroup: cells[5].isEmpty ? nil : cells[5],
                    creative: cells[6].isEmpty ? nil : cells[6],
                    source: source,
                    line: line
                )
            )
            return []
        }
        return (rows, problems)
    }

    /// A problem for each row whose period shares a day with an earlier-starting row of the
    /// same network and prefix (naming the one that reaches furthest), found by one sweep per
    /// group in order of start: n log n, whatever the file holds.
    package static func overlaps(_ rows: [CampaignMapping]) -> [String] {
        var problems: [String] = []
        let groups = Dictionary(grouping: rows) { [$0.adNetworkID, $0.prefix] }
        for key in groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let group = (groups[key] ?? []).sorted {
                ($0.validFrom?.daysSinceEpoch ?? .min, $0.line) < ($1.validFrom?.daysSinceEpoch ?? .min, $1.line)
            }
            var furthest: CampaignMapping?
            for row in group {
                if let earlier = furthest, row.overlaps(earlier) {
                    problems.append(
                        "\(row.place): network \(row.adNetworkID), prefix \(row.prefix): valid \(row.period), which overlaps \(earlier.place) (valid \(earlier.period))"
                    )
                }
                if furthest.map({ ($0.validTo?.daysSinceEpoch ?? .max) < (row.validTo?.daysSinceEpoch ?? .max) })
                    ?? true
                {
                    furthest = row
                }
            }
        }
        return problems
    }
}

extension CampaignMapping {
    /// `2026-11-01 to 2026-11-30`, `from 2026-11-01`, `until 2026-11-30` or `always`.
    package var period: String {
        switch (validFrom, validTo) {
        case (let from?, let to?): "\(from) to \(to)"
        case (let from?, nil): "from \(from)"
        case (nil, let to?): "until \(to)"
        case (nil, nil): "always"
        }
    }
}

/// The campaign mappings in force, for looking postbacks up.
package struct CampaignMappings: Sendable {
    package let rows: [CampaignMapping]
    /// Row indexes by network and prefix, each list sorted by `validFrom`.
    private let index: [String: [String: [Int]]]

    package init(_ rows: [CampaignMapping]) {
        self.rows = rows
        var index: [String: [String: [Int]]] = [:]
        for (position, row) in rows.enumerated() {
            index[row.adNetworkID, default: [:]][row.prefix, default: []].append(position)
        }
        self.index = index
    }

    package var isEmpty: Bool { rows.isEmpty }

    /// The row (its index in ``rows``) of `network` whose prefix is the longest that begins
    /// `identifier` among those valid on `installDate`; nil when none is.
    package func lookup(network: String, identifier: String?, installDate: UTCDay) -> Int? {
        guard let identifier, let prefixes = index[network] else { return nil }
        let digits = identifier.utf8
        var length = min(4, digits.count)
        while length >= 1 {
            let prefix = String(decoding: digits.prefix(length), as: UTF8.self)
            if let candidates = prefixes[prefix],
                let found = candidates.first(where: { rows[$0].isValid(on: installDate) })
            {
                return found
            }
            length -= 1
        }
        return nil
    }
}

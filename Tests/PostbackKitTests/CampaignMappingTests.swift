import PostbackKit
import PostbackTestSupport
import Testing

@Suite("Campaign mapping files and lookups")
struct CampaignMappingTests {
    let header = CampaignMapping.header + "\n"

    private func parse(_ text: String, source: String = "map.csv") -> (rows: [CampaignMapping], problems: [String]) {
        CampaignMappingFile.parse(Array(text.utf8), source: source)
    }

    /// A day the test writes as a literal.
    // swift-format-ignore: NeverForceUnwrap
    private func day(_ text: String) -> UTCDay { UTCDay(text)! }

    @Test("reads rows: empty cells as open-ended or null, quoted commas and quotes, CRLF, a BOM, extra columns")
    func reads() throws {
        let text =
            "\u{FEFF}" + CampaignMapping.header + ",note\r\n"
            + "net.skadnetwork,12,2026-11-01,2026-11-30,\"Winter, \"\"big\"\"\",Search,banner,first\r\n"
            + "net.skadnetwork,3,,,Always,,,\r\n"
            + "\r\n"
        let (rows, problems) = parse(text)
        #expect(problems == [])
        #expect(rows.count == 2)
        let first = try #require(rows.first)
        #expect(first.adNetworkID == "net.skadnetwork")
        #expect(first.prefix == "12")
        #expect(first.validFrom == day("2026-11-01") && first.validTo == day("2026-11-30"))
        #expect(first.campaign == "Winter, \"big\"")
        #expect(first.adGroup == "Search" && first.creative == "banner")
        #expect(first.line == 2)
        let second = rows[1]
        #expect(second.validFrom == nil && second.validTo == nil)
        #expect(second.adGroup == nil && second.creative == nil)
        #expect(second.line == 3)
    }

    @Test("each bad cell is named with its file and line; good rows around it still read")
    func problems() {
        let (rows, problems) = parse(
            header
                + "net,12345,,,A,,\n"  // line 2: prefix too long
                + "net,1a,,,A,,\n"  // line 3: not digits
                + "net,1,2026-02-30,,A,,\n"  // line 4: no such day
                + "net,1,2026-11-30,2026-11-01,A,,\n"  // line 5: ends before it starts
                + "net,1,,,,,\n"  // line 6: no campaign
                + "net,1,,\n"  // line 7: too few columns
                + "net,9,,,Fine,,\n"  // line 8: good
        )
        #expect(rows.map(\.line) == [8])
        #expect(problems.count == 6)
        #expect(problems[0].hasPrefix("map.csv:2: source_identifier"))
        #expect(problems[1].hasPrefix("map.csv:3: source_identifier"))
        #expect(problems[2].hasPrefix("map.csv:4: valid_from"))
        #expect(problems[3].hasPrefix("map.csv:5: valid_to 2026-11-01 is before valid_from 2026-11-30"))
        #expect(problems[4].hasPrefix("map.csv:6: campaign: empty"))
        #expect(problems[5].hasPrefix("map.csv:7: 4 columns"))
    }

    @Test("a wrong header or an unclosed quote is refused")
    func wrongHeader() {
        #expect(parse("network,prefix\nnet,1\n").problems.first?.hasPrefix("map.csv:1: the header is") == true)
        #expect(parse("").problems.first?.hasPrefix("map.csv: empty") == true)
        let unclosed = parse(header + "net,1,,,\"Open,,\n")
        #expect(unclosed.problems == ["map.csv:2: a quoted field is not closed before the end of the file"])
        let after = parse(header + "net,1,,,\"Winter\"x,,\nnet,2,,,\" Spaced \" ,\t\"G\",\n")
        #expect(after.problems == ["map.csv:2: text after a closing quote (quote the whole field)"])
        #expect(after.rows.map(\.campaign) == [" Spaced "])  // quoted spaces kept, unquoted ones trimmed
        #expect(after.rows.first?.adGroup == "G")
    }

    @Test("rows of one network and prefix whose periods share a day are refused, naming both lines, across files")
    func overlaps() throws {
        let directory = try TemporaryDirectory("campaigns")
        let one = try directory.write(
            "one.csv",
            header
                + "net,1,2026-11-01,2026-11-15,A,,\n"  // 2
                + "net,1,2026-11-16,,B,,\n"  // 3: touches, does not overlap
                + "net,12,,,C,,\n"  // 4: another prefix
                + "other,1,,,D,,\n"  // 5: another network
        )
        let two = try directory.write("two.csv", header + "net,1,2026-11-15,2026-11-15,E,,\n")
        switch CampaignMappingFile.read([one]) {
        case .success(let rows): #expect(rows.count == 4)
        case .failure(let error): Issue.record("\(error)")
        }
        switch CampaignMappingFile.read([one, two]) {
        case .success: Issue.record("an overlap was accepted")
        case .failure(let error):
            #expect(
                error.problems == [
                    "\(two):2: network net, prefix 1: valid 2026-11-15 to 2026-11-15, which overlaps \(one):2 (valid 2026-11-01 to 2026-11-15)"
                ]
            )
        }
        // Open-ended periods overlap everything after (or before) them.
        let open = parse(header + "net,1,,2026-11-10,A,,\nnet,1,2026-11-01,,B,,\n")
        #expect(CampaignMappingFile.overlaps(open.rows).count == 1)
    }

    @Test("lookup: the longest prefix valid on the install date, per network; none is unmapped")
    func lookup() {
        let rows = parse(
            header
                + "net,5,,,Five,,\n"  // 0
                + "net,52,,2026-11-10,Early,,\n"  // 1
                + "net,52,2026-11-11,,Late,,\n"  // 2
                + "net,5239,2026-11-20,2026-11-20,One day,,\n"  // 3
                + "net,42,,,Pre-four,,\n"  // 4
                + "other,5,,,Other,,\n"  // 5
        ).rows
        let mappings = CampaignMappings(rows)
        func name(_ network: String, _ identifier: String?, _ date: String) -> String? {
            mappings.lookup(network: network, identifier: identifier, installDate: day(date)).map { rows[$0].campaign }
        }
        #expect(name("net", "5239", "2026-11-05") == "Early")  // 52 beats 5; 5239 not valid yet
        #expect(name("net", "5239", "2026-11-12") == "Late")
        #expect(name("net", "5239", "2026-11-20") == "One day")  // the longest, on its one day
        #expect(name("net", "5239", "2026-11-21") == "Late")
        #expect(name("net", "5100", "2026-11-20") == "Five")
        #expect(name("net", "61", "2026-11-20") == nil)  // no prefix begins it
        #expect(name("net", "42", "2026-11-20") == "Pre-four")  // a pre-4.0 campaign id in decimal
        #expect(name("net", "4", "2026-11-20") == nil)  // a prefix longer than the identifier does not begin it
        #expect(name("other", "5239", "2026-11-20") == "Other")
        #expect(name("third", "5239", "2026-11-20") == nil)
        #expect(name("net", nil, "2026-11-20") == nil)
    }
}

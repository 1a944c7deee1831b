import Foundation
import PostbackKit
import PostbackServer
import PostbackTestSupport
import Testing

/// `postbackd doctor --plist`: every problem it names, by key path and kind, in XML and binary
/// property lists (Fixtures/doctor, written by make-plists.py there).
@Suite("doctor --plist")
struct DoctorPlistTests {
    static func fixture(_ name: String) throws -> String {
        try #require(Bundle.module.path(forResource: name, ofType: "plist", inDirectory: "Fixtures/doctor"))
    }

    /// The findings of a fixture as `subject kind`, sorted.
    static func findings(_ name: String) throws -> [String] {
        let section = InfoPlistDoctor.check(try fixture(name))
        #expect(section.failure == nil, "\(section.failure ?? "")")
        return section.findings.map { "\($0.subject) \($0.kind)" }.sorted()
    }

    static let expected: [String: [String]] = [
        "good": [],
        "bad-endpoints": [
            "AdAttributionKit.AttributionCopyEndpoint nested",
            "AttributionCopyEndpoint bad-url",
            "AttributionCopyEndpoint bad-url",
            "AttributionCopyEndpoint not-lowercase",
            "AttributionCopyEndpoint subdomain",
            "NSAdvertisingAttributionReportEndpoint missing",
            "NSAppTransportSecurity.NSAdvertisingAttributionReportEndpoint nested",
        ],
        "bad-endpoint-values": [
            "AttributionCopyEndpoint malformed",
            "NSAdvertisingAttributionReportEndpoint wrong-type",
        ],
        "bad-networks": [
            "AdNetworkIdentifiers[1] duplicate",
            "AdNetworkIdentifiers[1] not-lowercase",
            "SKAdNetworkItems[1].SKAdNetworkIdentifier duplicate",
            "SKAdNetworkItems[1].SKAdNetworkIdentifier not-lowercase",
            "SKAdNetworkItems[2].SKAdNetworkIdentifier malformed",
            "SKAdNetworkItems[3].SKAdNetworkIdentifier wrong-type",
            "SKAdNetworkItems[4].SKAdNetworkIdentifier missing",
            "SKAdNetworkItems[5] wrong-type",
            "SKAdNetworkItems[6].SKAdNetworkIdentifier malformed",
        ],
        "bad-configurations": [
            "AdAttributionKitConfigurations.AttributionCooldown.install-cooldown-hours out-of-range",
            "AdAttributionKitConfigurations.AttributionCooldown.re-engagement-cooldown-hours out-of-range",
            "AdAttributionKitConfigurations.AttributionCooldown.reengagement-cooldown-hours unknown-key",
            "AdAttributionKitConfigurations.AttributionCopyEndpoint nested",
            #"AdAttributionKitConfigurations.AttributionWindows["Example456.adattributionkit"] not-lowercase"#,
            #"AdAttributionKitConfigurations.AttributionWindows["another.adattributionkit"].click misplaced"#,
            #"AdAttributionKitConfigurations.AttributionWindows["example123.adattributionkit"].install.click out-of-range"#,
            #"AdAttributionKitConfigurations.AttributionWindows["example123.adattributionkit"].install.clicks unknown-key"#,
            #"AdAttributionKitConfigurations.AttributionWindows["example123.adattributionkit"].install.ignoreInteractionType malformed"#,
            #"AdAttributionKitConfigurations.AttributionWindows["example123.adattributionkit"].install.view out-of-range"#,
            #"AdAttributionKitConfigurations.AttributionWindows["example123.adattributionkit"].reengagement unknown-key"#,
            "AdAttributionKitConfigurations.AttributionWindows.click misplaced",
            "AdAttributionKitConfigurations.AttributionWindows.global.install.click out-of-range",
            "AdAttributionKitConfigurations.AttributionWindows.global.install.ignoreInteractionType misplaced",
            "AdAttributionKitConfigurations.AttributionWindows.global.install.view wrong-type",
            "AdAttributionKitConfigurations.Windows unknown-key",
            "AdAttributionKitConfigurations.install-cooldown-hours misplaced",
            "EligibleForAdAttributionKitOverlappingConversions wrong-type",
            "EligibleForAdAttributionKitReengagementPostbackCopies wrong-type",
        ],
        "bad-types": [
            "AdAttributionKitConfigurations wrong-type",
            "AdNetworkIdentifiers wrong-type",
            "SKAdNetworkItems wrong-type",
        ],
    ]

    @Test("each fixture's findings, by key path and kind, XML and binary alike", arguments: expected.keys.sorted())
    func findingsByKeyPath(_ name: String) throws {
        let want = try #require(Self.expected[name])
        #expect(try Self.findings(name) == want.sorted())
        #expect(try Self.findings(name + "-binary") == want.sorted())
    }

    @Test("the binary fixtures are binary property lists")
    func binaryFixtures() throws {
        let bytes = try #require(FileManager.default.contents(atPath: try Self.fixture("good-binary")))
        #expect(Array(bytes.prefix(8)) == Array("bplist00".utf8))
    }

    @Test("findings say what to do: the lower-cased ID, the duplicate's first index, the registrable domain")
    func fixes() throws {
        let networks = InfoPlistDoctor.check(try Self.fixture("bad-networks")).findings
        let upper = try #require(
            networks.first { $0.subject == "SKAdNetworkItems[1].SKAdNetworkIdentifier" && $0.kind == .notLowercase }
        )
        #expect(upper.fix == "write cstr6suwn9.skadnetwork")
        let duplicate = try #require(
            networks.first { $0.kind == .duplicate && $0.subject.hasPrefix("SKAdNetworkItems") }
        )
        #expect(duplicate.problem.contains("SKAdNetworkItems[0].SKAdNetworkIdentifier"))
        #expect(duplicate.fix.contains("SKAdNetworkItems[1]"))

        let endpoints = InfoPlistDoctor.check(try Self.fixture("bad-endpoints")).findings
        let nested = try #require(
            endpoints.first { $0.subject == "NSAppTransportSecurity.NSAdvertisingAttributionReportEndpoint" }
        )
        #expect(
            nested.problem
                == "iOS reads NSAdvertisingAttributionReportEndpoint only at the top level of Info.plist; it is ignored here"
        )
        #expect(nested.fix.contains("move NSAdvertisingAttributionReportEndpoint to the top level"))
        let copyNested = try #require(endpoints.first { $0.subject == "AdAttributionKit.AttributionCopyEndpoint" })
        #expect(copyNested.fix.contains("the top-level AttributionCopyEndpoint is the one iOS reads"))
        let subdomain = try #require(endpoints.first { $0.kind == .subdomain })
        #expect(subdomain.problem.contains("https://example.com/.well-known/appattribution/report-attribution/"))

        let configurations = InfoPlistDoctor.check(try Self.fixture("bad-configurations")).findings
        let misspelt = try #require(configurations.first { $0.subject.hasSuffix("reengagement-cooldown-hours") })
        #expect(misspelt.fix == "rename it re-engagement-cooldown-hours")
        let yes = try #require(
            configurations.first { $0.subject == "EligibleForAdAttributionKitOverlappingConversions" }
        )
        #expect(yes.problem.contains("\"YES\""))
    }

    @Test("registrable domains: two labels, three under a known two-label suffix")
    func registrable() {
        #expect(InfoPlistCheck.registrableDomain("postbacks.example.com") == "example.com")
        #expect(InfoPlistCheck.registrableDomain("example.co.uk") == "example.co.uk")
        #expect(InfoPlistCheck.registrableDomain("a.b.example.co.uk") == "example.co.uk")
        #expect(InfoPlistCheck.endpointURL("https://example.com/", at: "K", path: "/p/").isEmpty)
        #expect(InfoPlistCheck.endpointURL("https://127.0.0.1", at: "K", path: "/p/").map(\.kind) == [.badURL])
    }

    // MARK: The command

    @Test(
        "the command: 0 for a sound plist, 1 with a block per finding, 2 for a file it cannot read",
        .timeLimit(.minutes(20))
    )
    func command() async throws {
        let good = try await Postbackd.run(["doctor", "--plist", try Self.fixture("good")])
        #expect(good.status == 0, "\(good.standardOutput)\(good.standardError)")
        #expect(good.standardOutput.contains(": no findings"))
        #expect(good.standardOutput.hasSuffix("nothing wrong found\n"))

        let bad = try await Postbackd.run(["doctor", "--plist", try Self.fixture("bad-endpoints-binary")])
        #expect(bad.status == 1)
        #expect(bad.standardOutput.contains("7 findings"))
        #expect(
            bad.standardOutput.contains(
                """
                  AdAttributionKit.AttributionCopyEndpoint [nested]
                    problem: iOS reads AttributionCopyEndpoint only at the top level of Info.plist; it is ignored here
                    fix: remove it here: the top-level AttributionCopyEndpoint is the one iOS reads

                """
            ),
            "\(bad.standardOutput)"
        )

        let json = try await Postbackd.run(["doctor", "--format", "json", "--plist", try Self.fixture("bad-types")])
        #expect(json.status == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        #expect(object["findings"] as? Int == 3)
        let checks = try #require(object["checks"] as? [[String: Any]])
        let findings = try #require(checks.first?["findings"] as? [[String: Any]])
        #expect(
            findings.map { $0["subject"] as? String } == [
                "SKAdNetworkItems", "AdNetworkIdentifiers", "AdAttributionKitConfigurations",
            ]
        )
        #expect(findings.allSatisfy { $0["kind"] as? String == "wrong-type" && $0["fix"] is String })

        for (file, says) in [
            (
                try #require(
                    Bundle.module.path(forResource: "not-a-plist", ofType: "txt", inDirectory: "Fixtures/doctor")
                ), "not a property list"
            ),
            (try Self.fixture("root-array"), "not a dictionary: not an Info.plist"),
            (try Self.fixture("shared-references-binary"), "a property list of more than 100000 values"),
            ("/nonexistent/Info.plist", "no such file"),
        ] {
            let run = try await Postbackd.run(["doctor", "--plist", file])
            #expect(run.status == 2, "\(file)")
            #expect(run.standardError.contains(says), "\(run.standardError)")
            #expect(run.standardOutput.contains("could not check"))
        }

        let none = try await Postbackd.run(["doctor"])
        #expect(none.status == 2)
        #expect(none.standardError.contains("give at least one check"))
    }
}

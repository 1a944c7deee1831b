/// `postbackd doctor --plist`: what in an app's Info.plist keeps postbacks (or their copies)
/// from being sent, as Apple documents the keys.
///
/// - `NSAdvertisingAttributionReportEndpoint` (SKAdNetwork copies of winning postbacks) and
///   `AttributionCopyEndpoint` (AdAttributionKit copies): top-level strings "in the format
///   https://example.com"; "the system uses only the registrable part of the domain name, and
///   ignores any subdomains", and posts to `/.well-known/skadnetwork/report-attribution/` and
///   `/.well-known/appattribution/report-attribution/` of that domain.
///   https://developer.apple.com/documentation/bundleresources/information-property-list/nsadvertisingattributionreportendpoint
///   https://developer.apple.com/documentation/bundleresources/information-property-list/attributioncopyendpoint
///   https://developer.apple.com/documentation/adattributionkit/configuring-an-advertised-app
///   https://developer.apple.com/documentation/storekit/configuring-an-advertised-app
/// - `SKAdNetworkItems`: an array of dictionaries, each with `SKAdNetworkIdentifier`, an ad
///   network ID: "a unique lowercase identifier in the format of example123.adattributionkit"
///   (SKAdNetwork's are `….skadnetwork`, and AdAttributionKit accepts them).
///   https://developer.apple.com/documentation/bundleresources/information-property-list/skadnetworkitems
///   https://developer.apple.com/documentation/adattributionkit/registering-an-ad-network
///   AdAttributionKit's publisher-side `AdNetworkIdentifiers` (an array of strings) is checked
///   the same way.
///   https://developer.apple.com/documentation/adattributionkit/configuring-a-publisher-app
/// - `AdAttributionKitConfigurations`: `AttributionWindows` (`global` or an ad network ID,
///   each with an `install` dictionary of `click` 1–30 days, `view` 1–7 days, and, per ad
///   network only, `ignoreInteractionType` `view` or `click`) and `AttributionCooldown`
///   (`install-cooldown-hours`, `re-engagement-cooldown-hours`, 0–720 hours).
///   https://developer.apple.com/documentation/adattributionkit/configuring-attribution-rules-for-your-app
/// - `EligibleForAdAttributionKitReengagementPostbackCopies` ("a Boolean value") and
///   `EligibleForAdAttributionKitOverlappingConversions` (the opt-in to conversion tags):
///   Booleans.
///   https://developer.apple.com/documentation/bundleresources/information-property-list/eligibleforadattributionkitreengagementpostbackcopies
///   https://developer.apple.com/documentation/adattributionkit/conversion-tags
///
/// Every one of these keys is read only at the top level of Info.plist: found inside another
/// dictionary (`AdAttributionKit`, `NSAppTransportSecurity`, …) it is ignored, and said so.
package enum InfoPlistCheck {
    static let reportEndpoint = "NSAdvertisingAttributionReportEndpoint"
    static let copyEndpoint = "AttributionCopyEndpoint"
    static let skAdNetworkItems = "SKAdNetworkItems"
    static let skAdNetworkIdentifier = "SKAdNetworkIdentifier"
    static let adNetworkIdentifiers = "AdNetworkIdentifiers"
    static let configurations = "AdAttributionKitConfigurations"
    static let overlappingConversions = "EligibleForAdAttributionKitOverlappingConversions"
    static let reengagementCopies = "EligibleForAdAttributionKitReengagementPostbackCopies"

    /// The rules of the keys iOS reads only at the top level of Info.plist, in the order their
    /// findings are listed.
    static let rules: [InfoPlistRule] = [
        .endpoint(reportEndpoint, path: "/.well-known/skadnetwork/report-attribution/", kind: "SKAdNetwork"),
        .endpoint(copyEndpoint, path: "/.well-known/appattribution/report-attribution/", kind: "AdAttributionKit"),
        .array(
            skAdNetworkItems,
            wrongTypeFix: "make it an array of dictionaries, each with SKAdNetworkIdentifier",
            items: { skAdNetworkItemsFindings($0) }
        ),
        .array(
            adNetworkIdentifiers,
            wrongTypeFix: "make it an array of strings, one ad network ID each",
            items: { adNetworkIdentifiersFindings($0) }
        ),
        .dictionary(
            configurations,
            wrongTypeFix: "make it a dictionary holding AttributionWindows and AttributionCooldown",
            members: { configurationFindings($0) }
        ),
        .boolean(overlappingConversions),
        .boolean(reengagementCopies),
    ]

    /// The keys iOS reads only at the top level of Info.plist.
    package static let topLevelKeys = Set(rules.map(\.key))

    /// Every finding in `root`, an Info.plist's top-level dictionary, in key path order.
    package static func findings(_ root: [String: PropertyListValue]) -> [DoctorFinding] {
        var findings = rules.flatMap { $0.findings(root) }
        for key in root.keys.sorted() {
            guard let value = root[key] else { continue }
            findings += nested(value, at: key, root: root, depth: 1)
        }
        return findings
    }

    // MARK: Keys read only at the top level

    /// Every top-level-only key inside `value` (at any depth below the top level).
    private static func nested(
        _ value: PropertyListValue,
        at path: String,
        root: [String: PropertyListValue],
        depth: Int
    ) -> [DoctorFinding] {
        guard depth < 64 else { return [] }
        var findings: [DoctorFinding] = []
        switch value {
        case .dictionary(let members):
            for key in members.keys.sorted() {
                guard let member = members[key] else { continue }
                let memberPath = PropertyListKeyPath.child(path, key)
                if topLevelKeys.contains(key) {
                    let fix =
                        root[key] == nil
                        ? "move \(key) to the top level of Info.plist (out of \(path))"
                        : "remove it here: the top-level \(key) is the one iOS reads"
                    findings.append(
                        DoctorFinding(
                            memberPath,
                            .nested,
                            problem: "iOS reads \(key) only at the top level of Info.plist; it is ignored here",
                            fix: fix
                        )
                    )
                }
                findings += nested(member, at: memberPath, root: root, depth: depth + 1)
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                findings += nested(item, at: PropertyListKeyPath.element(path, index), root: root, depth: depth + 1)
            }
        default:
            break
        }
        return findings
    }
}

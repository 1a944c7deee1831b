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

    /// The keys iOS reads only at the top level of Info.plist.
    package static let topLevelKeys: Set<String> = [
        reportEndpoint, copyEndpoint, skAdNetworkItems, adNetworkIdentifiers, configurations,
        overlappingConversions, reengagementCopies,
    ]

    /// Every finding in `root`, an Info.plist's top-level dictionary, in key path order.
    package static func findings(_ root: [String: PropertyListValue]) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        findings += endpoint(
            root,
            reportEndpoint,
            path: "/.well-known/skadnetwork/report-attribution/",
            kind: "SKAdNetwork"
        )
        findings += endpoint(
            root,
            copyEndpoint,
            path: "/.well-known/appattribution/report-attribution/",
            kind: "AdAttributionKit"
        )
        if let items = root[skAdNetworkItems] { findings += skAdNetworkItemsFindings(items) }
        if let identifiers = root[adNetworkIdentifiers] { findings += adNetworkIdentifiersFindings(identifiers) }
        if let configurations = root[configurations] { findings += configurationFindings(configurations) }
        for key in [overlappingConversions, reengagementCopies] {
            if let value = root[key] { findings += boolean(value, at: key) }
        }
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

    // MARK: Endpoints

    private static func endpoint(
        _ root: [String: PropertyListValue],
        _ key: String,
        path: String,
        kind: String
    ) -> [DoctorFinding] {
        guard let value = root[key] else {
            return [
                DoctorFinding(
                    key,
                    .missing,
                    problem: "missing at the top level: iOS sends the developer no copies of winning \(kind) postbacks",
                    fix:
                        "add \(key) at the top level of Info.plist, a string https://example.com naming the domain that serves \(path)"
                )
            ]
        }
        guard case .string(let text) = value else {
            return [
                DoctorFinding(
                    key,
                    .wrongType,
                    problem: "\(value.typeName), not a string",
                    fix: "make it a string in the format https://example.com"
                )
            ]
        }
        return endpointURL(text, at: key, path: path)
    }

    /// The value "in the format https://example.com": HTTPS, a domain name, nothing else.
    package static func endpointURL(_ text: String, at key: String, path: String) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        let trimmed = text.trimmingWhitespace
        if trimmed != text {
            findings.append(
                DoctorFinding(
                    key,
                    .malformed,
                    problem: "\(jsonQuoted(text)) has white space around it",
                    fix: "write \(trimmed)"
                )
            )
        }
        guard let separator = trimmed.firstRange(of: "://") else {
            findings.append(
                DoctorFinding(
                    key,
                    .badURL,
                    problem: "\(jsonQuoted(trimmed)) is not a URL",
                    fix: "write it in the format https://example.com"
                )
            )
            return findings
        }
        let scheme = trimmed[..<separator.lowerBound]
        var rest = trimmed[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        var extras: [String] = []
        if let at = authority.lastIndex(of: "@") {
            extras.append("a user name")
            authority = authority[authority.index(after: at)...]
        }
        var host = authority
        if !authority.hasPrefix("["), let colon = authority.lastIndex(of: ":") {
            extras.append("a port (\(authority[authority.index(after: colon)...]); iOS posts to 443)")
            host = authority[..<colon]
        }
        let pathEnd = rest.firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex
        let urlPath = rest[..<pathEnd]
        if !urlPath.isEmpty && urlPath != "/" { extras.append("a path (\(urlPath))") }
        if rest[pathEnd...].contains("?") { extras.append("a query") }
        if rest[pathEnd...].contains("#") { extras.append("a fragment") }
        let lowerHost = host.lowercased()
        if scheme.lowercased() != "https" {
            findings.append(
                DoctorFinding(
                    key,
                    .badURL,
                    problem: "\(jsonQuoted(trimmed)) is not https://: iOS sends postbacks only over HTTPS",
                    fix: "write https://\(lowerHost)"
                )
            )
        }
        if !extras.isEmpty {
            findings.append(
                DoctorFinding(
                    key,
                    .badURL,
                    problem:
                        "\(jsonQuoted(trimmed)) has \(extras.joined(separator: ", ")): iOS takes only the domain and posts to \(path) on it",
                    fix: "write https://\(lowerHost)"
                )
            )
        }
        let hostAllowed = host.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
        let labels = lowerHost.split(separator: ".", omittingEmptySubsequences: false)
        let isAddress =
            host.hasPrefix("[") || (!labels.isEmpty && labels.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
        if host.isEmpty || !hostAllowed || isAddress || labels.count < 2 || labels.contains(where: \.isEmpty) {
            findings.append(
                DoctorFinding(
                    key,
                    .badURL,
                    problem: "\(jsonQuoted(String(host))) is not a domain name\(isAddress ? " (an IP address)" : "")",
                    fix: "write https://example.com with the domain that serves \(path)"
                )
            )
            return findings
        }
        if host != lowerHost {
            findings.append(
                DoctorFinding(
                    key,
                    .notLowercase,
                    problem: "the domain \(host) is not lower-case",
                    fix: "write https://\(lowerHost)"
                )
            )
        }
        let registrable = registrableDomain(lowerHost)
        if registrable != lowerHost {
            findings.append(
                DoctorFinding(
                    key,
                    .subdomain,
                    problem:
                        "iOS uses only the registrable domain \(registrable) and ignores the subdomain: it posts to https://\(registrable)\(path), not to \(lowerHost)",
                    fix:
                        "serve \(path) at https://\(registrable) (a redirect is not followed), and write https://\(registrable)"
                )
            )
        }
        return findings
    }

    /// Two-label public suffixes under which a registrable domain has three labels. Not the
    /// Public Suffix List: a short list of the common country ones; a domain under another
    /// such suffix is taken as two labels (and a subdomain finding may be wrong there).
    static let twoLabelSuffixes: Set<String> = [
        "co.uk", "org.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "ac.uk", "gov.uk",
        "com.au", "net.au", "org.au", "edu.au", "gov.au", "co.nz", "net.nz", "org.nz",
        "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "co.kr", "or.kr", "co.in", "net.in", "org.in",
        "com.br", "net.br", "org.br", "com.cn", "net.cn", "org.cn", "com.tw", "com.hk", "com.sg",
        "com.my", "co.za", "com.mx", "com.ar", "com.tr", "co.il", "com.ua", "co.id", "com.ph",
        "com.vn", "co.th", "com.co", "com.pe", "com.pl", "co.ke",
    ]

    /// The registrable part of `host` (lower-case, at least two labels): its last two labels,
    /// or three under a suffix in ``twoLabelSuffixes``.
    package static func registrableDomain(_ host: String) -> String {
        let labels = host.split(separator: ".")
        guard labels.count > 2 else { return host }
        let lastTwo = labels.suffix(2).joined(separator: ".")
        let keep = twoLabelSuffixes.contains(lastTwo) ? 3 : 2
        return labels.suffix(keep).joined(separator: ".")
    }

    // MARK: Ad network IDs

    private static func skAdNetworkItemsFindings(_ value: PropertyListValue) -> [DoctorFinding] {
        guard case .array(let items) = value else {
            return [
                DoctorFinding(
                    skAdNetworkItems,
                    .wrongType,
                    problem: "\(value.typeName), not an array",
                    fix: "make it an array of dictionaries, each with SKAdNetworkIdentifier"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        var seen: [String: String] = [:]
        for (index, item) in items.enumerated() {
            let itemPath = PropertyListKeyPath.element(skAdNetworkItems, index)
            guard case .dictionary(let members) = item else {
                findings.append(
                    DoctorFinding(
                        itemPath,
                        .wrongType,
                        problem: "\(item.typeName) (\(item.shown)), not a dictionary",
                        fix: "make it a dictionary with the key SKAdNetworkIdentifier and the ID as a string"
                    )
                )
                continue
            }
            let idPath = PropertyListKeyPath.child(itemPath, skAdNetworkIdentifier)
            guard let identifier = members[skAdNetworkIdentifier] else {
                findings.append(
                    DoctorFinding(
                        idPath,
                        .missing,
                        problem: "missing: the item names no ad network",
                        fix: "add SKAdNetworkIdentifier with the ad network's ID, or remove the item"
                    )
                )
                continue
            }
            findings += adNetworkID(identifier, at: idPath, seen: &seen)
        }
        return findings
    }

    private static func adNetworkIdentifiersFindings(_ value: PropertyListValue) -> [DoctorFinding] {
        guard case .array(let items) = value else {
            return [
                DoctorFinding(
                    adNetworkIdentifiers,
                    .wrongType,
                    problem: "\(value.typeName), not an array",
                    fix: "make it an array of strings, one ad network ID each"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        var seen: [String: String] = [:]
        for (index, item) in items.enumerated() {
            findings += adNetworkID(item, at: PropertyListKeyPath.element(adNetworkIdentifiers, index), seen: &seen)
        }
        return findings
    }

    /// One ad network ID: a string `<name>.skadnetwork` or `<name>.adattributionkit`, the name
    /// lower-case letters and digits; and not the same as an earlier one in `seen`.
    private static func adNetworkID(
        _ value: PropertyListValue,
        at path: String,
        seen: inout [String: String]
    ) -> [DoctorFinding] {
        guard case .string(let text) = value else {
            return [
                DoctorFinding(
                    path,
                    .wrongType,
                    problem: "\(value.typeName) (\(value.shown)), not a string",
                    fix: "write the ad network ID as a string, as example123.skadnetwork"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        let canonical = text.trimmingWhitespace.lowercased()
        if isAdNetworkID(canonical) {
            if canonical != text {
                let trimmedOnly = text.trimmingWhitespace == canonical
                findings.append(
                    DoctorFinding(
                        path,
                        trimmedOnly ? .malformed : .notLowercase,
                        problem: trimmedOnly
                            ? "\(jsonQuoted(text)) has white space around it"
                            : "\(jsonQuoted(text)) is not lower-case: ad network IDs are lower-case",
                        fix: "write \(canonical)"
                    )
                )
            }
        } else {
            findings.append(
                DoctorFinding(
                    path,
                    .malformed,
                    problem:
                        "\(jsonQuoted(text)) is not an ad network ID (lower-case letters and digits, then .skadnetwork or .adattributionkit)",
                    fix: "ask the ad network for its ID and write it as it gives it, as example123.skadnetwork"
                )
            )
        }
        if let first = seen[canonical] {
            findings.append(
                DoctorFinding(
                    path,
                    .duplicate,
                    problem: "\(jsonQuoted(text)) is listed twice: here and at \(first)",
                    fix: "remove this item (\(path)), keep \(first)"
                )
            )
        } else {
            seen[canonical] = path
        }
        return findings
    }

    package static func isAdNetworkID(_ text: String) -> Bool {
        for suffix in [".skadnetwork", ".adattributionkit"] where text.hasSuffix(suffix) {
            let name = text.utf8.dropLast(suffix.utf8.count)
            return !name.isEmpty
                && name.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
        }
        return false
    }

    // MARK: AdAttributionKitConfigurations

    private static let attributionWindows = "AttributionWindows"
    private static let attributionCooldown = "AttributionCooldown"
    private static let cooldownKeys = ["install-cooldown-hours", "re-engagement-cooldown-hours"]
    private static let windowKeys: [String: ClosedRange<Int64>] = ["click": 1...30, "view": 1...7]
    private static let ignoreInteractionType = "ignoreInteractionType"

    private static func configurationFindings(_ value: PropertyListValue) -> [DoctorFinding] {
        guard case .dictionary(let members) = value else {
            return [
                DoctorFinding(
                    configurations,
                    .wrongType,
                    problem: "\(value.typeName), not a dictionary",
                    fix: "make it a dictionary holding AttributionWindows and AttributionCooldown"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        for key in members.keys.sorted() {
            guard let member = members[key] else { continue }
            let path = PropertyListKeyPath.child(configurations, key)
            switch key {
            case attributionWindows:
                findings += windowsFindings(member, at: path)
            case attributionCooldown:
                findings += cooldownFindings(member, at: path)
            case _ where topLevelKeys.contains(key):
                break  // reported as nested
            case _ where cooldownKeys.contains(key):
                findings.append(misplaced(path, key, belongs: "\(configurations).\(attributionCooldown).\(key)"))
            case "global", "install", "click", "view", ignoreInteractionType:
                findings.append(
                    misplaced(
                        path,
                        key,
                        belongs: "\(configurations).\(attributionWindows), under global or an ad network ID"
                    )
                )
            default:
                findings.append(unknown(path, key, known: [attributionWindows, attributionCooldown]))
            }
        }
        return findings
    }

    private static func windowsFindings(_ value: PropertyListValue, at path: String) -> [DoctorFinding] {
        guard case .dictionary(let networks) = value else {
            return [
                DoctorFinding(
                    path,
                    .wrongType,
                    problem: "\(value.typeName), not a dictionary",
                    fix: "make it a dictionary of global and ad network IDs, each holding an install dictionary"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        for network in networks.keys.sorted() {
            guard let settings = networks[network] else { continue }
            let networkPath = PropertyListKeyPath.child(path, network)
            let isGlobal = network == "global"
            if ["install", "click", "view", ignoreInteractionType].contains(network) {
                findings.append(misplaced(networkPath, network, belongs: "\(path).global or \(path).<ad network ID>"))
                continue
            }
            if !isGlobal && network != network.lowercased() {
                findings.append(
                    DoctorFinding(
                        networkPath,
                        .notLowercase,
                        problem:
                            "the ad network ID \(jsonQuoted(network)) is not lower-case: ad network IDs are lower-case",
                        fix: "name the dictionary \(network.lowercased())"
                    )
                )
            }
            guard case .dictionary(let kinds) = settings else {
                findings.append(
                    DoctorFinding(
                        networkPath,
                        .wrongType,
                        problem: "\(settings.typeName), not a dictionary",
                        fix: "make it a dictionary holding an install dictionary"
                    )
                )
                continue
            }
            for kind in kinds.keys.sorted() {
                guard let install = kinds[kind] else { continue }
                let kindPath = PropertyListKeyPath.child(networkPath, kind)
                if kind != "install" {
                    if windowKeys[kind] != nil || kind == ignoreInteractionType {
                        findings.append(misplaced(kindPath, kind, belongs: "\(networkPath).install"))
                    } else {
                        findings.append(
                            DoctorFinding(
                                kindPath,
                                .unknownKey,
                                problem:
                                    "iOS does not read \(kind) here: attribution windows apply to install conversions only",
                                fix: "remove it; put click and view in \(networkPath).install"
                            )
                        )
                    }
                    continue
                }
                findings += installFindings(install, at: kindPath, isGlobal: isGlobal)
            }
        }
        return findings
    }

    private static func installFindings(_ value: PropertyListValue, at path: String, isGlobal: Bool) -> [DoctorFinding]
    {
        guard case .dictionary(let members) = value else {
            return [
                DoctorFinding(
                    path,
                    .wrongType,
                    problem: "\(value.typeName), not a dictionary",
                    fix: "make it a dictionary with click (1–30 days) and view (1–7 days)"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        for key in members.keys.sorted() {
            guard let member = members[key] else { continue }
            let memberPath = PropertyListKeyPath.child(path, key)
            if let range = windowKeys[key] {
                findings += integer(member, at: memberPath, range: range, unit: "days")
            } else if key == ignoreInteractionType {
                if isGlobal {
                    findings.append(
                        DoctorFinding(
                            memberPath,
                            .misplaced,
                            problem:
                                "iOS does not recognize ignoreInteractionType in the global configuration, only per ad network",
                            fix:
                                "move it into AttributionWindows.<ad network ID>.install for each network it is meant for"
                        )
                    )
                }
                switch member {
                case .string("view"), .string("click"):
                    break
                case .string(let text):
                    findings.append(
                        DoctorFinding(
                            memberPath,
                            .malformed,
                            problem: "\(jsonQuoted(text)) is neither view nor click",
                            fix: "write view or click"
                        )
                    )
                default:
                    findings.append(
                        DoctorFinding(
                            memberPath,
                            .wrongType,
                            problem: "\(member.typeName) (\(member.shown)), not a string",
                            fix: "write the string view or click"
                        )
                    )
                }
            } else {
                findings.append(
                    unknown(memberPath, key, known: ["click", "view"] + (isGlobal ? [] : [ignoreInteractionType]))
                )
            }
        }
        return findings
    }

    private static func cooldownFindings(_ value: PropertyListValue, at path: String) -> [DoctorFinding] {
        guard case .dictionary(let members) = value else {
            return [
                DoctorFinding(
                    path,
                    .wrongType,
                    problem: "\(value.typeName), not a dictionary",
                    fix: "make it a dictionary with install-cooldown-hours and re-engagement-cooldown-hours"
                )
            ]
        }
        var findings: [DoctorFinding] = []
        for key in members.keys.sorted() {
            guard let member = members[key] else { continue }
            let memberPath = PropertyListKeyPath.child(path, key)
            if cooldownKeys.contains(key) {
                findings += integer(member, at: memberPath, range: 0...720, unit: "hours")
            } else {
                findings.append(unknown(memberPath, key, known: cooldownKeys))
            }
        }
        return findings
    }

    // MARK: Values

    private static func integer(
        _ value: PropertyListValue,
        at path: String,
        range: ClosedRange<Int64>,
        unit: String
    ) -> [DoctorFinding] {
        let number: Int64
        switch value {
        case .integer(let whole):
            number = whole
        case .real(let real) where real == real.rounded() && abs(real) < 1e15:
            // A whole real is read as a number; Apple's examples write <integer>.
            number = Int64(real)
        default:
            return [
                DoctorFinding(
                    path,
                    .wrongType,
                    problem: "\(value.typeName) (\(value.shown)), not a number",
                    fix: "make it a Number (<integer>) from \(range.lowerBound) to \(range.upperBound) \(unit)"
                )
            ]
        }
        guard range.contains(number) else {
            return [
                DoctorFinding(
                    path,
                    .outOfRange,
                    problem: "\(number) \(unit) is outside \(range.lowerBound)–\(range.upperBound)",
                    fix: "write a number of \(unit) from \(range.lowerBound) to \(range.upperBound)"
                )
            ]
        }
        return []
    }

    private static func boolean(_ value: PropertyListValue, at path: String) -> [DoctorFinding] {
        if case .boolean = value { return [] }
        return [
            DoctorFinding(
                path,
                .wrongType,
                problem: "\(value.typeName) (\(value.shown)), not a Boolean",
                fix: "make it a Boolean: <true/> (YES in Xcode's editor with the type Boolean)"
            )
        ]
    }

    private static func misplaced(_ path: String, _ key: String, belongs: String) -> DoctorFinding {
        DoctorFinding(
            path,
            .misplaced,
            problem: "iOS does not read \(key) here",
            fix: "move it to \(belongs)"
        )
    }

    /// A key iOS does not read, with the nearest known key when it looks like a misspelling
    /// (`reengagement-cooldown-hours` for `re-engagement-cooldown-hours`).
    private static func unknown(_ path: String, _ key: String, known: [String]) -> DoctorFinding {
        let folded = key.lowercased().filter { $0.isLetter || $0.isNumber }
        let near = known.first { $0.lowercased().filter { $0.isLetter || $0.isNumber } == folded }
        return DoctorFinding(
            path,
            .unknownKey,
            problem: "iOS does not read \(key) here",
            fix: near.map { "rename it \($0)" }
                ?? "remove it, or use one of \(known.joined(separator: ", "))"
        )
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

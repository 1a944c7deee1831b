extension InfoPlistCheck {
    static let attributionWindows = "AttributionWindows"
    static let attributionCooldown = "AttributionCooldown"
    static let cooldownKeys = ["install-cooldown-hours", "re-engagement-cooldown-hours"]
    static let windowKeys: [String: ClosedRange<Int64>] = ["click": 1...30, "view": 1...7]
    static let ignoreInteractionType = "ignoreInteractionType"

    /// `AdAttributionKitConfigurations`, a dictionary of `AttributionWindows` and
    /// `AttributionCooldown`.
    static func configurationFindings(_ members: [String: PropertyListValue]) -> [DoctorFinding] {
        eachMember(in: members, at: configurations) { key, member, path in
            switch key {
            case attributionWindows:
                windowsFindings(member, at: path)
            case attributionCooldown:
                cooldownFindings(member, at: path)
            case _ where topLevelKeys.contains(key):
                []  // reported as nested
            case _ where cooldownKeys.contains(key):
                [misplaced(path, key, belongs: "\(configurations).\(attributionCooldown).\(key)")]
            case "global", "install", "click", "view", ignoreInteractionType:
                [
                    misplaced(
                        path,
                        key,
                        belongs: "\(configurations).\(attributionWindows), under global or an ad network ID"
                    )
                ]
            default:
                [unknown(path, key, known: [attributionWindows, attributionCooldown])]
            }
        }
    }

    /// `AttributionWindows`: `global` and ad network IDs, each holding an `install` dictionary.
    static func windowsFindings(_ value: PropertyListValue, at path: String) -> [DoctorFinding] {
        let fix = "make it a dictionary of global and ad network IDs, each holding an install dictionary"
        return eachMember(of: value, at: path, wrongTypeFix: fix) { network, settings, networkPath in
            let isGlobal = network == "global"
            if ["install", "click", "view", ignoreInteractionType].contains(network) {
                return [misplaced(networkPath, network, belongs: "\(path).global or \(path).<ad network ID>")]
            }
            var findings: [DoctorFinding] = []
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
            let holding = "make it a dictionary holding an install dictionary"
            findings += eachMember(of: settings, at: networkPath, wrongTypeFix: holding) { kind, value, kindPath in
                if kind == "install" { return installFindings(value, at: kindPath, isGlobal: isGlobal) }
                if windowKeys[kind] != nil || kind == ignoreInteractionType {
                    return [misplaced(kindPath, kind, belongs: "\(networkPath).install")]
                }
                return [
                    DoctorFinding(
                        kindPath,
                        .unknownKey,
                        problem:
                            "iOS does not read \(kind) here: attribution windows apply to install conversions only",
                        fix: "remove it; put click and view in \(networkPath).install"
                    )
                ]
            }
            return findings
        }
    }

    /// An `install` dictionary: `click` and `view` windows in days, and per ad network
    /// `ignoreInteractionType`.
    static func installFindings(_ value: PropertyListValue, at path: String, isGlobal: Bool) -> [DoctorFinding] {
        let fix = "make it a dictionary with click (1–30 days) and view (1–7 days)"
        return eachMember(of: value, at: path, wrongTypeFix: fix) { key, member, memberPath in
            var findings: [DoctorFinding] = []
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
                        wrongType(
                            member,
                            at: memberPath,
                            expected: "a string",
                            fix: "write the string view or click"
                        )
                    )
                }
            } else {
                findings.append(
                    unknown(memberPath, key, known: ["click", "view"] + (isGlobal ? [] : [ignoreInteractionType]))
                )
            }
            return findings
        }
    }

    /// `AttributionCooldown`: the install and re-engagement cooldowns, 0–720 hours.
    static func cooldownFindings(_ value: PropertyListValue, at path: String) -> [DoctorFinding] {
        let fix = "make it a dictionary with install-cooldown-hours and re-engagement-cooldown-hours"
        return eachMember(of: value, at: path, wrongTypeFix: fix) { key, member, memberPath in
            cooldownKeys.contains(key)
                ? integer(member, at: memberPath, range: 0...720, unit: "hours")
                : [unknown(memberPath, key, known: cooldownKeys)]
        }
    }

    /// The findings of the dictionary `value` at `path`, member by member in key order; one of
    /// its own when `value` is not a dictionary.
    static func eachMember(
        of value: PropertyListValue,
        at path: String,
        wrongTypeFix: String,
        _ check: (_ key: String, _ member: PropertyListValue, _ memberPath: String) -> [DoctorFinding]
    ) -> [DoctorFinding] {
        guard case .dictionary(let members) = value else {
            return [wrongType(value, at: path, expected: "a dictionary", showsValue: false, fix: wrongTypeFix)]
        }
        return eachMember(in: members, at: path, check)
    }

    /// The findings of `members`, the dictionary at `path`, member by member in key order.
    static func eachMember(
        in members: [String: PropertyListValue],
        at path: String,
        _ check: (_ key: String, _ member: PropertyListValue, _ memberPath: String) -> [DoctorFinding]
    ) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        for key in members.keys.sorted() {
            guard let member = members[key] else { continue }
            findings += check(key, member, PropertyListKeyPath.child(path, key))
        }
        return findings
    }
}

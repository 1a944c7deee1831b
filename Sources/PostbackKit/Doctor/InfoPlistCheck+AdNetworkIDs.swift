extension InfoPlistCheck {
    /// `SKAdNetworkItems`, an array: each item a dictionary with an ad network ID.
    static func skAdNetworkItemsFindings(_ items: [PropertyListValue]) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        var seen: [String: String] = [:]
        for (index, item) in items.enumerated() {
            let itemPath = PropertyListKeyPath.element(skAdNetworkItems, index)
            guard case .dictionary(let members) = item else {
                findings.append(
                    wrongType(
                        item,
                        at: itemPath,
                        expected: "a dictionary",
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

    /// `AdNetworkIdentifiers`, an array: each item an ad network ID.
    static func adNetworkIdentifiersFindings(_ items: [PropertyListValue]) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        var seen: [String: String] = [:]
        for (index, item) in items.enumerated() {
            findings += adNetworkID(item, at: PropertyListKeyPath.element(adNetworkIdentifiers, index), seen: &seen)
        }
        return findings
    }

    /// One ad network ID: a string `<name>.skadnetwork` or `<name>.adattributionkit`, the name
    /// lower-case letters and digits; and not the same as an earlier one in `seen`.
    static func adNetworkID(
        _ value: PropertyListValue,
        at path: String,
        seen: inout [String: String]
    ) -> [DoctorFinding] {
        guard case .string(let text) = value else {
            return [
                wrongType(
                    value,
                    at: path,
                    expected: "a string",
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
}

extension InfoPlistCheck {
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
}

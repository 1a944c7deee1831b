/// The escaping every output format shares: CSV fields (reports, exports, campaign
/// mappings) and HTML text (the dashboard page and its SVG charts).

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
func csvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
    var quoted = "\""
    for character in text {
        quoted.append(character)
        if character == "\"" { quoted.append("\"") }
    }
    return quoted + "\""
}

/// Text made safe for HTML content and attribute values.
package func escapeHTML(_ text: String) -> String {
    text.replacingCharacters { character in
        switch character {
        case "&": "&amp;"
        case "<": "&lt;"
        case ">": "&gt;"
        case "\"": "&quot;"
        case "'": "&#39;"
        default: nil
        }
    }
}

/// A ratio as JSON and CSV give it: four decimals.
func roundedRatio(_ value: Double) -> Double { (value * 10_000).rounded() / 10_000 }

/// A ratio as a table shows it: a percentage with one decimal.
func formatPercent(_ value: Double) -> String {
    let tenths = Int((value * 1000).rounded())
    return "\(tenths / 10).\(tenths % 10)%"
}

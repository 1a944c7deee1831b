/// `1234567` as `1,234,567`.
package func formatCount(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(character)
    }
    return value < 0 ? "-" + out : out
}

package func formatSeconds(_ seconds: Double) -> String {
    if seconds < 60 { return String(format2(seconds)) + " s" }
    let whole = Int(seconds.rounded())
    return "\(whole / 60)m\(whole % 60 < 10 ? "0" : "")\(whole % 60)s"
}

/// Two decimals without Foundation.
func format2(_ value: Double) -> String {
    let hundredths = Int((value * 100).rounded())
    let fraction = hundredths % 100
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}

/// `1234.5` as `1,234.50`.
package func formatMoney(_ value: Double) -> String {
    let cents = Int64((value * 100).rounded())
    let fraction = abs(cents % 100)
    return formatCount(Int(cents / 100)) + "." + (fraction < 10 ? "0" : "") + String(fraction)
}

import Hummingbird
import HummingbirdCore
import PostbackKit

/// `application/x-www-form-urlencoded` as the WHATWG URL Standard reads it: how a browser sends
/// a form, and how Python's `urlencode`, Go's `url.Values.Encode` and Java's `URLEncoder` write a
/// query string. `+` is a space and `%XX` a byte, in names and values alike, so `%2B` is a plus.
///
/// Every route that reads query parameters reads them through ``Request/formParameters``:
/// Hummingbird's `queryParameters` decodes `%XX` in values only and keeps `+` as a plus.
enum FormEncoding {
    /// The name-value pairs of `text` (a query string without its `?`, or a form body), decoded,
    /// in order; a name may repeat. Empty pairs (`a=1&&b=2`) are skipped; a pair without `=` has
    /// an empty value.
    static func parameters(_ text: Substring) -> FlatDictionary<Substring, Substring> {
        var pairs: [(key: Substring, value: Substring)] = []
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decoded(parts[0])
            let value = parts.count == 2 ? decoded(parts[1]) : ""
            pairs.append((key: name[...], value: value[...]))
        }
        return FlatDictionary(pairs)
    }

    /// `text` with `+` as a space and each `%XX` as its byte. As the standard reads it, a `%`
    /// not followed by two hex digits stays as it is, and bytes that are not UTF-8 become U+FFFD.
    static func decoded(_ text: Substring) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else {
            return String(text)
        }
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < input.count,
                let high = hexDigitValue(input[index + 1]), let low = hexDigitValue(input[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 2
            } else {
                bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

}

extension Request {
    /// The query string's parameters, form-decoded (``FormEncoding``).
    var formParameters: FlatDictionary<Substring, Substring> {
        FormEncoding.parameters(uri.query.map { $0[...] } ?? "")
    }
}

import PostbackKit

/// Where `postbackd forward` delivers, read from its config file:
/// `{"destinations": [{"name": "network", "url": "https://…", "payload": "raw", …}]}`.
package struct ForwardConfig: Sendable {
    package var destinations: [Destination]

    package struct Destination: Sendable {
        package enum Payload: String, Sendable {
            /// The postback's bytes exactly as received.
            case raw
            /// The export line (`postbackd export`) as JSON.
            case decoded
            /// Apple's postback as received, with the members named by ``Destination/fields``
            /// added beside Apple's (``EnrichedField``), so that its signature still verifies.
            case enriched
            /// The attribution postback of the open SKAN standard (``SKANStandardPostback``).
            case skanStandard = "skan-standard"
            /// A JSON object of the destination's own, filled from export's columns
            /// (``ForwardTemplate``).
            case template

            /// The names a config may give, in the order the docs list them.
            static let names = ["raw", "decoded", "enriched", "skan-standard", "template"]
        }

        /// Which postbacks go to a destination; by default production postbacks only.
        package struct Filter: Sendable {
            package var appIDs: Set<Int64>?
            package var adNetworkIDs: Set<String>?
            package var kinds: Set<String>?
            package var keySpaces: Set<String> = ["production"]
        }

        package struct Retry: Sendable {
            package var baseSeconds: Double = 1
            package var maxSeconds: Double = 3600
            package var giveUpHours: Double = 72

            package init(baseSeconds: Double = 1, maxSeconds: Double = 3600, giveUpHours: Double = 72) {
                self.baseSeconds = baseSeconds
                self.maxSeconds = maxSeconds
                self.giveUpHours = giveUpHours
            }

            /// The wait before attempt `attempt + 1` after `attempt` failures: exponential from
            /// ``baseSeconds``, capped at ``maxSeconds``, with full jitter (`unit` in [0, 1)).
            package func delaySeconds(afterFailures attempt: Int, unit: Double) -> Double {
                let exponential = baseSeconds * Double(1 << min(max(attempt - 1, 0), 40))
                let ceiling = min(maxSeconds, exponential)
                // Half fixed, half random: never zero, never in lockstep with other senders.
                return ceiling / 2 + ceiling / 2 * unit
            }
        }

        package var name: String
        package var url: String
        package var payload: Payload
        /// With ``Payload/enriched``: the members added, in this order.
        package var fields: [EnrichedField] = []
        /// With ``Payload/template``: the body's template.
        package var template: ForwardTemplate?
        package var filter = Filter()
        package var headers: [(name: String, value: String)] = []
        /// The environment variable holding the HMAC secret (never the secret itself).
        package var hmacSecretEnvironment: String?
        package var timeoutSeconds: Double = 10
        package var concurrency: Int = 8
        package var retry = Retry()
    }

    /// Why a config cannot be used: the JSON path and what is wrong.
    package struct Problem: CodedError {
        package typealias Code = ErrorCode<Self>

        package let code: Code
        /// The JSON path at fault (`$.destinations[0].url`).
        package let path: String
        /// What is wrong there.
        package let message: String
        /// What a person reads: the path, then what is wrong there.
        package var reason: String { "\(path): \(message)" }

        init(_ code: Code, path: String, message: String) {
            self.code = code
            self.path = path
            self.message = message
        }
    }

    /// Reads and checks a config; every problem is named with its JSON path.
    package static func parse(_ bytes: [UInt8]) throws(Problem) -> ForwardConfig {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw Problem(.notJSON, path: "$", message: "not valid JSON: \(error.message)")
        }
        guard case .object = root else { throw Problem(.invalidValue, path: "$", message: "expected an object") }
        guard case .array(let list)? = root["destinations"], !list.isEmpty else {
            throw Problem(.invalidValue, path: "$.destinations", message: "expected a non-empty array of destinations")
        }
        var destinations: [Destination] = []
        var names = Set<String>()
        for (index, value) in list.enumerated() {
            let path = "$.destinations[\(index)]"
            let destination = try Self.destination(value, path)
            guard names.insert(destination.name).inserted else {
                throw Problem(
                    .duplicateName,
                    path: path + ".name",
                    message: "\(destination.name) names two destinations"
                )
            }
            destinations.append(destination)
        }
        return ForwardConfig(destinations: destinations)
    }

    private static func destination(_ value: JSONValue, _ path: String) throws(Problem) -> Destination {
        guard case .object = value else { throw Problem(.invalidValue, path: path, message: "expected an object") }
        guard case .string(let name)? = value["name"], !name.isEmpty, name.utf8.count <= 100,
            name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw Problem(
                .invalidValue,
                path: path + ".name",
                message: "expected a name of 1 to 100 printable characters, no spaces"
            )
        }
        guard case .string(let url)? = value["url"], url.hasPrefix("http://") || url.hasPrefix("https://"),
            url.utf8.count <= 2048
        else {
            throw Problem(.invalidValue, path: path + ".url", message: "expected an http:// or https:// URL")
        }
        guard case .string(let payloadName)? = value["payload"],
            let payload = Destination.Payload(rawValue: payloadName)
        else {
            throw Problem(
                .invalidValue,
                path: path + ".payload",
                message: "expected one of " + Destination.Payload.names.map { "\"\($0)\"" }.joined(separator: ", ")
            )
        }
        var destination = Destination(name: name, url: url, payload: payload)
        destination.fields = try enrichedFields(value["fields"], path + ".fields", payload: payload)
        if let template = value["template"], template != .null {
            guard payload == .template else {
                throw Problem(.invalidValue, path: path + ".template", message: "only with \"payload\": \"template\"")
            }
            destination.template = try ForwardTemplate(template, path: path + ".template")
        } else if payload == .template {
            throw Problem(
                .invalidValue,
                path: path + ".template",
                message: "missing: \"payload\": \"template\" needs a template, a JSON object"
            )
        }
        if let filter = value["filter"], filter != .null {
            guard case .object = filter else {
                throw Problem(.invalidValue, path: path + ".filter", message: "expected an object")
            }
            destination.filter.appIDs = try integers(filter["app_ids"], path + ".filter.app_ids")
            destination.filter.adNetworkIDs = try strings(
                filter["ad_network_ids"],
                path + ".filter.ad_network_ids",
                allowed: nil
            )
            destination.filter.kinds = try strings(filter["kinds"], path + ".filter.kinds", allowed: ["skan", "aak"])
            if let spaces = try strings(
                filter["key_spaces"],
                path + ".filter.key_spaces",
                allowed: ["production", "test", "development"]
            ) {
                destination.filter.keySpaces = spaces
            }
        }
        if let headers = value["headers"], headers != .null {
            guard case .object(let members) = headers else {
                throw Problem(
                    .invalidValue,
                    path: path + ".headers",
                    message: "expected an object of header names and values"
                )
            }
            for (header, headerValue) in members {
                guard case .string(let text) = headerValue, isHeaderName(header), isHeaderValue(text) else {
                    throw Problem(
                        .invalidValue,
                        path: path + ".headers.\(header)",
                        message: "expected a header name with a string value"
                    )
                }
                let lowered = header.lowercased()
                guard
                    !["content-length", "host", "transfer-encoding", "postbackd-delivery-id", "postbackd-signature"]
                        .contains(lowered)
                else {
                    throw Problem(
                        .reservedHeader,
                        path: path + ".headers.\(header)",
                        message: "\(header) is set by postbackd"
                    )
                }
                destination.headers.append((header, text))
            }
        }
        if let secret = value["hmac_secret_env"], secret != .null {
            guard case .string(let variable) = secret, !variable.isEmpty,
                variable.utf8.allSatisfy({
                    ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F
                })
            else {
                throw Problem(
                    .invalidValue,
                    path: path + ".hmac_secret_env",
                    message: "expected the name of an environment variable (not the secret)"
                )
            }
            destination.hmacSecretEnvironment = variable
        }
        destination.timeoutSeconds =
            try number(value["timeout_seconds"], path + ".timeout_seconds", in: 0.1...600) ?? 10
        destination.concurrency = Int(try number(value["concurrency"], path + ".concurrency", in: 1...256) ?? 8)
        if let retry = value["retry"], retry != .null {
            guard case .object = retry else {
                throw Problem(.invalidValue, path: path + ".retry", message: "expected an object")
            }
            destination.retry.baseSeconds =
                try number(retry["base_seconds"], path + ".retry.base_seconds", in: 0.01...3600) ?? 1
            destination.retry.maxSeconds =
                try number(retry["max_seconds"], path + ".retry.max_seconds", in: 0.01...86_400) ?? 3600
            destination.retry.giveUpHours =
                try number(retry["give_up_hours"], path + ".retry.give_up_hours", in: 0...8760) ?? 72
            if destination.retry.maxSeconds < destination.retry.baseSeconds {
                throw Problem(.invalidValue, path: path + ".retry.max_seconds", message: "less than base_seconds")
            }
        }
        return destination
    }

    /// `fields` of an enriched destination: a non-empty array of distinct names from
    /// ``EnrichedField``; absent for every other payload.
    private static func enrichedFields(
        _ value: JSONValue?,
        _ path: String,
        payload: Destination.Payload
    ) throws(Problem) -> [EnrichedField] {
        let choices = EnrichedField.allCases.map(\.rawValue).joined(separator: ", ")
        guard let value, value != .null else {
            guard payload != .enriched else {
                throw Problem(
                    .invalidValue,
                    path: path,
                    message: "missing: \"payload\": \"enriched\" needs the fields to add (\(choices))"
                )
            }
            return []
        }
        guard payload == .enriched else {
            throw Problem(.invalidValue, path: path, message: "only with \"payload\": \"enriched\"")
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw Problem(.invalidValue, path: path, message: "expected a non-empty array of field names (\(choices))")
        }
        var fields: [EnrichedField] = []
        for (index, item) in items.enumerated() {
            guard case .string(let name) = item, let field = EnrichedField(rawValue: name) else {
                let found = if case .string(let name) = item { "\"\(name)\"" } else { item.kindName }
                throw Problem(
                    .invalidValue,
                    path: "\(path)[\(index)]",
                    message: "\(found) is not a field postbackd adds; the fields are \(choices)"
                )
            }
            guard !fields.contains(field) else {
                throw Problem(.invalidValue, path: "\(path)[\(index)]", message: "\(name) is named twice")
            }
            fields.append(field)
        }
        return fields
    }

    private static func number(
        _ value: JSONValue?,
        _ path: String,
        in range: ClosedRange<Double>
    ) throws(Problem) -> Double? {
        guard let value, value != .null else { return nil }
        guard case .number(let text) = value, let number = Double(text), range.contains(number) else {
            throw Problem(
                .invalidValue,
                path: path,
                message:
                    "expected a number from \(formatJSONNumber(range.lowerBound)) to \(formatJSONNumber(range.upperBound))"
            )
        }
        return number
    }

    private static func integers(_ value: JSONValue?, _ path: String) throws(Problem) -> Set<Int64>? {
        guard let value, value != .null else { return nil }
        guard case .array(let items) = value else {
            throw Problem(.invalidValue, path: path, message: "expected an array of app ids")
        }
        var result = Set<Int64>()
        for (index, item) in items.enumerated() {
            var id: Int64?
            switch item {
            case .number(let text), .string(let text): id = Int64(text)
            default: id = nil
            }
            guard let id else { throw Problem(.invalidValue, path: "\(path)[\(index)]", message: "expected an app id") }
            result.insert(id)
        }
        return result
    }

    private static func strings(
        _ value: JSONValue?,
        _ path: String,
        allowed: Set<String>?
    ) throws(Problem) -> Set<String>? {
        guard let value, value != .null else { return nil }
        guard case .array(let items) = value else {
            throw Problem(.invalidValue, path: path, message: "expected an array of strings")
        }
        var result = Set<String>()
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item, allowed.map({ $0.contains(text) }) ?? true else {
                let choices = allowed.map { " (" + $0.sorted().joined(separator: ", ") + ")" } ?? ""
                throw Problem(.invalidValue, path: "\(path)[\(index)]", message: "expected a string\(choices)")
            }
            result.insert(text)
        }
        return result
    }

    private static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 100
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F
            }
    }

    private static func isHeaderValue(_ value: String) -> Bool {
        value.utf8.count <= 4096 && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}

extension ForwardConfig.Destination.Filter {
    /// Whether a stored postback goes to the destination.
    package func admits(appID: Int64, adNetworkID: String, kind: String, keySpace: String) -> Bool {
        keySpaces.contains(keySpace) && (appIDs?.contains(appID) ?? true)
            && (adNetworkIDs?.contains(adNetworkID) ?? true) && (kinds?.contains(kind) ?? true)
    }
}

extension ForwardConfig.Destination {
    /// `Postbackd-Delivery-Id`: the same on every attempt of one postback to one destination.
    package static func deliveryID(dedupKey: [UInt8], destination: String) -> String {
        hexString(SHA256Digest(hashing: dedupKey + Array(destination.utf8)).bytes.prefix(16))
    }
}

extension ErrorCode where Domain == ForwardConfig.Problem {
    /// The file is not JSON.
    package static let notJSON = Self("notJSON")
    /// A member is missing, of the wrong kind or out of its range (a name, a URL, a payload,
    /// enriched `fields`, a template or one of its placeholders, a filter, a header, a variable
    /// name, a number, a retry schedule whose ceiling is below its base).
    package static let invalidValue = Self("invalidValue")
    /// Two destinations have one name.
    package static let duplicateName = Self("duplicateName")
    /// A header postbackd sets itself (`Content-Length`, `Host`, its delivery id and signature).
    package static let reservedHeader = Self("reservedHeader")
}

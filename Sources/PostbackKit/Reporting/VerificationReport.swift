/// Output formats for per-postback results.
package enum ResultFormat: String, Sendable, CaseIterable {
    /// One readable line per postback and a summary.
    case text
    /// JSON Lines: one object per postback.
    case json
}

/// Counts of verdicts over a run of `verify`.
package struct VerificationSummary: Sendable, Hashable {
    package var postbacks = 0
    package var valid = 0
    package var invalid = 0
    package var malformed = 0
    package var unsupported = 0
    /// Valid postbacks verified as test-mode (included in ``valid``).
    package var testMode = 0
    /// Valid AdAttributionKit postbacks verified with a development key (included in ``valid``).
    package var development = 0
    /// Inputs opened.
    package var files = 0
    /// Inputs that could not be read (an I/O error, not a verdict).
    package var unreadableFiles = 0

    package init() {}

    mutating func count(_ result: VerificationResult) {
        postbacks += 1
        switch result.verdict {
        case .valid:
            valid += 1
            if result.testMode { testMode += 1 }
            if result.development { development += 1 }
        case .invalid: invalid += 1
        case .malformed: malformed += 1
        case .unsupported: unsupported += 1
        }
    }

    /// Adds the verdicts counted in `other` (a batch's).
    mutating func add(_ other: VerificationSummary) {
        postbacks += other.postbacks
        valid += other.valid
        invalid += other.invalid
        malformed += other.malformed
        unsupported += other.unsupported
        testMode += other.testMode
        development += other.development
    }

    /// Whether every postback read was valid (vacuously true when none was read).
    package var allValid: Bool { valid == postbacks }

    /// `12 postbacks in 3 files: 10 valid (1 test mode), 1 invalid, 1 malformed, 0 unsupported`.
    package var text: String {
        let notes = [
            testMode > 0 ? "\(testMode) test mode" : nil, development > 0 ? "\(development) development" : nil,
        ]
        .compactMap { $0 }
        let test = notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")"
        var line =
            "\(postbacks) postback\(postbacks == 1 ? "" : "s") in \(files) file\(files == 1 ? "" : "s"): "
            + "\(valid) valid\(test), \(invalid) invalid, \(malformed) malformed, \(unsupported) unsupported"
        if unreadableFiles > 0 { line += "; \(unreadableFiles) unreadable input\(unreadableFiles == 1 ? "" : "s")" }
        return line
    }

    /// The summary as one JSON object.
    package var json: String {
        var object = JSONObjectWriter()
        object.add("postbacks", postbacks)
        object.add("valid", valid)
        object.add("invalid", invalid)
        object.add("malformed", malformed)
        object.add("unsupported", unsupported)
        object.add("test_mode", testMode)
        object.add("development", development)
        object.add("files", files)
        object.add("unreadable_files", unreadableFiles)
        return object.text
    }
}

/// How one result is printed by `postbackd verify`.
package enum VerificationReport {
    /// `path[2]: valid 4.0 com.example 6aafb7a5-… (apple-p256)`,
    /// `path: valid aak development.adattributionkit 85546EB7-… (apple-development-identifier/1, development)` or
    /// `path:7: malformed: app-id: expected an integer, found a string ("12")`.
    package static func textLine(_ location: EntryLocation, _ result: VerificationResult) -> String {
        var line = "\(location): \(result.verdict.rawValue)"
        let version = result.kind == .aak ? "aak" : result.identity.version
        let identity = [version, result.identity.adNetworkID, result.identity.transactionID]
            .compactMap { $0.map(visible) }
        if !identity.isEmpty { line += " " + identity.joined(separator: " ") }
        if result.verdict == .valid {
            if let key = result.keyName {
                let mode = result.testMode ? ", test mode" : result.development ? ", development" : ""
                line += " (\(key)\(mode))"
            }
            for warning in result.warnings { line += "; warning: \(warning)" }
        } else if let reason = result.reason {
            line += ": " + visible(reason)
        }
        return line
    }

    /// One JSON object: `source`, `index`, `line`, `form`, `verdict`, `kind`, `version`,
    /// `transaction_id` (AdAttributionKit: `postback-identifier`), `ad_network_id`, `field`,
    /// `reason`, `test_mode`, `development`, `key`, `warnings`; for a valid postback with its
    /// received time, `received_at`, `received_at_source`, `estimated_install_at`,
    /// `install_date`, `crowd_anonymity_tier` and `source_identifier_digits`; and with
    /// `explain` the signed message and its SHA-256, and how the install time and tier were
    /// inferred.
    package static func jsonLine(
        _ location: EntryLocation,
        _ result: VerificationResult,
        explain: Bool,
        models: ConversionModels? = nil,
        received: (UTCInstant, ReceivedTimeSource)? = nil
    ) -> String {
        var object = JSONObjectWriter()
        object.add("source", location.source)
        object.add("index", location.index)
        object.add("line", location.line)
        object.add("form", location.form.rawValue)
        addVerdict(result, to: &object)
        object.add("test_mode", result.testMode)
        object.add("development", result.development)
        object.add("key", result.keyName)
        object.add("warnings", strings: result.warnings)
        if let models, result.verdict == .valid, let postback = result.postback {
            let decoded = models.decode(postback, receivedAt: received.flatMap { $0.1 == .option ? $0.0 : nil })
            object.addRaw("decoded", json: decoded.json())
        }
        let inference = Self.inference(result, received: received)
        if let (instant, source) = received, let inference {
            object.add("received_at", instant.iso8601)
            object.add("received_at_source", source == .ingestion ? "now" : source.rawValue)
            object.add("estimated_install_at", inference.estimatedInstallAt.iso8601)
            object.add("install_date", inference.installDate.description)
            object.add("crowd_anonymity_tier", inference.crowdAnonymityTier)
            object.add("source_identifier_digits", inference.sourceIdentifierDigits)
        }
        if explain, var explanation = SignatureExplanation(result) {
            explanation.inference = inference
            object.addRaw("explain", json: explanation.json)
        }
        return object.text
    }

    /// Section 9's inferences for a valid postback received at `received`.
    static func inference(
        _ result: VerificationResult,
        received: (UTCInstant, ReceivedTimeSource)?
    )
        -> PostbackInference?
    {
        guard result.verdict == .valid, let postback = result.postback, let (instant, _) = received else { return nil }
        return PostbackInference(postback, receivedAt: instant)
    }

    /// `verdict`, `kind`, `version`, `transaction_id`, `ad_network_id`, `field` and `reason`:
    /// what `verify --format json` and `serve`'s answers both say of a postback.
    package static func addVerdict(_ result: VerificationResult, to object: inout JSONObjectWriter) {
        object.add("verdict", result.verdict.rawValue)
        object.add("kind", result.kind?.rawValue)
        object.add("version", result.identity.version)
        object.add("transaction_id", result.identity.transactionID)
        object.add("ad_network_id", result.identity.adNetworkID)
        object.add("field", result.field)
        object.add("reason", result.reason)
    }

    /// `    decoded: purchase ×1–2 (USD 5.00–10.00); revenue …` under a valid postback's line.
    /// `receivedAt`: `--received-at`, which picks the model in force then; nil: the newest.
    static func decodedText(
        _ result: VerificationResult,
        _ models: ConversionModels,
        receivedAt: UTCInstant?
    ) -> String? {
        guard result.verdict == .valid, let postback = result.postback else { return nil }
        let decoded = models.decode(postback, receivedAt: receivedAt)
        return "    decoded: "
            + decoded.text(
                appID: postback.appID,
                value: postback.conversionValue,
                sequenceIndex: postback.sequenceIndex
            )
    }

    /// The indented `--explain` block printed under a text line: the signature, then for a
    /// valid postback with its received time the inferred install time and tier.
    static func explanationText(
        _ result: VerificationResult,
        received: (UTCInstant, ReceivedTimeSource)? = nil
    ) -> String? {
        guard var explanation = SignatureExplanation(result) else { return nil }
        explanation.inference = inference(result, received: received)
        explanation.received = received
        return explanation.text
    }
}

/// What a person debugging a signature needs: the signed fields, the exact message with its
/// separators made visible, its SHA-256, and which key verified it.
struct SignatureExplanation {
    struct Message {
        var note: String
        var fields: [(field: String, value: String)]
        var bytes: [UInt8]
        var digest: String
    }

    let scheme: String
    let messages: [Message]
    let signatureLength: String
    let outcome: String
    /// A valid postback's inferences, and when it counts as received.
    var inference: PostbackInference?
    var received: (UTCInstant, ReceivedTimeSource)?

    init?(_ result: VerificationResult) {
        guard let postback = result.postback else { return nil }
        switch postback {
        case .skan(let postback):
            let curve = postback.version.curve
            scheme = "SKAdNetwork \(postback.version): \(curve) key, ECDSA with SHA-256; U+2063 shown as \\u2063"
            func message(_ omitting: Bool, _ note: String) -> Message {
                let bytes = postback.signedMessage(omittingSourceAppID: omitting)
                return Message(
                    note: note,
                    fields: postback.signedValues(omittingSourceAppID: omitting).map {
                        ($0.field, $0.value.description)
                    },
                    bytes: bytes,
                    digest: SHA256Digest(hashing: bytes).description
                )
            }
            var messages: [Message] = []
            if result.verdict == .valid && result.verifiedWithoutSourceAppID {
                messages.append(message(true, "as a test-mode device signs it: without source-app-id 0"))
            } else {
                messages.append(message(false, "as received"))
                if result.verdict != .valid && postback.sourceAppID == 0 && postback.version >= .v2_0 {
                    messages.append(message(true, "test-mode retry: without source-app-id 0"))
                }
            }
            self.messages = messages
            signatureLength =
                Base64.decode(postback.attributionSignature.utf8).map { "\($0.count) bytes DER" } ?? "not base64"
        case .aak(let postback):
            scheme =
                "AdAttributionKit JWS: alg \(visible(postback.algorithm)), kid \(visible(postback.keyID)); ES256 over header.payload as received"
            let bytes = Array(postback.signingInput.utf8)
            let header = (try? AAKPostbackDecoder.segmentJSON(postback.jws, 0, "header")) ?? []
            let payload = (try? AAKPostbackDecoder.segmentJSON(postback.jws, 1, "payload")) ?? []
            messages = [
                Message(
                    note: "JWS signing input",
                    fields: [
                        ("header", String(decoding: header, as: UTF8.self)),
                        ("payload", String(decoding: payload, as: UTF8.self)),
                    ],
                    bytes: bytes,
                    digest: SHA256Digest(hashing: bytes).description
                )
            ]
            signatureLength =
                Base64.decode(postback.signatureSegment.utf8, alphabet: .url).map { "\($0.count) bytes R‖S" }
                ?? "not base64url"
        }
        if result.verdict == .valid {
            let mode = result.testMode ? " (test mode)" : result.development ? " (development key)" : ""
            outcome = "verifies with \(result.keyName ?? "?")\(mode)"
        } else {
            outcome = result.reason ?? "does not verify"
        }
    }

    var text: String {
        var lines: [String] = ["    " + scheme]
        for message in messages {
            lines.append("    signed message, \(message.note) (\(message.bytes.count) bytes):")
            for entry in message.fields {
                lines.append("      \(pad(entry.field, 25)) \(visible(entry.value))")
            }
            lines.append("      " + visible(String(decoding: message.bytes, as: UTF8.self)))
            lines.append("      sha256 \(message.digest)")
        }
        lines.append("    signature (\(signatureLength)): \(outcome)")
        if let inference, let (instant, source) = received {
            let from =
                switch source {
                case .option: "--received-at"
                case .timestamp: "the forwarder's timestamp"
                case .ingestion, .http: "now"
                }
            lines.append(
                "    estimated install: \(inference.estimatedInstallAt.iso8601), install date \(inference.installDate) (received \(instant.iso8601), from \(from), \(inference.installBasis))"
            )
            lines.append(
                "    crowd-anonymity tier: \(inference.crowdAnonymityTier.map(String.init) ?? "none") (\(inference.tierBasis)); source identifier: \(inference.sourceIdentifierDigits.map { "\($0) digits" } ?? "none (campaign-id before 4.0)")"
            )
        }
        return lines.joined(separator: "\n")
    }

    var json: String {
        var object = JSONObjectWriter()
        object.asciiOnly = true
        object.add("scheme", scheme)
        var list: [String] = []
        for message in messages {
            var entry = JSONObjectWriter()
            entry.asciiOnly = true
            entry.add("note", message.note)
            var fields = JSONObjectWriter()
            fields.asciiOnly = true
            for field in message.fields { fields.add(field.field, field.value) }
            entry.addRaw("fields", json: fields.text)
            entry.add("message", String(decoding: message.bytes, as: UTF8.self))
            entry.add("bytes", message.bytes.count)
            entry.add("sha256", message.digest)
            list.append(entry.text)
        }
        object.addRaw("messages", json: "[" + list.joined(separator: ",") + "]")
        object.add("signature", signatureLength)
        object.add("outcome", outcome)
        if let inference {
            object.add("install_offset_hours", inference.installOffsetHours)
            object.add("tier_basis", inference.tierBasis)
        }
        return object.text
    }
}

/// `text` with U+2063 and every other invisible or non-ASCII character written as `\uXXXX`,
/// so that a person sees exactly what was signed.
func visible(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value >= 0x20 && scalar.value < 0x7F {
            out.unicodeScalars.append(scalar)
        } else if scalar.value > 0xFFFF {
            out += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            out += "\\u" + hex4(UInt16(scalar.value)).lowercased()
        }
    }
    return out
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

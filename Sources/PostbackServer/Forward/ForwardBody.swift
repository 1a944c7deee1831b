import PostbackKit
import PostbackStore

/// A member `"payload": "enriched"` adds to Apple's postback, as ad networks add theirs when they
/// forward postbacks to a measurement partner (`../shared/spec/postbacks.md`, section 3:
/// forwarders' fields are ignored for verification).
package enum EnrichedField: String, Sendable, CaseIterable {
    /// The client address stored with the postback (as `serve --client-address` kept it: whole
    /// or truncated); a hashed or dropped address is unknown.
    case ipAddress = "ip-address"
    /// When postbackd received the postback, in milliseconds since 1970-01-01T00:00:00Z, as the
    /// open SKAN standard's example postback carries it (https://github.com/singular-labs/skan,
    /// version 1.1, section 5.1: `"timestamp": 1593760672497`).
    case timestamp
    /// The campaign of the postback's campaign mapping row (`postbackd campaigns`); the
    /// mapping has one campaign column, sent under either name.
    case partnerCampaignID = "partner-campaign-id"
    case partnerCampaignName = "partner-campaign-name"
    /// The mapping row's ad group.
    case partnerAdGroup = "partner-ad-group"
    /// The mapping row's creative.
    case partnerCreative = "partner-creative"
}

/// What postbackd knows of a stored postback beyond Apple's fields: its client address, when it
/// was received, and its campaign mapping row.
struct PartnerValues {
    /// The template placeholders filled from the campaign mapping.
    static let mappingNames = ["campaign", "ad_group", "creative"]

    /// The stored client address, when it is one (not a keyed hash of one).
    var ipAddress: String?
    /// `received_at` in milliseconds since the epoch.
    var timestampMs: Int64?
    /// The row of ``CampaignMappings/lookup(network:identifier:installDate:)``, the one
    /// `aggregate` takes (`../shared/spec/postbacks.md`, section 9).
    var mapping: CampaignMapping?

    init(_ row: ExportRow, campaigns: CampaignMappings) {
        func text(_ name: String) -> String? {
            guard case .text(let value)? = row.postbackValue(name) else { return nil }
            return value
        }
        if let address = text("client_address"), !address.isEmpty, !address.hasPrefix("hmac-sha256:") {
            ipAddress = address
        }
        timestampMs = text("received_at").flatMap(UTCInstant.init(iso8601:))?.milliseconds
        var identifier = text("source_identifier")
        if identifier == nil, case .integer(let campaign)? = row.postbackValue("campaign_id") {
            identifier = String(campaign)
        }
        if !campaigns.isEmpty, let network = text("ad_network_id"), let day = text("install_date").flatMap(UTCDay.init),
            let found = campaigns.lookup(network: network, identifier: identifier, installDate: day)
        {
            mapping = campaigns.rows[found]
        }
    }

    /// A template placeholder's value: a column, or a mapping's campaign, ad group or creative.
    func value(_ name: String, of row: ExportRow) -> ExportValue {
        switch name {
        case "campaign": mapping.map { .text($0.campaign) } ?? .null
        case "ad_group": mapping?.adGroup.map { .text($0) } ?? .null
        case "creative": mapping?.creative.map { .text($0) } ?? .null
        default: row.postbackValue(name) ?? .null
        }
    }

    /// An enriched field's value as JSON text; nil when unknown (then it is left out).
    func json(_ field: EnrichedField) -> String? {
        switch field {
        case .ipAddress: ipAddress.map { jsonQuoted($0) }
        case .timestamp: timestampMs.map { String($0) }
        case .partnerCampaignID, .partnerCampaignName: mapping.map { jsonQuoted($0.campaign) }
        case .partnerAdGroup: mapping?.adGroup.map { jsonQuoted($0) }
        case .partnerCreative: mapping?.creative.map { jsonQuoted($0) }
        }
    }
}

/// The body of one delivery, or why there is none.
package enum ForwardBody: Equatable {
    case body([UInt8])
    /// Recorded as the delivery's answer; the delivery is rejected.
    case refused(String)

    static let rawPruned = "postbackd: the postback's raw bytes were pruned (retention raw) before it was delivered"

    /// The body `destination` takes for `row`.
    static func make(
        _ destination: ForwardConfig.Destination,
        row: ExportRow,
        writer: ExportWriter,
        campaigns: CampaignMappings
    ) -> ForwardBody {
        switch destination.payload {
        case .raw:
            return row.raw.isEmpty ? .refused(rawPruned) : .body(row.raw)
        case .decoded:
            return .body(Array(writer.jsonLine(row).utf8))
        case .enriched:
            guard !row.raw.isEmpty else { return .refused(rawPruned) }
            let values = PartnerValues(row, campaigns: campaigns)
            let members = destination.fields.compactMap { field in
                values.json(field).map { (name: field.rawValue, json: $0) }
            }
            guard let body = spliced(row.raw, members) else {
                return .refused("postbackd: the postback is not a JSON object; nothing can be added to it")
            }
            return .body(body)
        case .skanStandard:
            guard !row.raw.isEmpty else { return .refused(rawPruned) }
            return .body(
                SKANStandardPostback.body(row, values: PartnerValues(row, campaigns: campaigns), writer: writer)
            )
        case .template:
            guard let template = destination.template else { return .refused("postbackd: no template") }
            let values = PartnerValues(row, campaigns: campaigns)
            let body = template.render { values.value($0, of: row) }
            guard body.count <= ForwardTemplate.maximumBodyBytes else {
                return .refused(
                    "postbackd: the template gives a body of \(body.count) bytes; at most \(ForwardTemplate.maximumBodyBytes)"
                )
            }
            return .body(body)
        }
    }

    /// `object` (a JSON object's text) with `members` (names and JSON values) added after its
    /// last member, every byte of it otherwise kept: Apple's values stay exactly as signed
    /// (numbers as written, strings byte for byte). A member whose name the object already has
    /// is left out, never added twice nor replacing Apple's. Nil when `object` is not a JSON
    /// object.
    package static func spliced(_ object: [UInt8], _ members: [(name: String, json: String)]) -> [UInt8]? {
        guard case .object(let existing)? = try? JSONValue.parse(object) else { return nil }
        let names = Set(existing.map(\.key))
        let added = members.filter { !names.contains($0.name) }
        guard !added.isEmpty else { return object }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let close = object.lastIndex(where: { !isSpace($0) }), object[close] == UInt8(ascii: "}"),
            let last = object[..<close].lastIndex(where: { !isSpace($0) })
        else { return nil }
        let text =
            (existing.isEmpty ? "" : ",") + added.map { jsonQuoted($0.name) + ":" + $0.json }.joined(separator: ",")
        var result = Array(object[...last])
        result += Array(text.utf8)
        result += object[(last + 1)...]
        return result
    }
}

/// `"payload": "skan-standard"`: the attribution postback of the open SKAN standard, "SKAN: A
/// standard for the implementation of SKAdNetwork", version 1.1, section 5.1
/// (https://github.com/singular-labs/skan). The standard names `attribution_type`
/// (`skadnetwork`), `skan_postback` (the base64 of the postback's JSON as received), `revenue`
/// and `events`, and says the other fields (app, timestamp, IP address, country) are derived
/// from the postback without naming them; postbackd names those, and the campaign mapping's.
enum SKANStandardPostback {
    /// One JSON object:
    /// - `attribution_type`: `skadnetwork` (the standard's); `adattributionkit` for an
    ///   AdAttributionKit postback (which the standard predates).
    /// - `skan_postback`: the base64 (standard alphabet, padded) of the postback's bytes as
    ///   received, so that its signature verifies on the decoded bytes.
    /// - `app_id`, `timestamp` (milliseconds since the epoch, received), `ip_address`,
    ///   `country` (the postback's `country-code`), `partner_campaign`, `partner_ad_group`,
    ///   `partner_creative`: each `null` when unknown.
    /// - `events`: the names of the events the app's model decodes the value to (`[]` for a
    ///   value mapped to none), `null` when it decodes to none (unmapped, null, no model).
    /// - `revenue`: the decoded revenue range by currency, `{"USD": {"min": 5, "max": 10}}`
    ///   (summed over the events), `null` when there is none.
    static func body(_ row: ExportRow, values: PartnerValues, writer: ExportWriter) -> [UInt8] {
        func text(_ name: String) -> String? {
            guard case .text(let value)? = row.postbackValue(name) else { return nil }
            return value
        }
        var object = JSONObjectWriter()
        object.add("attribution_type", text("kind") == "aak" ? "adattributionkit" : "skadnetwork")
        object.add("skan_postback", Base64.encode(row.raw))
        if case .integer(let app)? = row.postbackValue("app_id") {
            object.add("app_id", app)
        } else {
            object.addRaw("app_id", json: "null")
        }
        object.add("timestamp", values.timestampMs)
        object.add("ip_address", values.ipAddress)
        object.add("country", text("country_code"))
        object.add("partner_campaign", values.mapping?.campaign)
        object.add("partner_ad_group", values.mapping?.adGroup)
        object.add("partner_creative", values.mapping?.creative)
        guard case .mapped(let events) = writer.decode(row) else {
            object.addRaw("events", json: "null")
            object.addRaw("revenue", json: "null")
            return Array(object.text.utf8)
        }
        object.add("events", strings: events.map(\.name))
        var revenue: [String: (min: Int64, max: Int64)] = [:]
        var overflow = false
        for event in events {
            guard let range = event.revenue else { continue }
            let sum = revenue[range.currency] ?? (0, 0)
            let low = sum.min.addingReportingOverflow(range.minMicros)
            let high = sum.max.addingReportingOverflow(range.maxMicros)
            overflow = overflow || low.overflow || high.overflow
            revenue[range.currency] = (low.partialValue, high.partialValue)
        }
        // A sum past Int64's micros (a model's ranges in the quadrillions) is no revenue to send.
        if revenue.isEmpty || overflow {
            object.addRaw("revenue", json: "null")
        } else {
            var byCurrency = JSONObjectWriter()
            for currency in revenue.keys.sorted() {
                guard let range = revenue[currency] else { continue }
                var item = JSONObjectWriter()
                item.add("min", units(Double(range.min)))
                item.add("max", units(Double(range.max)))
                byCurrency.addRaw(currency, json: item.text)
            }
            object.addRaw("revenue", json: byCurrency.text)
        }
        return Array(object.text.utf8)
    }
}

extension SKANPostback {
    /// The postback as a JSON object with Apple's field names, in the order Apple's examples
    /// use, on one line. Fields the version does not define are left out.
    ///
    /// - Parameter extraFields: JSON members appended as they are (forwarder fields), e.g.
    ///   `("timestamp", "1613095729")`.
    package func jsonText(extraFields: [(name: String, json: String)] = []) -> String {
        var object = JSONObjectWriter()
        if hasVersionField || version != .v1_0 { object.add("version", version.rawValue) }
        object.add("ad-network-id", adNetworkID)
        if let campaignID { object.add("campaign-id", campaignID) }
        if let sourceIdentifier { object.add("source-identifier", sourceIdentifier) }
        object.add("app-id", appID)
        object.add("transaction-id", transactionID)
        if let redownload { object.add("redownload", redownload) }
        if let sourceAppID { object.add("source-app-id", sourceAppID) }
        if let sourceDomain { object.add("source-domain", sourceDomain) }
        if let fidelityType { object.add("fidelity-type", fidelityType) }
        if let didWin { object.add("did-win", didWin) }
        if version == .v4_0 { object.add("postback-sequence-index", postbackSequenceIndex) }
        switch conversionValue {
        case .fine(let value): object.add("conversion-value", value)
        case .coarse(let value): object.add("coarse-conversion-value", value.rawValue)
        case nil: break
        }
        if let countryCode { object.add("country-code", countryCode) }
        object.add("attribution-signature", attributionSignature)
        for field in extraFields { object.addRaw(field.name, json: field.json) }
        return object.text
    }
}

import PostbackKit

/// Builds well-formed postbacks of every version for tests, signed with the test keys.
package enum SamplePostback {
    /// A postback of `version` with every field its version requires, and the optional signed
    /// field (`source-app-id`, or `source-domain` in 4.0) when `withOptional`.
    package static func make(
        _ version: SKANVersion,
        withOptional: Bool = true,
        transactionID: String = "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28",
        conversionValue: ConversionValue? = .fine(20),
        sequenceIndex: Int = 0
    ) -> SKANPostback {
        let four = version == .v4_0
        return SKANPostback(
            version: version,
            hasVersionField: version != .v1_0,
            adNetworkID: "example123.skadnetwork",
            campaignID: four ? nil : 42,
            sourceIdentifier: four ? (sequenceIndex == 0 ? "5239" : "52") : nil,
            appID: 525_463_029,
            transactionID: transactionID,
            redownload: version >= .v2_0 ? false : nil,
            sourceAppID: withOptional && version >= .v2_0 && !four ? 1_234_567_891 : nil,
            sourceDomain: withOptional && four ? "example.com" : nil,
            fidelityType: version >= .v2_2 ? 1 : nil,
            didWin: version >= .v3_0 ? true : nil,
            postbackSequenceIndex: sequenceIndex,
            conversionValue: version == .v1_0 ? nil : conversionValue,
            countryCode: nil,
            attributionSignature: "",
            forwarderTimestamp: nil
        )
    }

    /// `make(...)` signed with the test keys, as JSON text.
    package static func signedJSON(
        _ version: SKANVersion,
        withOptional: Bool = true,
        transactionID: String = "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28",
        conversionValue: ConversionValue? = .fine(20),
        sequenceIndex: Int = 0,
        extraFields: [(name: String, json: String)] = []
    ) throws -> String {
        let postback = make(
            version,
            withOptional: withOptional,
            transactionID: transactionID,
            conversionValue: conversionValue,
            sequenceIndex: sequenceIndex
        )
        return try TestKeys.signer.signed(postback).jsonText(extraFields: extraFields)
    }
}

import PostbackKit

/// The key space a stored postback claims its dedup key in.
///
/// Test-mode SKAdNetwork postbacks and AdAttributionKit development-key postbacks claim keys in
/// spaces of their own. Both can be made from a genuine postback by someone who relays it (a
/// `source-app-id` of 0 can be added to any postback signed without a source app, and any phone
/// in Developer Mode can sign a development postback with any identifier), so letting them
/// claim the production key would let a forgery suppress the genuine postback. They never
/// count as installs, so keeping them apart never counts anything twice.
enum KeySpace: String, Sendable, Hashable {
    case production, test, development

    init(_ result: VerificationResult) {
        self = result.development ? .development : result.testMode ? .test : .production
    }
}

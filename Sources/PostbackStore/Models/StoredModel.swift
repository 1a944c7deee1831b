import PostbackKit

/// A conversion model as stored: one of its app's timeline (``ConversionModels``).
package struct StoredModel: Sendable {
    package var model: ConversionModel
    /// SHA-256 of the model's JSON text.
    package var sha256: String
    /// The file it was added from.
    package var source: String
    package var addedAt: String
    /// The app's bundle identifier, when recorded (`models add --bundle-id`).
    package var bundleID: String?
    /// When it is in force from; nil: from the beginning. The first model of a timeline is in
    /// force from the beginning whatever this says.
    package var effectiveFrom: UTCInstant?
    /// The postbacks it decodes.
    package var conversionType: ModelConversionType = .install

    /// As its timeline holds it.
    package var timelineModel: TimelineModel {
        TimelineModel(model, effectiveFrom: effectiveFrom, conversionType: conversionType)
    }
}

extension StoredModel {
    /// Whether `app` names this model's app: its App Store id, or its bundle identifier.
    package func matches(_ app: String) -> Bool {
        Int64(app) == model.appID || (bundleID != nil && app == bundleID)
    }
}

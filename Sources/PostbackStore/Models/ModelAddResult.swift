import PostbackKit

/// What adding a model did, and which days received it changes.
package struct ModelAddResult: Sendable, Hashable {
    package var outcome: ModelAddOutcome
    package var effectiveFrom: UTCInstant?
    package var conversionType: ModelConversionType
    /// The first and last day received whose decoding (or `model_ambiguous` count) the model
    /// changes: every day when `everyDay`; from the beginning to `to` when `from` is nil; from
    /// `from` on when `to` is nil.
    package var everyDay = false
    package var from: UTCDay?
    package var to: UTCDay?
}

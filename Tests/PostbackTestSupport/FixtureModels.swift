/// Conversion models whose decodings tests compute by hand.
package enum FixtureModels {
    /// App 111: fine 1 → tutorial_complete ×1; fine 20 → purchase ×1–2, USD 5–10; fine 30 →
    /// purchase ×2, EUR 8 and level ×1; postback 0 coarse: low → session, medium → purchase
    /// USD 1–20, high → purchase USD 50; postback 1 coarse: medium → renewal EUR 2–4; nothing
    /// for postback 2.
    package static let app111 = """
        {"appId": "111", "measurementWindowHours": 48,
         "fineGrainedConversionValueMappings": [
           {"fineGrainedConversionValue": 1, "conversionValueMapping": {"mappedEvents": [{"mappedEventName": "tutorial_complete", "eventCounter": "1"}]}},
           {"fineGrainedConversionValue": 20, "conversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD",
              "eventRevenueRange": {"minEventRevenue": 5.0, "maxEventRevenue": 10.0}, "eventOccurrenceRange": {"minEventCount": "1", "maxEventCount": "2"}}]}},
           {"fineGrainedConversionValue": 30, "conversionValueMapping": {"mappedEvents": [
              {"mappedEventName": "purchase", "currencyCode": "EUR", "eventRevenueValue": 8, "eventCounter": 2},
              {"mappedEventName": "level"}]}}],
         "postbackMappings": [
           {"postbackSequenceIndex": 0, "coarseGrainedConversionValueMappings": {
              "lowConversionValueMapping": {"mappedEvents": [{"mappedEventName": "session"}]},
              "mediumConversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD", "eventRevenueRange": {"minEventRevenue": 1, "maxEventRevenue": 20}}]},
              "highConversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD", "eventRevenueValue": 50}]}}},
           {"postbackSequenceIndex": 1, "coarseGrainedConversionValueMappings": {
              "mediumConversionValueMapping": {"mappedEvents": [{"mappedEventName": "renewal", "currencyCode": "EUR", "eventRevenueRange": {"minEventRevenue": 2, "maxEventRevenue": 4}}]}}}]}
        """
}

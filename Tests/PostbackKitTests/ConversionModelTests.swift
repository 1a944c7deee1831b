import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

@Suite("Conversion models")
struct ConversionModelTests {
    private func problems(_ json: String) -> [String] {
        do {
            _ = try ConversionModelParser.parse(Array(json.utf8))
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("the spec's example model reads as written")
    func specExample() throws {
        let model = try ConversionModelParser.parse(Array(FixtureModels.app111.utf8))
        #expect(model.appID == 111)
        #expect(model.measurementWindowHours == 48)
        #expect(model.fineValues.keys.sorted() == [1, 20, 30])
        let purchase = try #require(model.fineValues[20]?.events.first)
        #expect(purchase.occurrences == CountRange(min: 1, max: 2))
        #expect(purchase.revenue == RevenueRange(currency: "USD", minMicros: 5_000_000, maxMicros: 10_000_000))
        let thirty = try #require(model.fineValues[30]?.events)
        #expect(thirty[0].occurrences == CountRange(min: 2, max: 2), "eventCounter n gives (n, n)")
        #expect(
            thirty[0].revenue == RevenueRange(currency: "EUR", minMicros: 8_000_000, maxMicros: 8_000_000),
            "eventRevenueValue v gives (v, v)"
        )
        #expect(thirty[1].occurrences == CountRange(min: 1, max: 1), "no occurrence fields: once")
        #expect(thirty[1].revenue == nil)
        #expect(model.coarseValues[0]?[.high]?.events.first?.revenue?.minMicros == 50_000_000)
        #expect(model.coarseValues[1]?[.low] == nil)
        #expect(model.coarseValues[2] == nil)
    }

    @Test("the API-wrapped form and 64-bit integers written as strings are accepted")
    func wrapped() throws {
        let wrapped =
            "{\"resourceName\": \"customers/1/customerSkAdNetworkConversionValueSchemas/111\", \"schema\": \(FixtureModels.app111)}"
        #expect(
            try ConversionModelParser.parse(Array(wrapped.utf8))
                == ConversionModelParser.parse(Array(FixtureModels.app111.utf8))
        )
        let numbers = try ConversionModelParser.parse(
            Array("{\"appId\": 42, \"measurementWindowHours\": \"24\", \"unknownField\": [1]}".utf8)
        )
        #expect(numbers.appID == 42)
        #expect(numbers.measurementWindowHours == 24)
    }

    @Test("a sample model file is read from SamplePostbacks/models, and all of them are valid")
    func samples() throws {
        let folder = Repository.path("SamplePostbacks/models")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 4)
        for file in files {
            #expect(throws: Never.self) { try ConversionModelFile.read(file: folder + "/" + file) }
        }
    }

    static let invalid: [(String, String, String)] = [
        (
            "fine value 64", #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":64}]}"#,
            "$.fineGrainedConversionValueMappings[0].fineGrainedConversionValue: 64 is not a fine conversion value (0–63)"
        ),
        (
            "fine value twice",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":3},{"fineGrainedConversionValue":3}]}"#,
            "$.fineGrainedConversionValueMappings[1].fineGrainedConversionValue: fine value 3 is mapped more than once"
        ),
        (
            "sequence index 3", #"{"appId":"1","postbackMappings":[{"postbackSequenceIndex":3}]}"#,
            "$.postbackMappings[0].postbackSequenceIndex: 3 is not a postback sequence index (0–2)"
        ),
        (
            "two revenue forms",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","currencyCode":"USD","eventRevenueValue":5,"eventRevenueRange":{"minEventRevenue":1,"maxEventRevenue":2}}]}}]}"#,
            "$.fineGrainedConversionValueMappings[0].conversionValueMapping.mappedEvents[0]: sets both eventRevenueRange and eventRevenueValue"
        ),
        (
            "two count forms",
            #"{"appId":"1","postbackMappings":[{"postbackSequenceIndex":1,"coarseGrainedConversionValueMappings":{"lowConversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","eventCounter":"2","eventOccurrenceRange":{"minEventCount":"1","maxEventCount":"3"}}]}}}]}"#,
            "$.postbackMappings[0].coarseGrainedConversionValueMappings.lowConversionValueMapping.mappedEvents[0]: sets both eventOccurrenceRange and eventCounter"
        ),
        (
            "min above max",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","currencyCode":"USD","eventRevenueRange":{"minEventRevenue":10,"maxEventRevenue":5}}]}}]}"#,
            "eventRevenueRange: minEventRevenue 10 is greater than maxEventRevenue 5"
        ),
        (
            "negative revenue",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","currencyCode":"USD","eventRevenueValue":-1}]}}]}"#,
            "eventRevenueValue: -1 is negative"
        ),
        (
            "negative count",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","eventCounter":"-2"}]}}]}"#,
            "eventCounter: -2 is negative"
        ),
        (
            "revenue without currency",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","eventRevenueValue":5}]}}]}"#,
            "mappedEvents[0].currencyCode: missing: an event with revenue needs its currency"
        ),
        (
            "bad currency",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"mappedEventName":"p","currencyCode":"dollars","eventRevenueValue":5}]}}]}"#,
            "currencyCode: expected a three-letter ISO 4217 code"
        ),
        (
            "no event name",
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":1,"conversionValueMapping":{"mappedEvents":[{"eventCounter":"1"}]}}]}"#,
            "mappedEvents[0].mappedEventName: missing"
        ),
        (
            "two lock windows",
            #"{"appId":"1","postbackMappings":[{"postbackSequenceIndex":0,"lockWindowFineConversionValue":3,"lockWindowEvent":"x"}]}"#,
            "$.postbackMappings[0]: sets lockWindowFineConversionValue and lockWindowEvent"
        ),
        ("no app id", #"{"fineGrainedConversionValueMappings":[]}"#, "$.appId: missing"),
        ("app id not a number", #"{"appId":"my-app"}"#, "$.appId: expected an integer"),
        ("not an object", #"[1, 2]"#, "$[0]: expected a conversion value schema object"),
    ]

    @Test("invalid models are refused with the JSON path of the problem", arguments: 0..<invalid.count)
    func invalidModels(_ index: Int) throws {
        let (what, json, expected) = Self.invalid[index]
        let found: [String]
        do {
            _ = try ConversionModelParser.parseAll(Array(json.utf8))
            found = []
        } catch {
            found = error.problems.map(\.description)
        }
        #expect(found.contains { $0.contains(expected) }, "\(what): \(found)")
    }

    @Test("every problem is reported, not just the first")
    func allProblems() {
        let json =
            #"{"appId":"1","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":70},{"fineGrainedConversionValue":-1}],"postbackMappings":[{"postbackSequenceIndex":9}]}"#
        #expect(problems(json).count == 3)
        #expect(problems("{not json").first?.hasPrefix("line 1, column 2: not valid JSON") == true)
        #expect(problems(#"{"appId":"1","appId":"2"}"#).first?.contains("duplicate key \"appId\"") == true)
    }

    @Test("decoding follows the spec's rules")
    func decoding() throws {
        let model = try ConversionModelParser.parse(Array(FixtureModels.app111.utf8))
        let models = ConversionModels([model])
        #expect(models.decode(appID: 111, value: nil, sequenceIndex: 0) == .null)
        #expect(models.decode(appID: 999, value: .fine(20), sequenceIndex: 0) == .unmodelled)
        #expect(models.decode(appID: 111, value: .fine(21), sequenceIndex: 0) == .unmapped)
        #expect(
            models.decode(appID: 111, value: .fine(20), sequenceIndex: 1) == .unmapped,
            "fine values decode postback 0 only"
        )
        #expect(models.decode(appID: 111, value: .coarse(.low), sequenceIndex: 1) == .unmapped)
        #expect(
            models.decode(appID: 111, value: .coarse(.medium), sequenceIndex: 1)
                == .mapped(model.coarseValues[1]?[.medium]?.events ?? [])
        )
        guard case .mapped(let events) = models.decode(appID: 111, value: .fine(20), sequenceIndex: 0) else {
            Issue.record("fine 20 is mapped")
            return
        }
        #expect(events.map(\.name) == ["purchase"])
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension AppleAdsTests {
    // MARK: The stand-in

    struct Request: Sendable {
        var token: String
        var contentType: String?
        var path: String
        var at: Date
        var status: Int
    }

    /// Apple's endpoint, by scenario:
    /// - `record-`: 200 at once, a click-through install with a detailed payload (clickDate) and
    ///   a field Apple may add later;
    /// - `twice404-`: 404 twice, then a redownload without dates;
    /// - `invalid-`: 400; `organic-`: 200 `attribution: false`; `forever404-`: 404 always;
    /// - `unavailable-`: 500 once, then a view-through preorder;
    /// - `odd-`: 200 with undocumented conversionType and claimType values;
    /// - `PreOrder-`, `PREORDER-`: pre-orders as Apple's examples and in another case;
    ///   `devtest-`: the developer-mode test record; `targeted-`: `attribution: false` (a
    ///   campaign with age or gender targeting); `placement-`: a documented supplyPlacement;
    /// - `slow-`: 200 after a second; held past its limit by the gate given (then answered 503
    ///   and not recorded).
    final class StandIn: Sendable {
        final class Log: Sendable {
            let requests = Mutex<[Request]>([])
        }

        private let log = Log()
        let port: Int
        private let task: Task<Void, any Error>

        init(slowGate: Gate? = nil) async throws {
            let log = self.log
            let router = Router()
            router.post("/api/v1") { request, _ -> Response in
                let body = try await request.body.collect(upTo: 1 << 16)
                let token = String(buffer: body)
                if token.hasPrefix("slow-"), let slowGate, await !slowGate.pass() {
                    return Response(status: .serviceUnavailable)
                }
                let seen = log.requests.withLock { log in log.filter { $0.token == token }.count }
                let (status, record) = Self.answer(token, seen: seen)
                if token.hasPrefix("slow-") { try? await Task.sleep(for: .seconds(1)) }
                log.requests.withLock {
                    $0.append(
                        Request(
                            token: token,
                            contentType: request.headers[.contentType],
                            path: request.uri.path,
                            at: Date(),
                            status: status
                        )
                    )
                }
                return Response(
                    status: HTTPResponse.Status(code: status),
                    headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: record ?? ""))
                )
            }
            (port, task) = await runOnLoopback(router, label: "apple-stand-in")
        }

        var endpoint: String { "http://127.0.0.1:\(port)/api/v1/" }

        static let record = """
            {"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download",\
            "clickDate":"2026-11-20T10:15Z","claimType":"Click","adGroupId":542317095,"countryOrRegion":"US",\
            "keywordId":87675432,"adId":542317136,"supplyPlacement":"search-results","someFutureField":{"a":1}}
            """

        static func answer(_ token: String, seen: Int) -> (Int, String?) {
            switch token.prefix(while: { $0 != "-" }) {
            case "record", "slow": (200, record)
            case "twice404":
                seen < 2
                    ? (404, nil)
                    : (
                        200,
                        #"{"attribution":true,"orgId":40669820,"campaignId":542370539,"adGroupId":7,"conversionType":"Redownload","countryOrRegion":"GB"}"#
                    )
            case "invalid": (400, nil)
            case "organic": (200, #"{"attribution":false}"#)
            case "forever404": (404, nil)
            case "unavailable":
                seen < 1
                    ? (500, nil)
                    : (
                        200,
                        #"{"attribution":true,"orgId":40669820,"campaignId":99,"conversionType":"preorder","claimType":"Impression","impressionDate":"2026-11-19T23:59:59Z"}"#
                    )
            case "odd":
                (200, #"{"attribution":true,"campaignId":99,"conversionType":"Reinstall","claimType":"Glance"}"#)
            case "PreOrder":
                (
                    200,
                    #"{"attribution":true,"orgId":40669820,"campaignId":77,"adGroupId":7,"conversionType":"PreOrder","claimType":"Click","clickDate":"2026-11-21T08:00Z","supplyPlacement":"APPSTORE_TODAY_TAB"}"#
                )
            case "PREORDER":
                (
                    200,
                    #"{"attribution":true,"campaignId":77,"conversionType":"PREORDER","supplyPlacement":"APPSTORE_SEARCH_RESULTS"}"#
                )
            case "devtest":
                // Apple's developer-mode payload.
                (
                    200,
                    #"{"attribution":true,"orgId":1234567890,"campaignId":1234567890,"conversionType":"Download","clickDate":"2020-04-08T17:17Z","claimType":"Click","adGroupId":1234567890,"countryOrRegion":"US","keywordId":12323222,"adId":542317136}"#
                )
            case "targeted":
                // A campaign with age or gender targeting (September 2026): no attribution.
                (200, #"{"attribution":false}"#)
            case "placement":
                (
                    200,
                    #"{"attribution":true,"campaignId":77,"conversionType":"Download","supplyPlacement":"APPSTORE_PRODUCT_PAGES"}"#
                )
            default: (418, nil)
            }
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
        }

        var requests: [Request] { log.requests.withLock { $0 } }

        func requests(_ token: String) -> [Request] { requests.filter { $0.token == token } }
    }
}

import HTTPTypes
import Hummingbird
import NIOCore
import PostbackKit

extension PostbackResponder {
    /// A hot route's answer from the router, where the hot path is off (``ServeJob/hotPath``,
    /// for the tests that compare both paths): the same route code, body limit and 413 as
    /// ``HotRouteHandler``'s.
    func hot(_ route: ServeRoute, _ request: Request, caller: Caller, requestID: String) async throws -> Answer {
        let arrival = UTCInstant.now()
        let limit = bodyLimit(route)
        var body = ByteBuffer()
        if limit > 0 {
            if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
                return tooLarge(route)
            }
            do {
                body = try await request.body.collect(upTo: limit)
            } catch is NIOTooManyBytesError {
                return tooLarge(route)
            }
        }
        let read = Request(head: request.head, body: RequestBody(buffer: body))
        switch route {
        case .conversionValue:
            return conversionValue(read, body: body, context: caller)
        case .skadnetwork, .appattribution:
            return await withCheckedContinuation { continuation in
                receive(
                    request.head,
                    body: body,
                    path: route == .appattribution ? .aak : .skan,
                    caller: caller,
                    arrival: arrival,
                    requestID: requestID
                ) { continuation.resume(returning: $0) }
            }
        default:
            return await withCheckedContinuation { continuation in
                snippetConversionValue(read, context: caller, arrival: arrival) { continuation.resume(returning: $0) }
            }
        }
    }
}

import HTTPTypes
import Hummingbird
import NIOCore
import PostbackKit
import PostbackStore

/// `POST /v1/forwards/{channel}`: a network pushing the postbacks it forwards, server to
/// server, one a request. The contract of Apple's well-known paths (the same verification,
/// outcomes, answers and durability: 200 only once committed and flushed), on the channel the
/// path names instead of `device`, so that `postbackd reconcile` can compare the network's
/// forwards with the devices' copies.
///
/// Always keyed: a key with scope `forwards` that opens the channel (``ServeKey/channels``),
/// as `Authorization: Bearer KEY`; a valid postback of an app the key does not open is 403,
/// nothing stored. What cannot be read as a postback is quarantined on the channel, as at the
/// well-known paths.
extension PostbackResponder {
    func forward(_ request: Request, caller: Caller, requestID: String) async -> Answer {
        let arrival = UTCInstant.now()
        guard let name = ServeRoute.channelName(request.uri.path), !name.isEmpty else {
            return Self.json(
                .notFound,
                Self.problem(status: "not_found", reason: "name the channel: POST /v1/forwards/CHANNEL")
            )
        }
        guard let channel = PostbackChannel(name) else {
            return Self.json(
                .notFound,
                Self.problem(status: "not_found", reason: "no such channel: \(PostbackChannel.rule)")
            )
        }
        guard !channel.isDevice else {
            return Self.json(
                .notFound,
                Self.problem(
                    status: "not_found",
                    reason: "device is the channel of Apple's well-known paths; forwards name the network's channel"
                )
            )
        }
        let admission = admitServer(request, caller, scope: .forwards)
        if case .refused(let response) = admission { return response }
        if case .key(let key) = admission, !key.opens(channel: channel) {
            return Self.json(.forbidden, Self.error("this key does not open channel \(channel)", field: nil))
        }
        let limit = bodyLimit(.forwards)
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            return tooLarge(.forwards)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            return tooLarge(.forwards)
        } catch {
            return Self.json(.badRequest, Self.error("the request body did not arrive whole", field: nil))
        }
        return await withCheckedContinuation { continuation in
            receive(
                request.head,
                body: body,
                path: .skan,
                channel: channel,
                admits: { result in
                    guard let app = result.postback?.appID, !admission.opens(app) else { return nil }
                    return refuseApp(app, style: .api, field: "app-id")
                },
                caller: caller,
                arrival: arrival,
                requestID: requestID
            ) { continuation.resume(returning: $0) }
        }
    }
}

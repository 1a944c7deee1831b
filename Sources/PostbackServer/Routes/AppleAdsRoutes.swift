import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import PostbackKit
import PostbackStore

/// `POST /v1/apple-ads/token`: an app's AdServices token, stored durably before the answer
/// and exchanged with Apple later (`serve --apple-ads`, or `apple-ads fetch`).
extension PostbackResponder {
    /// The largest body accepted: a token is a few hundred characters.
    static let maximumTokenBody = 16_384

    func appleAdsToken(_ request: Request, context: Caller, arrival: UTCInstant) async -> Answer {
        let admission = admitApp(request, context, scope: .appleAds)
        if case .refused(let response) = admission { return response }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: bodyLimit(.appleAdsToken))
        } catch is NIOTooManyBytesError {
            return tooLarge(.appleAdsToken)
        } catch {
            return Self.json(.badRequest, Self.error("the request body did not arrive whole", field: nil))
        }
        let token: AppleAdsToken
        do throws(AppleAdsTokenError) {
            token = try AppleAdsToken.parse(json: Array(body.readableBytesView), now: arrival)
        } catch {
            return Self.json(.badRequest, Self.error(error.message, field: error.field))
        }
        guard admission.opens(token.appID) else { return refuseApp(token.appID, style: .app, field: "app_id") }
        switch await committer.store(token, receivedAtMs: arrival.milliseconds) {
        case .stored(let outcome):
            var object = JSONObjectWriter()
            object.add("status", outcome == .known ? "known" : "stored")
            if outcome == .expired { object.add("state", AppleAdsTokenState.expired.rawValue) }
            if outcome == .added { object.add("state", AppleAdsTokenState.pending.rawValue) }
            return Self.json(.accepted, object.text)
        case .unavailable(let reason):
            var response = Self.json(
                .serviceUnavailable,
                Self.error("nothing was stored, send it again: \(reason)", field: nil)
            )
            response.headers[.retryAfter] = "5"
            return response
        }
    }
}

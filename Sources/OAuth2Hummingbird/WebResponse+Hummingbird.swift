#if Hummingbird
import Hummingbird
import NIOCore
import OAuth2Web

@available(macOS 14, iOS 17, tvOS 17, *)
extension Response {
    /// The Hummingbird response of a `WebResponse`: its status, header fields
    /// (every `Set-Cookie` kept) and body.
    ///
    /// A route handler that calls `WebSignIn` itself (its `logout(_:body:)`, say)
    /// returns its answer with this.
    public init(_ answer: WebResponse) {
        self.init(status: answer.status, headers: answer.headerFields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
#endif

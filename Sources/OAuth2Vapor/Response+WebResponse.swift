#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

extension Response {
    /// The response OAuth2Web made, as Vapor's.
    public convenience init(_ answer: WebResponse) {
        var headers = HTTPHeaders()
        for field in answer.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        self.init(status: HTTPResponseStatus(statusCode: Int(answer.status.code)), headers: headers, body: .init(data: Data(answer.body)))
    }
}
#endif

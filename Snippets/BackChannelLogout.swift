// A web app's back-channel logout endpoint (OAuth2Web): the provider POSTs a logout token
// when a user signs out there; the endpoint verifies it and the app ends the sessions.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web

let request = HTTPRequest(
    method: .post, scheme: "https", authority: "app.example.com", path: "/backchannel-logout",
    headerFields: [.contentType: "application/x-www-form-urlencoded"])
let bodyBytes: [UInt8] = Array("logout_token=…".utf8)
let replayStore = MemoryReplayStore()

/// The app's own session store.
struct Sessions {
    func end(issuer: String, subject: String?, sessionID: String?) async throws {}
}
let sessions = Sessions()

// snippet.show
// snippet.handler
let endpoint = BackChannelLogoutEndpoint(verifier: LogoutTokenVerifier(
    issuer: "https://id.example.com",
    clientID: "my-web-app",
    keys: try .jwks(URL(string: "https://id.example.com/jwks")!),  // or .cache(client.keySet!)
    replayStore: replayStore))  // shared by every replica

// For each request to the back-channel logout route (an HTTPRequest and its body):
let answer = await endpoint.handle(request, body: bodyBytes) { logout in
    // Every session of logout.subject, or the one whose ID token had logout.sessionID.
    try await sessions.end(issuer: logout.issuer, subject: logout.subject, sessionID: logout.sessionID)
}
// Respond with answer.status, answer.headerFields and answer.body.
print(answer.status, answer.headerFields, answer.body.count)
// snippet.end

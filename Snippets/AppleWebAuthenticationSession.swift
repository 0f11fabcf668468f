// iOS and macOS only: ASWebAuthenticationSession as the browser of the authorization code
// flow. This project's CI builds on Linux, where AuthenticationServices does not exist: the
// body below is parsed there but never compiled.

// snippet.hide
#if canImport(AuthenticationServices)
import AuthenticationServices
import OAuth2

// snippet.show
@MainActor
func signIn(client: OAuth2Client, anchor: any ASWebAuthenticationPresentationContextProviding) async throws -> TokenSet {
    // Redirect URI registered as com.example.app:/oauth/callback (a claimed scheme).
    let request = try await client.startAuthorization()
    let callback: URL = try await withCheckedThrowingContinuation { continuation in
        let session = ASWebAuthenticationSession(url: request.url, callbackURLScheme: "com.example.app") { url, error in
            if let url { continuation.resume(returning: url) } else { continuation.resume(throwing: error ?? CancellationError()) }
        }
        session.presentationContextProvider = anchor
        session.prefersEphemeralWebBrowserSession = false   // true: no shared cookies (OktaOidc's noSSO)
        session.start()
    }
    return try await client.completeAuthorization(callbackURL: callback, request: request)
}
// snippet.hide
#endif

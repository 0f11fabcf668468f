// iOS and macOS only: sign-in through ASWebAuthenticationSession. The flow's logic
// (WebAuthenticationSignIn) builds and is tested on Linux; the presenter that wraps
// ASWebAuthenticationSession is Apple-only, so this body is parsed on Linux but not compiled.

// snippet.hide
#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticationServices
import OAuth2
import OAuth2InteractiveSignIn

// snippet.show
@MainActor
func signIn(client: OAuth2Client, anchor: any ASWebAuthenticationPresentationContextProviding) async throws -> TokenSet {
    // The client's redirect URI is registered as com.example.app:/oauth/callback (a private-use scheme).
    let presenter = WebAuthenticationSessionPresenter(
        presentationContextProvider: anchor,
        prefersEphemeralWebBrowserSession: false)   // true: no shared cookies (OktaOidc's noSSO)
    do {
        return try await WebAuthenticationSignIn(presenter: presenter).signIn(client: client)
    } catch let error as OAuth2Error where error.code == .userCancelled {
        throw CancellationError()   // the user closed the sheet: nothing to report
    }
}
// snippet.hide
#endif

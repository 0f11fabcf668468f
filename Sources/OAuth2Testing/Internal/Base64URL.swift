import Foundation

// The provider's own encodings. They are written here, not borrowed from the OAuth2 module,
// so that the provider's protocol decisions (what a form says, whether a PKCE verifier
// matches) never share code with the client they test.

/// base64url without padding (RFC 4648 §5, RFC 7515 §2).
enum Base64URL {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

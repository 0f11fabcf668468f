// Sign-in on another device (RFC 8628): the terminal shows a code, an address and a QR code,
// the user approves on a phone, and the program polls until the tokens come.

// snippet.hide
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://accounts.example.com")!),
    configuration: ClientConfiguration(clientID: "my-tv-app", scopes: ["openid", "offline_access"]))

// snippet.show
// snippet.presenter
// On standard error: the user code, the addresses, a QR code of verification_uri_complete
// (when libqrencode is installed and stderr is a terminal), and a countdown while it polls.
let tokens = try await DeviceSignIn(timeout: .seconds(600)).signIn(client: client)
// snippet.end

// snippet.core
// The same protocol without the presenter: show what you like, poll, react to each step.
let authorization = try await client.startDeviceAuthorization(scopes: ["openid", "offline_access"])
print("Open \(authorization.verificationURI) and enter \(authorization.userCode)")
let polled = try await client.pollDeviceToken(authorization) { event in
    if case .slowDown(let interval) = event { print("The server asks to poll every \(Int(interval)) s.") }
}
// snippet.end

// snippet.qr
// A QR code by itself: nil where libqrencode cannot be loaded.
if let code = TerminalQRCode(encoding: "https://accounts.example.com/device?user_code=WDJB-MJHT") {
    print(code.render(style: .ansi))
}
// snippet.end
// snippet.hide
_ = (tokens, polled)

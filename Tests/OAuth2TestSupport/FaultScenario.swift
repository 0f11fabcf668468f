import Foundation
import HTTPTypes

/// What real networks and servers do to a client on a bad day, one case each, with the
/// outcome the library and the `oauth2` tool promise (docs/fault-suite.md lists them).
/// The fault suite runs every case over real sockets against both transports and the
/// built tool; the `OAuth2TestWorker fault-server` subcommand serves them to the tool.
public enum FaultScenario: String, Sendable, CaseIterable {
    case connectionRefused = "connection-refused"
    case resetBeforeHeaders = "reset-before-headers"
    case resetMidBody = "reset-mid-body"
    case noAnswer = "no-answer"
    case dripping
    case hugeBody = "huge-body"
    case shortBody = "short-body"
    case truncatedChunked = "truncated-chunked"
    case captivePortal = "captive-portal"
    case notJSON = "not-json"
    case status500 = "status-500"
    case status502 = "status-502"
    case status503 = "status-503"
    case status503RetryAfter = "status-503-retry-after"
    case status429RetryAfter = "status-429-retry-after"
    case redirectElsewhere = "redirect-elsewhere"
    case tlsExpired = "tls-expired"
    case tlsWrongHost = "tls-wrong-host"
    case tlsUnknownCA = "tls-unknown-ca"
    case tlsHandshakeHangs = "tls-handshake-hangs"
    case dnsFailure = "dns-failure"

    /// What the client must report: the `OAuth2Error.Code` spelling (UserInfo has its own
    /// for an unreadable answer), `isTransient`, its `retryAfter`, and the exit status of
    /// the `oauth2` tool.
    public struct Outcome: Sendable, Equatable {
        public var code: String
        public var userInfoCode: String? = nil
        public var isTransient: Bool
        public var retryAfter: Double?
        public var exitStatus: Int32

        /// The code expected from `endpoint` ("token" or "userInfo").
        public func code(at endpoint: String) -> String { endpoint == "userInfo" ? userInfoCode ?? code : code }
    }

    /// The promised outcome.
    public var outcome: Outcome {
        switch self {
        case .connectionRefused, .resetBeforeHeaders, .resetMidBody, .shortBody, .truncatedChunked, .dnsFailure:
            return Outcome(code: "network", isTransient: true, retryAfter: nil, exitStatus: 3)
        case .noAnswer, .dripping, .tlsHandshakeHangs:
            return Outcome(code: "timeout", isTransient: true, retryAfter: nil, exitStatus: 3)
        case .hugeBody:
            return Outcome(code: "invalid_response", isTransient: false, retryAfter: nil, exitStatus: 1)
        case .captivePortal, .notJSON:
            return Outcome(code: "invalid_response", userInfoCode: "invalid_userinfo", isTransient: false, retryAfter: nil, exitStatus: 1)
        case .redirectElsewhere:
            return Outcome(code: "http_error", isTransient: false, retryAfter: nil, exitStatus: 1)
        case .status500, .status502:
            return Outcome(code: "server_error", isTransient: true, retryAfter: nil, exitStatus: 3)
        case .status503:
            return Outcome(code: "temporarily_unavailable", isTransient: true, retryAfter: nil, exitStatus: 3)
        case .status503RetryAfter:
            return Outcome(code: "temporarily_unavailable", isTransient: true, retryAfter: 120, exitStatus: 3)
        case .status429RetryAfter:
            return Outcome(code: "temporarily_unavailable", isTransient: true, retryAfter: 30, exitStatus: 3)
        case .tlsExpired, .tlsWrongHost, .tlsUnknownCA:
            return Outcome(code: "tls", isTransient: false, retryAfter: nil, exitStatus: 3)
        }
    }

    /// What the server does, in a few words (the docs table's first column).
    public var summary: String {
        switch self {
        case .connectionRefused: return "connection refused"
        case .resetBeforeHeaders: return "reset before the headers"
        case .resetMidBody: return "reset in the middle of the body"
        case .noAnswer: return "no answer at all"
        case .dripping: return "headers, then a byte every 0.5 s"
        case .hugeBody: return "a 64 MB body"
        case .shortBody: return "a declared length longer than the body"
        case .truncatedChunked: return "truncated chunked encoding"
        case .captivePortal: return "HTML with status 200 (a captive portal)"
        case .notJSON: return "a body that is neither JSON nor form"
        case .status500: return "500 with an OAuth error"
        case .status502: return "502 with an HTML page"
        case .status503: return "503 without Retry-After"
        case .status503RetryAfter: return "503 with Retry-After: 120"
        case .status429RetryAfter: return "429 with Retry-After: 30"
        case .redirectElsewhere: return "302 to another host (never followed)"
        case .tlsExpired: return "TLS: expired certificate"
        case .tlsWrongHost: return "TLS: certificate for another host name"
        case .tlsUnknownCA: return "TLS: certificate from an unknown CA"
        case .tlsHandshakeHangs: return "TLS: a handshake that never completes"
        case .dnsFailure: return "DNS: the name does not resolve (a network namespace without network)"
        }
    }

    /// How it is served.
    public enum Setup: Sendable {
        /// A plain HTTP server answering every request so.
        case http(LocalHTTPServer.Reply)
        /// An HTTPS server with this certificate, answering valid token responses.
        case tls(TestTLS.Certificate)
        /// A port where nothing listens.
        case refused
        /// A socket that accepts and never sends (used for HTTPS URLs).
        case silentTLS
        /// A host name that does not resolve (run in a network namespace without network).
        case unresolvable
    }

    /// How this case is served.
    public var setup: Setup {
        let json: HTTPFields = [.contentType: "application/json"]
        let ok = HTTPResponse(status: .ok, headerFields: json)
        let token = Data(#"{"access_token":"at-from-a-fault","token_type":"Bearer","expires_in":3600}"#.utf8)
        switch self {
        case .connectionRefused: return .refused
        case .resetBeforeHeaders: return .http(.reset)
        case .resetMidBody: return .http(.resetMidBody(ok, token, after: 20))
        case .noAnswer: return .http(.hang)
        case .dripping: return .http(.drip(ok, token + Data(repeating: 0x20, count: 4000), every: .milliseconds(500)))
        case .hugeBody:
            var body = Data(#"{"access_token":"at","token_type":"Bearer","padding":""#.utf8)
            body.append(Data(repeating: 0x78, count: 64 << 20))
            body.append(Data(#""}"#.utf8))
            return .http(.response(ok, body))
        case .shortBody: return .http(.truncated(ok, token.prefix(30), declaredLength: token.count))
        case .truncatedChunked: return .http(.truncatedChunked(ok, token.prefix(30)))
        case .captivePortal:
            return .http(.body(200, Data("<html><body><form action=/login>Sign in to the Wi-Fi</form></body></html>".utf8), contentType: "text/html"))
        case .notJSON: return .http(.body(200, Data("\u{0}\u{1}garbage;;==".utf8), contentType: "application/octet-stream"))
        case .status500: return .http(.json(500, #"{"error":"server_error","error_description":"database down"}"#))
        case .status502: return .http(.body(502, Data("<html>Bad Gateway</html>".utf8), contentType: "text/html"))
        case .status503: return .http(.json(503, #"{"error":"temporarily_unavailable"}"#))
        case .status503RetryAfter: return .http(.json(503, #"{"error":"temporarily_unavailable"}"#, headers: [.retryAfter: "120"]))
        case .status429RetryAfter: return .http(.body(429, Data("slow down".utf8), contentType: "text/plain", headers: [.retryAfter: "30"]))
        case .redirectElsewhere: return .http(.body(302, Data(), contentType: nil, headers: [.location: "http://elsewhere.example/token"]))
        case .tlsExpired: return .tls(.expired)
        case .tlsWrongHost: return .tls(.wrongHost)
        case .tlsUnknownCA: return .tls(.unknownCA)
        case .tlsHandshakeHangs: return .silentTLS
        case .dnsFailure: return .unresolvable
        }
    }

    /// The valid token response the TLS cases' servers send (the handshake must fail first).
    public static let tokenReply = LocalHTTPServer.Reply.json(200, #"{"access_token":"at-over-tls","token_type":"Bearer","expires_in":3600}"#)
}

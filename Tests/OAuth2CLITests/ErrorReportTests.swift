import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import OAuth2
import Testing

@testable import OAuth2CLI

/// What a person must never read: a Swift type name (the same list as Tests/CLI/e2e.sh).
private let typeNames =
    #"OAuth2Error|CLIError|URLError|TokenStoreError|JOSEError|ValidationError|DecodingError|EncodingError|CocoaError|HTTPClientError|IOError|\bNIO|Swift\.|Foundation\.|BoringSSL"#

private func namesAType(_ text: String) -> Bool { text.range(of: typeNames, options: .regularExpression) != nil }

/// Every line a report prints, with -v.
private func printed(_ report: ErrorReport) -> String { report.lines(verbose: true).joined(separator: "\n") }

private let atIdP = ErrorReport.Situation(host: "idp.example.com")

/// A transport error as an adapter reports it: code, source, and the raw error beneath.
private func transport(_ code: OAuth2Error.Code, _ underlying: (any Error & Sendable)?, message: String? = nil) -> OAuth2Error {
    OAuth2Error(code, source: .transport, message: message ?? underlying.map { "The connection failed: \($0)" }, underlyingError: underlying)
}

/// A TLS failure whose description is what swift-nio-ssl prints.
private struct HandshakeFailure: Error, CustomStringConvertible {
    var reason: String
    var description: String {
        "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:\(reason) at handshake.cc:320]))"
    }
}

/// An error of a kind the tool does not know.
private struct SomeLibraryError: Error, CustomStringConvertible {
    var description: String { "SomeLibraryError.broken(NIOCore.IOError(errno: 5))" }
}

/// Each OAuth2Error code family reads as its sentence and hint: the server's refusals, the
/// library's checks, the connection's failures; never a type name, even with -v.
@Suite struct ErrorReportTests {
    @Test func theClientsCredentialsRefused() {
        // Glewlwyd's empty 403 to a wrong secret, read from the status alone.
        let error = OAuth2Error(
            .invalidClient, source: .server, message: "HTTP 403 without an error object: the server refused the client's credentials.",
            statusCode: 403)
        let report = ErrorReport(error)
        #expect(report.line == "the server refused the client's credentials (invalid_client); check --client-id and the client secret (or the key of --private-key)")
        #expect(report.details.contains("HTTP status 403"), "-v shows the status")
        #expect(ExitStatus.describe(error) == report.line)
    }

    @Test func theServersOwnWordsFollowTheCode() {
        let error = OAuth2Error(.invalidGrant, source: .server, message: "Assertion was already used.", statusCode: 400)
        let report = ErrorReport(error, ErrorReport.Situation(profile: "work"))
        #expect(report.sentence.hasPrefix("the server refused the grant"))
        #expect(report.sentence.hasSuffix("(invalid_grant: assertion was already used)"))
        #expect(report.hint == "check what you gave, or sign in again with `oauth2 --profile work login`")
        // The default profile is not named.
        #expect(ErrorReport(error, ErrorReport.Situation(profile: "default")).hint?.contains("`oauth2 login`") == true)
        #expect(!report.details.contains("Assertion was already used."), "-v does not repeat what the line shows")
        // A long explanation is cut in the line, and shown whole with -v.
        let long = String(repeating: "the server explains at length ", count: 10) + "why."
        let cut = ErrorReport(OAuth2Error(.invalidRequest, source: .server, message: long, statusCode: 400))
        #expect(cut.sentence.contains("…)"))
        #expect(cut.details.contains(long))
    }

    @Test func aRenamedCodeShowsTheRegisteredOneAndTheServersSpellingWithV() {
        let error = OAuth2Error(.invalidScope, source: .server, statusCode: 400, serverCode: "scope_invalid")
        let report = ErrorReport(error)
        #expect(report.line == "the server refused the requested scopes (invalid_scope); ask only for scopes the client is allowed (--scope)")
        #expect(report.details.contains("the server's error code: scope_invalid"))
    }

    @Test func serverFailuresSayWhenToTryAgain() {
        let failed = ErrorReport(OAuth2Error(.serverError, source: .server, message: "database down", statusCode: 500))
        #expect(failed.line == "the server failed while answering (server_error, HTTP 500: database down); try again later")
        let inferred = ErrorReport(OAuth2Error(.serverError, source: .server, message: "HTTP 502: the server failed.", statusCode: 502))
        #expect(inferred.sentence == "the server failed while answering (server_error, HTTP 502)", "the status is not said twice")
        let busy = ErrorReport(OAuth2Error(.temporarilyUnavailable, source: .server, statusCode: 503, retryAfter: 120))
        #expect(busy.line == "the server is busy or unavailable (temporarily_unavailable, HTTP 503); try again in 120 s (the server asked to wait)")
    }

    @Test func anUnexpectedStatus() {
        let report = ErrorReport(OAuth2Error(.httpError, source: .server, message: "HTTP 302 without an error object.", statusCode: 302))
        #expect(report.line == "the server answered with an unexpected HTTP status (http_error, HTTP 302); check the issuer or endpoint URL")
    }

    @Test func signInAgainSaysWhyAndHow() {
        var refused = OAuth2Error(
            .signInRequired, source: .server,
            message: "The server refused the refresh token (invalid_grant); the session's tokens were removed: sign in again.",
            statusCode: 400, serverCode: "invalid_grant")
        refused.signInReason = .refreshTokenRefused
        let report = ErrorReport(refused)
        #expect(report.sentence == "the server refused the refresh token, so the stored tokens were removed (invalid_grant)")
        #expect(report.hint?.hasPrefix("sign in again with `oauth2 login`") == true)
        var expired = OAuth2Error(.signInRequired, source: .client, message: "The access token expired and there is no refresh token: sign in again.")
        expired.signInReason = .noRefreshToken
        let noRefresh = ErrorReport(expired)
        #expect(noRefresh.sentence == "the access token expired and there is no refresh token to renew it")
        #expect(noRefresh.line.contains("sign in again"))
    }

    @Test func theLibrarysChecksSpeakForThemselves() {
        let state = ErrorReport(OAuth2Error(.stateMismatch, source: .client, message: "The authorization response's state is not the one sent."))
        #expect(state.line == "the authorization response's state is not the one sent (state_mismatch); start the sign-in again")
        let idToken = ErrorReport(OAuth2Error(.invalidIDToken, source: .client, message: "The ID token was refused: The ID token's iss is not the issuer."))
        #expect(idToken.sentence.hasPrefix("the ID token was refused"))
        #expect(idToken.sentence.hasSuffix("(invalid_id_token)"))
        #expect(idToken.hint == "sign in again; if it persists, check the server's keys and clock")
        let plain = ErrorReport(OAuth2Error(.insecureEndpoint, source: .client, message: "An access token is sent over HTTPS only (plain HTTP only to a loopback host)."))
        #expect(plain.line == "an access token is sent over HTTPS only (plain HTTP only to a loopback host) (insecure_endpoint); use its https:// URL")
        let missing = ErrorReport(OAuth2Error(.missingEndpoint, source: .client, message: "The server has no registration endpoint."))
        #expect(missing.sentence == "the server has no registration endpoint (missing_endpoint)")
    }

    @Test func aResourceThatIsNotTheURLIsRefusedWithTheLibrarysWordsAndAHint() {
        let report = ErrorReport(OAuth2Error(
            .resourceMismatch, source: .client,
            message: "The metadata at https://mcp.example.com/.well-known/oauth-protected-resource/mcp names the resource \"https://other.example.com/mcp\", not https://mcp.example.com/mcp (RFC 9728 §3.3); refused."))
        #expect(report.sentence.hasPrefix("the metadata at https://mcp.example.com/"))
        #expect(report.sentence.hasSuffix("(resource_mismatch)"))
        #expect(report.hint?.contains("nothing was sent") == true)
    }

    @Test func everyCodeFamilyHasASentenceAndNoTypeName() {
        let codes: [OAuth2Error.Code] = [
            .invalidRequest, .invalidClient, .invalidGrant, .unauthorizedClient, .unsupportedGrantType, .invalidScope, .accessDenied,
            .unsupportedResponseType, .serverError, .temporarilyUnavailable, .invalidToken, .insufficientScope, .authorizationPending,
            .slowDown, .expiredToken, .invalidDPoPProof, .useDPoPNonce, .unboundToken, .invalidRequestURI, .invalidRequestObject,
            .interactionRequired, .loginRequired, .accountSelectionRequired, .consentRequired, .invalidTarget, .invalidRedirectURI,
            .invalidClientMetadata, .invalidSoftwareStatement, .unapprovedSoftwareStatement, .invalidConfiguration, .insecureEndpoint,
            .missingEndpoint, .stateMismatch, .issuerMismatch, .redirectMismatch, .invalidResponse, .invalidIDToken, .invalidUserInfo,
            .httpError, .network, .timeout, .tls, .cancelled, .signInRequired, .resourceMismatch, .metadataOriginMismatch,
            .noAuthorizationServer, "an_extension_code",
        ]
        for code in codes {
            for source in [OAuth2Error.Source.server, .client, .transport] {
                for message: String? in [nil, "Something the server or the library said."] {
                    let report = ErrorReport(OAuth2Error(code, source: source, message: message, statusCode: source == .transport ? nil : 400))
                    #expect(!report.sentence.isEmpty)
                    #expect(report.sentence.first?.isUppercase == false, "\(code): \(report.sentence)")
                    #expect(!report.sentence.hasSuffix("."), "\(code): \(report.sentence)")
                    #expect(!namesAType(printed(report)), "\(code) \(source): \(printed(report))")
                }
            }
            // A server's refusal names its code.
            if ![.network, .timeout, .tls, .cancelled, .signInRequired].contains(code) {
                #expect(ErrorReport(OAuth2Error(code, source: .server, statusCode: 400)).sentence.contains("(\(code.rawValue)"), "\(code)")
            }
        }
    }

    @Test func theRefusalsThatNeedAHintHaveOne() {
        let hinted: [OAuth2Error.Code] = [
            .invalidRequest, .invalidClient, .invalidGrant, .unauthorizedClient, .unsupportedGrantType, .invalidScope, .accessDenied,
            .serverError, .temporarilyUnavailable, .invalidToken, .insufficientScope, .expiredToken, .invalidDPoPProof,
            .invalidRequestURI, .loginRequired, .invalidTarget, .invalidRedirectURI, .invalidClientMetadata, .issuerMismatch,
            .invalidResponse, .invalidIDToken, .httpError, .resourceMismatch, .metadataOriginMismatch, .noAuthorizationServer,
        ]
        for code in hinted {
            #expect(ErrorReport(OAuth2Error(code, source: .server, statusCode: 400)).hint != nil, "\(code)")
        }
    }
}

@Suite struct ConnectionErrorReportTests {
    @Test func connectionRefused() {
        let report = ErrorReport(transport(.network, IOError(errnoCode: ECONNREFUSED, reason: "connection reset (error set)")), atIdP)
        #expect(report.line == "cannot reach idp.example.com (connection refused); check the URL and its port, and that the server is running")
        #expect(report.details == ["network: Connection refused (errno 111)"])
        #expect(!namesAType(printed(report)))
    }

    @Test func aResetOrATruncatedAnswerBreaksTheConnectionOff() {
        let reset = ErrorReport(transport(.network, IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)")), atIdP)
        #expect(reset.line == "the connection to idp.example.com broke off (the connection was reset); try again later")
        let closed = ErrorReport(transport(.network, HTTPClientError.remoteConnectionClosed, message: "Remote connection closed"), atIdP)
        #expect(closed.sentence == "the connection to idp.example.com broke off (the server closed the connection)")
        let short = ErrorReport(transport(.network, HTTPParserError.invalidEOFState), atIdP)
        #expect(short.sentence == "the connection to idp.example.com broke off (the answer ended before it was complete)")
        #expect(!namesAType(printed(short)))
    }

    @Test func noAnswerInTime() {
        var deadline = OAuth2Error(
            .timeout, source: .transport,
            message: "No complete answer within 2 s (connection, headers and body); the request was abandoned and its connection closed.")
        deadline.deadline = .milliseconds(2000)
        let report = ErrorReport(deadline, atIdP)
        #expect(report.line == "idp.example.com did not answer in time (no complete answer within 2 s); try again later, or allow longer with --http-timeout SECONDS")
        #expect(report.details.contains { $0.contains("No complete answer within 2 s") }, "-v keeps the library's wording")
        let connect = ErrorReport(transport(.timeout, HTTPClientError.connectTimeout, message: "Connect timeout"), atIdP)
        #expect(connect.sentence == "idp.example.com did not answer in time (the connection timed out)")
    }

    @Test func untrustedCertificatesAndOtherHostNames() {
        let untrusted = ErrorReport(transport(.tls, HandshakeFailure(reason: "CERTIFICATE_VERIFY_FAILED")), atIdP)
        #expect(untrusted.line.hasPrefix("cannot make a secure connection to idp.example.com (its certificate is not trusted"))
        #expect(untrusted.hint == "check the URL, or name the CA to trust with SSL_CERT_FILE")
        #expect(untrusted.details == ["tls: CERTIFICATE_VERIFY_FAILED"])
        let plainHTTP = ErrorReport(transport(.tls, HandshakeFailure(reason: "WRONG_VERSION_NUMBER")), atIdP)
        #expect(plainHTTP.sentence == "cannot make a secure connection to idp.example.com (the server does not speak TLS on that port)")
        let otherHost = ErrorReport(transport(.tls, NIOSSLExtraError.failedToValidateHostname), atIdP)
        #expect(otherHost.line == "cannot make a secure connection to idp.example.com (its certificate is for another host name); check the host name in the URL")
        for report in [untrusted, plainHTTP, otherHost] { #expect(!namesAType(printed(report)), "\(printed(report))") }
    }

    @Test func anUnknownHostIsTheServer() {
        let report = ErrorReport(transport(.network, IOError(errnoCode: ECONNREFUSED, reason: "connect")))
        #expect(report.sentence == "cannot reach the server (connection refused)")
    }

    @Test func cancelled() {
        #expect(ErrorReport(OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled.")).line == "cancelled")
        #expect(ErrorReport(CancellationError()).line == "cancelled")
    }

    @Test func aSignInWaitThatRanOut() {
        let report = ErrorReport(OAuth2Error(.timeout, source: .client, message: "The device sign-in was not approved within 300 seconds."))
        #expect(report.line == "the device sign-in was not approved within 300 seconds; run the command again (--timeout SECONDS waits longer)")
    }
}

@Suite struct OtherErrorReportTests {
    @Test func theToolsOwnErrorsKeepTheirWordsAndHint() {
        let error = CLIError.signInAgain("No stored sign-in for profile \"x\"", hint: "sign in with `oauth2 login`")
        #expect(ErrorReport(error).line == "no stored sign-in for profile \"x\"; sign in with `oauth2 login`")
        #expect(ErrorReport(CLIError.usage("--dpop takes an algorithm.")).line == "--dpop takes an algorithm")
        #expect(ErrorReport(ValidationError("--http-timeout must be a positive number of seconds.")).line == "--http-timeout must be a positive number of seconds")
    }

    @Test func storeJOSEAndDecodingErrorsNameNoType() throws {
        let store = ErrorReport(TokenStoreError(.io, "open failed", path: "/tmp/x.json", systemError: EACCES))
        #expect(store.line == "the token store cannot be read or written: open failed (/tmp/x.json): Permission denied; check the permissions of the config directory (--config-dir)")
        let jose = ErrorReport(JOSEError(.malformed, "The token is not a compact JWS (three parts)."))
        #expect(jose.line == "the token is not a compact JWS (three parts) (malformed)")
        let decoding: any Error
        do {
            _ = try JSONDecoder().decode(Profile.self, from: Data("{}".utf8))
            Issue.record("an empty profile decoded")
            return
        } catch {
            decoding = error
        }
        #expect(!namesAType(printed(ErrorReport(decoding))), "\(printed(ErrorReport(decoding)))")
        #expect(ErrorReport.reason(decoding).contains("is missing"))
    }

    @Test func anUnknownErrorSaysSoWithoutItsType() {
        let report = ErrorReport(SomeLibraryError())
        #expect(report.line == "the command failed unexpectedly; run it again with -v for details, and report it if it persists")
        #expect(!namesAType(printed(report)), "\(printed(report))")
        #expect(!printed(report).contains("SomeLibraryError"))
    }

    @Test func clausesStartInLowerCaseUnlessANameStartsThem() {
        #expect(ErrorReport.clause("The ID token was refused.") == "the ID token was refused")
        #expect(ErrorReport.clause("DPoP proofs are refused.") == "DPoP proofs are refused")
        #expect(ErrorReport.clause("HTTP 400 without an error object.") == "HTTP 400 without an error object")
        #expect(ErrorReport.clause("UserInfo failed") == "UserInfo failed")
        #expect(ErrorReport.clause("--grant needs --client-id.") == "--grant needs --client-id")
        #expect(ErrorReport.clause("Wait…") == "wait…")
        #expect(ErrorReport.clause("A profile name is letters.") == "a profile name is letters")
    }

    @Test func theScrubberLeavesNoTypeName() {
        for text in [
            "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 1 error:OPENSSL_internal:X]))",
            "The operation could not be completed. (Swift.DecodingError error 0.)", "Foundation.URLError(-1001)",
            "OAuth2Error.network: The connection failed", "NIOConnectionError(host: a, port: 1)",
        ] {
            #expect(!namesAType(ErrorReport.scrubbed(text)), "\(ErrorReport.scrubbed(text))")
        }
    }

    @Test func aFailedSignOutStepReadsAsASentence() {
        let progress = SignOutProgress(
            step: .revokeAccessToken, outcome: .failed(OAuth2Error(.invalidClient, source: .server, statusCode: 401)))
        #expect(ErrorReport.progress(progress) == "revoke the access token: failed: the server refused the client's credentials (invalid_client)")
        #expect(ErrorReport.progress(SignOutProgress(step: .removeFromStore, outcome: .succeeded)) == "forget the tokens: done")
        let kept = OAuth2Error(
            .invalidClient, source: .client, message: "The tokens were kept because [revokeAccessToken] failed; sign out again to retry.",
            underlyingError: OAuth2Error(.invalidClient, source: .server, statusCode: 401))
        #expect(
            ErrorReport.progress(SignOutProgress(step: .removeFromStore, outcome: .failed(kept)))
                == "forget the tokens: not done, the tokens were kept because a revocation failed (sign out again to retry)")
    }

    @Test func theFirstFailedStepIsTheCause() {
        let cause = OAuth2Error(.invalidClient, source: .server, statusCode: 401)
        let kept = OAuth2Error(.invalidClient, source: .client, message: "The tokens were kept because revoke failed.", underlyingError: cause)
        let errors: [SignOutSteps: any Error] = [.removeFromStore: kept, .revokeAccessToken: cause]
        #expect((ErrorReport.firstFailure(of: errors) as? OAuth2Error)?.source == .server)
    }
}

import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OAuth2

#if Postgres
import OAuth2Postgres
#endif

/// What the tool says on stderr when a command fails: one sentence a person understands,
/// with the error code in parentheses when there is one, then a hint on what to do:
///
///     oauth2: cannot reach idp.example.com (DNS lookup failed); check the issuer URL or your network
///     oauth2: the server refused the client's credentials (invalid_client); check --client-id and the client secret
///
/// With `-v`, technical details follow on lines of their own. This is the one place where
/// an error becomes text: every error the tool prints goes through it, and none of that
/// text names a Swift type. Nothing here adds a secret: the library's errors carry none
/// (it redacts what a server echoes back), and the CLI's own never quote one.
struct ErrorReport: Equatable, Sendable {
    /// What happened, starting in lower case, without a final full stop.
    var sentence: String
    /// What to do about it, when the tool can tell.
    var hint: String?
    /// Technical details for `-v`: the HTTP status, the server's own wording, the system's
    /// error text.
    var details: [String] = []

    /// What the tool knows beyond the error, to name things in the sentence and the hint.
    struct Situation: Equatable, Sendable {
        /// The host of the last request sent, for errors of the connection.
        var host: String?
        /// The profile in use; `nil` for the default one.
        var profile: String?
        /// `--http-timeout`, when given.
        var httpTimeout: Int?

        init(host: String? = nil, profile: String? = nil, httpTimeout: Int? = nil) {
            self.host = host
            self.profile = profile == "default" ? nil : profile
            self.httpTimeout = httpTimeout
        }

        /// `oauth2 login`, with the profile when it is not the default one.
        var login: String { profile.map { "`oauth2 --profile \($0) login`" } ?? "`oauth2 login`" }
    }

    init(sentence: String, hint: String? = nil, details: [String] = []) {
        self.sentence = sentence
        self.hint = hint
        self.details = details
    }

    /// The report of any error the tool can meet.
    init(_ error: any Error, _ situation: Situation = Situation()) {
        switch error {
        case let error as OAuth2Error: self = Self.oauth2(error, situation)
        case let error as CLIError: self = ErrorReport(sentence: Self.clause(error.message), hint: error.hint.map(Self.clause))
        case let error as TokenStoreError: self = Self.store(error)
        #if Postgres
        case let error as PostgresTokenStoreError:
            self = ErrorReport(
                sentence: "the PostgreSQL store: \(Self.clause(error.message))",
                hint: error.isTransient ? "try again; check that the database is reachable (OAUTH2_POSTGRES_URL)" : nil)
        #endif
        case let error as JOSEError: self = ErrorReport(sentence: "\(Self.clause(error.message)) (\(error.reason))")
        case let error as ValidationError: self = ErrorReport(sentence: Self.clause(error.message))
        case is CancellationError: self = ErrorReport(sentence: "cancelled")
        case let error as DecodingError: self = ErrorReport(sentence: "a file could not be read (\(Self.reason(error)))")
        case let error as CocoaError: self = ErrorReport(sentence: Self.clause(error.localizedDescription))
        case let error as POSIXError: self = ErrorReport(sentence: Self.clause(Self.systemText(error.code.rawValue)))
        default:
            self = ErrorReport(
                sentence: "the command failed unexpectedly", hint: "run it again with -v for details, and report it if it persists",
                details: [Self.scrubbed(String(describing: error))])
        }
    }

    /// The line printed after `oauth2: `.
    var line: String { hint.map { "\(sentence); \($0)" } ?? sentence }

    /// What goes to stderr: the line, then with `-v` the details, indented.
    func lines(verbose: Bool) -> [String] {
        ["oauth2: \(line)"] + (verbose ? details.map { "  \($0)" } : [])
    }

    /// A few words on why something failed, to go inside another message ("the private
    /// key file k.pem is not usable: …"): the sentence alone, no hint.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let error as JOSEError: return clause(error.message)
        case let error as DecodingError: return reason(error)
        default: return ErrorReport(error).sentence
        }
    }
}

// MARK: - OAuth2Error

extension ErrorReport {
    static func oauth2(_ error: OAuth2Error, _ situation: Situation) -> ErrorReport {
        if error.code == .cancelled { return ErrorReport(sentence: "cancelled") }
        if error.code == .timeout, error.source == .client {
            // A wait for the user (browser, device approval) that ran out.
            return ErrorReport(
                sentence: error.message.map(clause) ?? "the wait for the sign-in ran out",
                hint: "run the command again (--timeout SECONDS waits longer)")
        }
        if error.source == .transport || [.network, .timeout, .tls].contains(error.code) {
            return transport(error, situation)
        }
        var report = ErrorReport(sentence: "")
        let (sentence, hint) = phrase(error, situation)
        report.hint = hint
        var note = [noteCode(error)]
        if let status = error.statusCode, [.httpError, .serverError, .temporarilyUnavailable].contains(error.code) {
            note.append("HTTP \(status)")
        }
        var parenthesis = note.compactMap { $0 }.joined(separator: ", ")
        var messageShown = true
        if error.code == .signInRequired {
            // The library's message says what the sentence says.
            report.sentence = sentence
            messageShown = false
        } else if error.source == .client, let message = error.message.flatMap(nonEmpty) {
            // The library's own checks explain themselves in plain words.
            report.sentence = clause(message)
        } else {
            report.sentence = sentence
            // The server's explanation, unless it is the library's note that the status
            // alone was read ("HTTP 401 without an error object…"), which the sentence says.
            if let message = error.message.flatMap(nonEmpty), !message.hasPrefix("HTTP ") {
                let shown = clause(message)
                let short = shown.count > 160 ? shown.prefix(159) + "…" : shown
                messageShown = short == shown
                parenthesis += parenthesis.isEmpty ? short : ": \(short)"
            } else {
                messageShown = false
            }
        }
        if !parenthesis.isEmpty { report.sentence += " (\(parenthesis))" }
        report.details = details(of: error, withMessage: !messageShown)
        return report
    }

    /// The code in parentheses: the server's refusal for `sign_in_required`, else the code.
    private static func noteCode(_ error: OAuth2Error) -> String? {
        error.code == .signInRequired ? error.serverCode : error.code.rawValue
    }

    /// What a server's refusal (or a library check without a message) means, and what to do.
    private static func phrase(_ error: OAuth2Error, _ situation: Situation) -> (String, String?) {
        switch error.code {
        case .invalidRequest:
            return ("the server refused the request as malformed or incomplete", "check the command's options (-v shows the details)")
        case .invalidClient:
            return ("the server refused the client's credentials", "check --client-id and the client secret (or the key of --private-key)")
        case .unauthorizedClient:
            return ("the server does not allow this client to use this grant", "check the client's grant types at the server")
        case .invalidGrant:
            return (
                "the server refused the grant: the code, token, assertion or password is wrong, expired, revoked or used already",
                "check what you gave, or sign in again with \(situation.login)"
            )
        case .unsupportedGrantType:
            return ("the server does not support this grant type", "choose another --grant (`oauth2 discover ISSUER` lists the server's grant types)")
        case .invalidScope:
            return ("the server refused the requested scopes", "ask only for scopes the client is allowed (--scope)")
        case .accessDenied:
            return ("access was denied: the user or the server refused the request", "sign in again and approve the request")
        case .unsupportedResponseType:
            return ("the server does not allow this client that response type", "check the client's settings at the server")
        case .serverError:
            return ("the server failed while answering", retryHint(error))
        case .temporarilyUnavailable, .slowDown:
            return ("the server is busy or unavailable", retryHint(error))
        case .invalidToken:
            return ("the server refused the token it was given", "get a new one with `oauth2 token --force-refresh`, or sign in again with \(situation.login)")
        case .insufficientScope:
            return ("the token lacks a scope the server requires", "sign in again asking for it (\(situation.login) --scope …)")
        case .authorizationPending:
            return ("the sign-in has not been approved yet", "approve it on the verification page, then run the command again")
        case .expiredToken:
            return ("the device code expired before the sign-in was approved", "run `oauth2 login --device` again and approve it sooner")
        case .invalidDPoPProof, .useDPoPNonce:
            return ("the server refused the DPoP proof", "sign in again with --dpop, or with another algorithm (--dpop ES256)")
        case .unboundToken:
            return ("the server sent a Bearer token where a DPoP-bound one was asked for", "sign in without --dpop, or turn DPoP on for the client at the server")
        case .invalidRequestURI, .invalidRequestObject:
            return ("the server refused the pushed or signed authorization request", "try again without --par")
        case .loginRequired, .consentRequired, .interactionRequired, .accountSelectionRequired:
            return ("the server needs the user to sign in or consent in the browser", "run \(situation.login) without --prompt none")
        case .invalidTarget:
            return ("the server refused the requested audience or resource", "check --audience and --resource")
        case .invalidRedirectURI:
            return ("the server refused a redirect URI", "check --redirect-uri (a loopback URI the server allows)")
        case .invalidClientMetadata:
            return ("the server refused the client's registration metadata", "check --redirect-uri, --auth-method, --grant-type and --scope")
        case .invalidSoftwareStatement, .unapprovedSoftwareStatement:
            return ("the server refused the software statement", "check the software statement with the server's administrator")
        case .invalidConfiguration:
            return ("the client's configuration cannot work", "check the profile's options")
        case .insecureEndpoint:
            return ("an endpoint is not HTTPS", "use its https:// URL")
        case .missingEndpoint:
            return ("the server does not offer that endpoint", "check the issuer URL, or give the endpoint (--token-endpoint …)")
        case .stateMismatch:
            return ("the sign-in response does not belong to this sign-in (its state differs)", "start the sign-in again")
        case .issuerMismatch:
            return ("the server's issuer is not the one asked for", "give --issuer exactly as the server names itself (`oauth2 discover URL` shows it)")
        case .resourceMismatch:
            return (
                "the resource's metadata names another resource than the URL (RFC 9728 §3.3)",
                "give the resource's own URL (the metadata's resource); nothing was sent to it")
        case .metadataOriginMismatch:
            return (
                "the resource points its metadata to another origin",
                "give the URL under the origin the resource names (localhost and 127.0.0.1 differ); nothing was sent to it")
        case .noAuthorizationServer:
            return ("the resource names no usable authorization server", "check the URL, or --issuer / --authorization-server against its metadata")
        case .redirectMismatch:
            return ("the sign-in response arrived at another redirect URI", "check --redirect-uri")
        case .invalidResponse:
            return ("the server's answer could not be understood", "check that the URL is the server's OAuth endpoint (-v shows the details)")
        case .invalidIDToken:
            return ("the ID token failed verification", "sign in again; if it persists, check the server's keys and clock")
        case .invalidUserInfo:
            return ("the UserInfo answer failed verification", "sign in again; if it persists, check the server's UserInfo endpoint")
        case .httpError:
            return ("the server answered with an unexpected HTTP status", "check the issuer or endpoint URL")
        case .signInRequired:
            let sentence: String
            switch error.signInReason ?? (error.serverCode != nil ? .refreshTokenRefused : .noTokens) {
            case .refreshTokenRefused:
                sentence = "the server refused the refresh token, so the stored tokens were removed"
            case .noRefreshToken:
                sentence = "the access token expired and there is no refresh token to renew it"
            case .noTokens:
                sentence = "there are no stored tokens"
            case .signedOutElsewhere:
                sentence = "the session was signed out elsewhere"
            }
            return (sentence, "sign in again with \(situation.login) (or `oauth2 token --grant …` for a machine profile)")
        default:
            // An extension code: the server's own words follow in parentheses.
            return (error.source == .server ? "the server refused the request" : "the request could not be made", nil)
        }
    }

    /// "try again later", or after the wait the server asked for.
    private static func retryHint(_ error: OAuth2Error) -> String {
        guard let seconds = error.retryAfter else { return "try again later" }
        return "try again in \(Int(seconds.rounded(.up))) s (the server asked to wait)"
    }

    /// The technical lines of `-v`: status, the server's code as it spelled it, the
    /// message when the line does not show it whole, the error page, the wait asked for.
    private static func details(of error: OAuth2Error, withMessage: Bool) -> [String] {
        var details: [String] = []
        if let status = error.statusCode { details.append("HTTP status \(status)") }
        if let serverCode = error.serverCode, serverCode != noteCode(error) { details.append("the server's error code: \(serverCode)") }
        if withMessage, let message = error.message.flatMap(nonEmpty) { details.append(scrubbed(message)) }
        if let uri = error.uri { details.append("more at \(uri)") }
        if let retryAfter = error.retryAfter { details.append("Retry-After: \(Int(retryAfter.rounded(.up))) s") }
        return details
    }
}

// MARK: - The connection

extension ErrorReport {
    /// What went wrong with the connection, in the words of a person.
    enum ConnectionFailure: Equatable {
        case dns
        case refused
        case unreachable(String)
        case brokenOff(String)
        case timedOut(String?)
        case untrustedCertificate
        case wrongHostName
        case tls(String?)
        case other(String?)
    }

    static func transport(_ error: OAuth2Error, _ situation: Situation) -> ErrorReport {
        // A sign-out step that was not done because a revocation failed carries that failure.
        let underlying = (error.underlyingError as? OAuth2Error)?.underlyingError ?? error.underlyingError
        var host = situation.host
        if let connection = underlying as? NIOConnectionError { host = connection.host }
        let server = host ?? "the server"
        let failure = classify(error.code, underlying, httpTimeout: situation.httpTimeout, deadline: error.deadline)
        var report: ErrorReport
        switch failure {
        case .dns:
            report = ErrorReport(sentence: "cannot reach \(server) (DNS lookup failed)", hint: "check the issuer URL or your network")
        case .refused:
            report = ErrorReport(
                sentence: "cannot reach \(server) (connection refused)", hint: "check the URL and its port, and that the server is running")
        case .unreachable(let cause):
            report = ErrorReport(sentence: "cannot reach \(server) (\(cause))", hint: "check the URL or your network, then try again")
        case .brokenOff(let cause):
            report = ErrorReport(sentence: "the connection to \(server) broke off (\(cause))", hint: "try again later")
        case .timedOut(let cause):
            report = ErrorReport(
                sentence: "\(server) did not answer in time" + (cause.map { " (\($0))" } ?? ""),
                hint: "try again later, or allow longer with --http-timeout SECONDS")
        case .untrustedCertificate:
            report = ErrorReport(
                sentence: "cannot make a secure connection to \(server) (its certificate is not trusted: expired, self-signed or from an unknown CA)",
                hint: "check the URL, or name the CA to trust with SSL_CERT_FILE")
        case .wrongHostName:
            report = ErrorReport(
                sentence: "cannot make a secure connection to \(server) (its certificate is for another host name)",
                hint: "check the host name in the URL")
        case .tls(let cause):
            report = ErrorReport(
                sentence: "cannot make a secure connection to \(server)" + (cause.map { " (\($0))" } ?? ""),
                hint: "check the URL and its port")
        case .other(let cause):
            report = ErrorReport(
                sentence: "the exchange with \(server) failed" + (cause.map { " (\($0))" } ?? ""), hint: "check the URL or your network, then try again")
        }
        if let technical = technical(underlying) { report.details.append("\(error.code): \(technical)") }
        // The library's own wording (the request deadline…); the adapters' raw text is not shown.
        if underlying == nil || underlying is HTTPClientError, let message = error.message.flatMap(nonEmpty),
            !report.details.contains("\(error.code): \(message)")
        {
            report.details.append("\(error.code): \(message)")
        }
        return report
    }

    /// A deadline as people read it: `30 s`, `1.5 s`, `250 ms`.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        let value = Double(whole) + Double(attoseconds) / 1e18
        if value >= 1 { return value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value) }
        return "\(Int((value * 1000).rounded())) ms"
    }

    /// Sorts a failure of the connection by what the transport said.
    static func classify(
        _ code: OAuth2Error.Code, _ underlying: (any Error)?, httpTimeout: Int?, deadline requestDeadline: Duration? = nil
    ) -> ConnectionFailure {
        // The request deadline that ran out, else --http-timeout.
        let deadline = requestDeadline.map { "no complete answer within \(seconds($0))" } ?? httpTimeout.map { "no complete answer within \($0) s" }
        switch underlying {
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return .dns }
            if let first = error.connectionErrors.first?.error { return classify(code, first, httpTimeout: httpTimeout, deadline: requestDeadline) }
            return .unreachable("the connection failed")
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .refused
            case ECONNRESET, EPIPE, ECONNABORTED: return .brokenOff("the connection was reset")
            case ETIMEDOUT: return .timedOut(deadline ?? "the connection timed out")
            case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN: return .unreachable("no route to the host")
            default: return .unreachable(systemText(error.errnoCode))
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return .timedOut(deadline ?? "the connection timed out")
            default: return .brokenOff("the connection closed early")
            }
        case is HTTPParserError:
            return .brokenOff("the answer ended before it was complete")
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return .timedOut(deadline ?? "the connection timed out")
            case .readTimeout, .writeTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return .timedOut(deadline ?? clause(error.shortDescription))
            case .remoteConnectionClosed: return .brokenOff("the server closed the connection")
            default: return code == .timeout ? .timedOut(deadline) : .other(clause(error.shortDescription))
            }
        case let error as NIOSSLExtraError where error == .failedToValidateHostname || error == .serverHostnameImpossibleToMatch:
            return .wrongHostName
        case let error? where code == .tls:
            switch tlsReason(error) {
            case "CERTIFICATE_VERIFY_FAILED": return .untrustedCertificate
            case "WRONG_VERSION_NUMBER": return .tls("the server does not speak TLS on that port")
            case "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL": return .tls("no TLS version in common")
            case "SSLV3_ALERT_HANDSHAKE_FAILURE", "NO_SHARED_CIPHER": return .tls("no cipher in common")
            default: return .tls("the TLS handshake failed")
            }
        default:
            switch code {
            case .timeout: return .timedOut(deadline)
            case .tls: return .tls("the TLS handshake failed")
            default: return .other(nil)
            }
        }
    }

    /// BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`, `WRONG_VERSION_NUMBER`…) in a TLS error.
    static func tlsReason(_ error: any Error) -> String? {
        let text = String(describing: error)
        guard let range = text.range(of: #"OPENSSL_internal:[A-Z0-9_]+"#, options: .regularExpression) else { return nil }
        return String(text[range].dropFirst("OPENSSL_internal:".count))
    }

    /// The transport's error as a system would say it, for `-v`.
    static func technical(_ error: (any Error)?) -> String? {
        switch error {
        case nil: return nil
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "the name \(error.host) did not resolve" }
            return error.connectionErrors.first.flatMap { technical($0.error) }.map { "connecting to \(error.host):\(error.port): \($0)" }
        case let error as IOError: return "\(systemText(error.errnoCode)) (errno \(error.errnoCode))"
        case let error as HTTPClientError: return error.shortDescription
        case let error as HTTPParserError: return "\(error)"
        case let error?:
            if let reason = tlsReason(error) { return reason }
            // What is left of a description once its type names are gone: "EOF during handshake".
            let words = scrubbed(String(describing: error))
                .replacingOccurrences(of: #"[()\[\]:]+"#, with: " ", options: .regularExpression)
                .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
            return nonEmpty(words)
        }
    }
}

// MARK: - Stores, text

extension ErrorReport {
    static func store(_ error: TokenStoreError) -> ErrorReport {
        var what = clause(error.message)
        if let path = error.path { what += " (\(path))" }
        if let code = error.systemError, error.code == .io { what += ": \(systemText(code))" }
        switch error.code {
        case .unavailable:
            return ErrorReport(sentence: "the keyring cannot be used: \(what)", hint: "use another store: --store file")
        case .io:
            return ErrorReport(sentence: "the token store cannot be read or written: \(what)", hint: "check the permissions of the config directory (--config-dir)")
        case .corrupt:
            let kept = error.preservedPath.map { "; it was kept as \($0)" } ?? ""
            return ErrorReport(sentence: "a stored sign-in is damaged: \(what)\(kept)", hint: "sign in again")
        default:
            return ErrorReport(sentence: "the token store cannot be used (\(error.code.rawValue)): \(what)", hint: "check --store and the store's key")
        }
    }

    static func reason(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context): return clause(context.debugDescription)
        case .keyNotFound(let key, _): return "\"\(key.stringValue)\" is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "a value has the wrong type" : "\"\(path)\" has the wrong type"
        @unknown default: return "it is not what was expected"
        }
    }

    /// The C library's text for an `errno`.
    static func systemText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// `text` as a clause inside a line: trimmed, without a final full stop, its first
    /// word in lower case unless it is a name (`HTTP`, `DPoP`, `UserInfo`, `--option`).
    static func clause(_ text: String) -> String {
        var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        while text.hasSuffix(".") && !text.hasSuffix("..") { text.removeLast() }
        guard let first = text.first, first.isUppercase else { return text }
        let word = text.prefix { $0.isLetter }
        guard word.dropFirst().allSatisfy(\.isLowercase), word.count > 1 || word == "A" else { return text }
        return first.lowercased() + text.dropFirst()
    }

    static func nonEmpty(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Technical text without Swift type names: a last resort for errors the tool does not
    /// know, whose description may name their types ("NIOSSL.BoringSSLError.sslError(…)").
    static func scrubbed(_ text: String) -> String {
        var text = text
        let patterns = [
            #"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z0-9_]*(?:Error|Exception)\b\.?"#,  // NIOSSL.BoringSSLError., DecodingError
            #"\b(?:Swift|Foundation|NIO[A-Za-z0-9]*|AsyncHTTPClient|OAuth2[A-Za-z0-9]*)\."#,  // module prefixes
            #"\bNIO[A-Za-z0-9]*"#,
        ]
        for pattern in patterns {
            text = text.replacingOccurrences(of: pattern, with: "", options: .regularExpression)
        }
        return text.trimmingCharacters(in: .whitespaces)
    }
}

// MARK: - Sign-out steps

extension ErrorReport {
    /// A sign-out step as `logout` and `revoke` print it: the library's words
    /// (`revoke the access token: done`), and a failure as this report's sentence.
    static func progress(_ progress: SignOutProgress) -> String {
        guard case .failed(let error) = progress.outcome else { return progress.description }
        // The step's words without its outcome ("revoke the access token").
        let step = SignOutProgress(step: progress.step, outcome: .started).description.replacingOccurrences(of: ": started", with: "")
        if progress.step == .removeFromStore, (error as? OAuth2Error)?.underlyingError is OAuth2Error {
            // The library keeps the tokens when a revocation failed, so that a retry can revoke them.
            return "\(step): not done, the tokens were kept because a revocation failed (sign out again to retry)"
        }
        return "\(step): failed: \(ErrorReport(error, Situation(host: HostRecordingTransport.lastHost.withLock { $0 })).sentence)"
    }

    /// The error of the first step that failed, in the order the steps run: the cause,
    /// rather than a later step's "the tokens were kept because … failed".
    static func firstFailure(of errors: [SignOutSteps: any Error]) -> (any Error)? {
        let order: [SignOutSteps] = [.revokeAccessToken, .revokeRefreshToken, .endSession, .removeFromStore]
        return order.lazy.compactMap { errors[$0] }.first ?? errors.values.first
    }
}

import Foundation
import OAuth2JOSE

/// What `oauth2 agent` and its clients say to each other over the agent's Unix socket: one
/// request line, one answer line, then the agent closes the connection. Each line is a JSON
/// object ending with a newline (`\n`), at most ``maximumLineSize`` bytes with it.
///
///     → {"v":1,"profile":"work","min_ttl":120}
///     ← {"access_token":"…","expires_at":1767225600,"token_type":"Bearer","v":1}
///     ← {"error":{"code":"sign_in_again","message":"…","hint":"…"},"v":1}
///
/// - `v` is the protocol version (``version``); an agent answers a request of another
///   version with a `usage` error that names its own.
/// - `min_ttl` (optional, seconds, 0…``maximumMinimumTTL``) asks for a token valid that much
///   longer, when the provider's token lifetime allows it.
/// - `expires_at` is in seconds since 1970, absent when the provider gave no lifetime.
/// - An error's `code` is the name of the tool's exit status (``ExitStatus``): `refused`,
///   `usage`, `transient`, `cancelled`, `sign_in_again`; `message` and `hint` are the
///   sentence and the hint the tool would print. Never a secret.
///
/// The agent never sends a refresh token or an ID token: only the access token and what a
/// caller needs to use it.
enum AgentProtocol {
    /// The version this build speaks.
    static let version = 1
    /// The longest request or answer line, newline included.
    static let maximumLineSize = 16 * 1024
    /// The largest `min_ttl`: a day.
    static let maximumMinimumTTL = 86_400

    /// A request: the access token of a profile.
    struct Request: Equatable, Sendable {
        var profile: String
        /// Seconds the token must still be valid for (as far as the provider's token
        /// lifetime allows).
        var minimumTTL: Int = 0
    }

    /// The access token the agent hands out.
    struct Token: Equatable, Sendable {
        var accessToken: String
        /// `Bearer` or `DPoP`, as the provider said.
        var tokenType: String
        /// When it expires; `nil` when the provider did not say.
        var expiresAt: Date?
    }

    /// An error the agent answers with: the exit status a command shows, and its sentence.
    struct Failure: Error, Equatable, Sendable {
        var status: ExitStatus
        var message: String
        var hint: String?
    }

    /// The answer to a request.
    enum Answer: Equatable, Sendable {
        case token(Token)
        case failure(Failure)
    }

    /// Why a request line was not understood.
    enum RequestError: Error, Equatable, Sendable {
        /// Longer than ``maximumLineSize`` (newline included).
        case tooLarge
        /// Not a JSON object with the members of a request: says which.
        case malformed(String)
        /// A version this agent does not speak.
        case unsupportedVersion(Int64)

        /// The answer that tells the client.
        var failure: Failure {
            switch self {
            case .tooLarge:
                return Failure(status: .usage, message: "The request to the agent is longer than \(maximumLineSize) bytes")
            case .malformed(let reason):
                return Failure(status: .usage, message: "The agent did not understand the request: \(reason)")
            case .unsupportedVersion(let version):
                return Failure(
                    status: .usage, message: "The agent speaks protocol version \(AgentProtocol.version), not \(version)",
                    hint: "use an oauth2 of the same version as the agent")
            }
        }
    }

    // MARK: - Requests

    /// The request line (newline included).
    static func encode(_ request: Request) -> Data {
        var members: [String: JSONValue] = ["v": .integer(Int64(version)), "profile": .string(request.profile)]
        if request.minimumTTL > 0 { members["min_ttl"] = .integer(Int64(request.minimumTTL)) }
        return line(.object(members))
    }

    /// Reads a request line (with or without its newline).
    ///
    /// - Throws: ``RequestError``.
    static func decodeRequest(_ line: Data) throws(RequestError) -> Request {
        guard line.count <= maximumLineSize else { throw .tooLarge }
        guard let object = JSONValue.parseObject(line) else { throw .malformed("it is not a JSON object") }
        guard case .integer(let version)? = object["v"] else { throw .malformed("\"v\" (the protocol version) is missing or not an integer") }
        guard version == Int64(Self.version) else { throw .unsupportedVersion(version) }
        guard case .string(let profile)? = object["profile"] else { throw .malformed("\"profile\" is missing or not a string") }
        do {
            try ProfileStore.validate(name: profile)
        } catch {
            throw .malformed("\"profile\" is not a profile name")
        }
        var request = Request(profile: profile)
        switch object["min_ttl"] {
        case nil, .null?: break
        case .integer(let seconds)? where (0...Int64(maximumMinimumTTL)).contains(seconds): request.minimumTTL = Int(seconds)
        default: throw .malformed("\"min_ttl\" is not a number of seconds from 0 to \(maximumMinimumTTL)")
        }
        return request
    }

    // MARK: - Answers

    /// The answer line (newline included).
    static func encode(_ answer: Answer) -> Data {
        switch answer {
        case .token(let token):
            var members: [String: JSONValue] = [
                "v": .integer(Int64(version)), "access_token": .string(token.accessToken), "token_type": .string(token.tokenType),
            ]
            if let expiresAt = token.expiresAt { members["expires_at"] = .integer(Int64(expiresAt.timeIntervalSince1970.rounded(.down))) }
            return line(.object(members))
        case .failure(let failure):
            var error: [String: JSONValue] = ["code": .string(code(of: failure.status)), "message": .string(failure.message)]
            if let hint = failure.hint { error["hint"] = .string(hint) }
            return line(.object(["v": .integer(Int64(version)), "error": .object(error)]))
        }
    }

    /// Reads an answer line. What a client cannot read becomes a ``Failure`` of its own.
    static func decodeAnswer(_ line: Data) -> Answer {
        let unreadable = Failure(status: .refused, message: "The agent's answer is not one this oauth2 understands", hint: "use an oauth2 of the same version as the agent")
        guard line.count <= maximumLineSize, let object = JSONValue.parseObject(line) else { return .failure(unreadable) }
        if case .integer(let version)? = object["v"], version != Int64(Self.version) {
            return .failure(Failure(status: .refused, message: "The agent speaks protocol version \(version), not \(Self.version)", hint: unreadable.hint))
        }
        if case .object(let error)? = object["error"] {
            guard case .string(let message)? = error["message"] else { return .failure(unreadable) }
            let status = error["code"]?.stringValue.flatMap(status(ofCode:)) ?? .refused
            return .failure(Failure(status: status, message: message, hint: error["hint"]?.stringValue))
        }
        guard case .string(let accessToken)? = object["access_token"], !accessToken.isEmpty,
            case .string(let tokenType)? = object["token_type"]
        else { return .failure(unreadable) }
        var token = Token(accessToken: accessToken, tokenType: tokenType)
        if case .integer(let seconds)? = object["expires_at"] { token.expiresAt = Date(timeIntervalSince1970: TimeInterval(seconds)) }
        return .token(token)
    }

    /// The code of an exit status on the wire.
    static func code(of status: ExitStatus) -> String {
        switch status {
        case .success: return "success"
        case .refused: return "refused"
        case .usage: return "usage"
        case .transient: return "transient"
        case .cancelled: return "cancelled"
        case .signInAgain: return "sign_in_again"
        }
    }

    /// The exit status of a code on the wire; `nil` for an unknown one.
    static func status(ofCode code: String) -> ExitStatus? {
        [ExitStatus.refused, .usage, .transient, .cancelled, .signInAgain].first { self.code(of: $0) == code }
    }

    private static func line(_ value: JSONValue) -> Data {
        Data((value.description + "\n").utf8)
    }
}

import Foundation
import OAuth2

/// What `oauth2 agent` answers: the access token of a profile, from one ``TokenSession``
/// per profile kept for the agent's life, so that any number of clients asking at once
/// share one refresh (the session's single flight), and processes that share the store with
/// the agent share it too (the store's lock).
///
/// Before each answer the session is checked against the store: tokens renewed or replaced
/// elsewhere (another `oauth2` process, a new `oauth2 login`) make a new session, and a
/// record that is gone (`oauth2 logout`) is an error to sign in again, not the access token
/// still in memory.
actor AgentTokens {
    /// The global options the agent was started with (config directory, store, -v).
    let global: GlobalOptions
    /// How the sessions' requests are sent.
    let transport: any HTTPTransport
    /// The open session of each profile, or its opening.
    private var sessions: [String: Task<Opened, any Error>] = [:]

    /// A profile's session, with what the answers need of its profile.
    struct Opened: Sendable {
        var session: TokenSession
        /// The host of the profile's server, for error sentences ("cannot reach …").
        var host: String?
    }

    init(global: GlobalOptions, transport: any HTTPTransport = Context.transport) {
        self.global = global
        self.transport = transport
    }

    /// The answer to a request: the profile's access token, fresh (and valid for the
    /// requested minimum when the provider's token lifetime allows it), or the failure a
    /// command would report, as one sentence and a hint.
    nonisolated func answer(_ request: AgentProtocol.Request) async -> AgentProtocol.Answer {
        var host: String?
        do {
            let opened = try await current(request.profile)
            host = opened.host
            let tokens = try await Self.fresh(opened.session, minimumTTL: request.minimumTTL)
            return .token(AgentProtocol.Token(accessToken: tokens.accessToken, tokenType: tokens.tokenType.rawValue, expiresAt: tokens.expiresAt))
        } catch {
            let situation = ErrorReport.Situation(host: host, profile: request.profile, httpTimeout: global.httpTimeout)
            let report = ErrorReport(error, situation)
            return .failure(AgentProtocol.Failure(status: ExitStatus(error), message: report.sentence, hint: report.hint))
        }
    }

    /// The tokens of `session`, renewed when they expire within the session's leeway or,
    /// when a new token would live that long, within `minimumTTL` seconds.
    static func fresh(_ session: TokenSession, minimumTTL: Int) async throws -> TokenSet {
        let tokens = try await session.freshTokens()
        guard minimumTTL > 0, let expiresAt = tokens.expiresAt, expiresAt.timeIntervalSinceNow < TimeInterval(minimumTTL),
            expiresAt.timeIntervalSince(tokens.issuedAt) > TimeInterval(minimumTTL)
        else { return tokens }
        // Renewed by another caller meanwhile: that is the answer (no second renewal).
        if let current = session.tokens, current.accessToken != tokens.accessToken { return current }
        return try await session.refresh()
    }

    /// The profile's session, checked against the store: reopened when the store holds
    /// other tokens than the session (renewed elsewhere, or a new sign-in), forgotten when
    /// the store holds none.
    private func current(_ profile: String) async throws -> Opened {
        let opening = opening(profile)
        let opened = try await resultOf(opening, profile: profile)
        guard let record = try await opened.session.store.load(opened.session.key) else {
            forget(profile, opening)
            throw CLIError.signInAgain("Profile \"\(profile)\" has no stored tokens", hint: "sign in again with `oauth2 login`")
        }
        guard let tokens = opened.session.tokens, record.tokens.accessToken != tokens.accessToken else { return opened }
        // Changed since: a renewal of this session that has saved and not yet answered, or
        // another process. Either way the stored tokens are the newest.
        forget(profile, opening)
        return try await resultOf(self.opening(profile), profile: profile)
    }

    /// The opening of the profile's session, started if there is none.
    private func opening(_ profile: String) -> Task<Opened, any Error> {
        if let opening = sessions[profile] { return opening }
        var global = global
        global.profile = profile
        let context = Context(global, transport: transport)
        let opening = Task { () throws -> Opened in
            let (profile, session) = try await context.session()
            if profile.options[ProfileOption.dpop] != nil {
                throw CLIError(
                    .refused, "Profile \"\(context.profileName)\" has DPoP-bound tokens, which are of no use without their key, and the agent hands out no key",
                    hint: "use `oauth2 --profile \(context.profileName) request` without the agent")
            }
            let server = profile.issuer ?? profile.tokenEndpoint
            return Opened(session: session, host: server.flatMap(URL.init(string:))?.host)
        }
        sessions[profile] = opening
        return opening
    }

    /// The opened session; a failed opening is forgotten, so that the next request tries
    /// again (after a sign-in, say).
    private func resultOf(_ opening: Task<Opened, any Error>, profile: String) async throws -> Opened {
        do {
            return try await opening.value
        } catch {
            forget(profile, opening)
            throw error
        }
    }

    /// Forgets the profile's session if it is still `opening`.
    private func forget(_ profile: String, _ opening: Task<Opened, any Error>) {
        if sessions[profile] == opening { sessions[profile] = nil }
    }
}

import Foundation

/// What ``TokenSession/signOut(_:endSession:progress:)`` does. The steps run in this order
/// (OktaOidc's): revoke the access token, revoke the refresh token, build the end-session
/// request, remove the tokens — the last only when no revocation failed, so that a failed
/// sign-out can be tried again with the tokens it needs.
public struct SignOutSteps: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The option bits.
    public let rawValue: Int
    /// Creates options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Revoke the access token (RFC 7009).
    public static let revokeAccessToken = SignOutSteps(rawValue: 1 << 0)
    /// Revoke the refresh token (RFC 7009); skipped when there is none.
    public static let revokeRefreshToken = SignOutSteps(rawValue: 1 << 1)
    /// Build the RP-initiated logout request (OpenID Connect) for the front end to open.
    public static let endSession = SignOutSteps(rawValue: 1 << 2)
    /// Remove the tokens from the store and from the session.
    public static let removeFromStore = SignOutSteps(rawValue: 1 << 3)

    /// Every step.
    public static let all: SignOutSteps = [.revokeAccessToken, .revokeRefreshToken, .endSession, .removeFromStore]
    /// Revoke both tokens and remove them; no end-session request.
    public static let revokeAndRemove: SignOutSteps = [.revokeAccessToken, .revokeRefreshToken, .removeFromStore]

    /// The steps, in the order they run.
    static let ordered: [SignOutSteps] = [.revokeAccessToken, .revokeRefreshToken, .endSession, .removeFromStore]

    /// The steps' names, in the order they run.
    public var description: String {
        let names: [(SignOutSteps, String)] = [
            (.revokeAccessToken, "revokeAccessToken"), (.revokeRefreshToken, "revokeRefreshToken"),
            (.endSession, "endSession"), (.removeFromStore, "removeFromStore"),
        ]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// One step of a sign-out, as it happens.
public struct SignOutProgress: Sendable, CustomStringConvertible {
    /// What became of a step.
    public enum Outcome: Sendable, CustomStringConvertible {
        /// The step is starting.
        case started
        /// The step succeeded.
        case succeeded
        /// The step had nothing to do (no refresh token to revoke, no tokens at all).
        case skipped
        /// The server does not offer the step (it has no revocation or end-session
        /// endpoint): nothing was sent, and the sign-out goes on.
        case notOffered
        /// The step failed, or was not done because an earlier one failed.
        case failed(any Error)

        /// A few words: `done`, `nothing to do`, `not offered by the server`, `failed: …`.
        public var description: String {
            switch self {
            case .started: "started"
            case .succeeded: "done"
            case .skipped: "nothing to do"
            case .notOffered: "not offered by the server"
            case .failed(let error): "failed: \(error)"
            }
        }
    }

    /// The step: exactly one of the ``SignOutSteps``.
    public var step: SignOutSteps
    /// What became of it.
    public var outcome: Outcome

    /// Creates a progress report.
    public init(step: SignOutSteps, outcome: Outcome) {
        self.step = step
        self.outcome = outcome
    }

    /// The step in words, then its outcome: `revoke the access token: done`.
    public var description: String {
        let action: String
        switch step {
        case .revokeAccessToken: action = "revoke the access token"
        case .revokeRefreshToken: action = "revoke the refresh token"
        case .endSession: action = "end the provider's session"
        case .removeFromStore: action = "forget the tokens"
        default: action = "\(step)"
        }
        return "\(action): \(outcome)"
    }
}

/// What a sign-out did.
public struct SignOutResult: Sendable {
    /// The steps that failed, or were not done because an earlier one failed; empty when
    /// the sign-out succeeded.
    public var failed: SignOutSteps
    /// Why each failed step failed, keyed by the step.
    public var errors: [SignOutSteps: any Error]
    /// The logout request for the front end to open, when ``SignOutSteps/endSession`` was
    /// asked for and succeeded.
    public var endSessionRequest: EndSessionRequest?

    /// `true` when every step asked for succeeded (or had nothing to do).
    public var succeeded: Bool { failed.isEmpty }
}

extension TokenSession {
    /// Signs out: runs the steps of `options` in order, reporting each to `progress`, and
    /// says which failed. It never throws: every failure is in the result.
    ///
    /// The steps run under the store's exclusive lock, on the newest tokens (those in the
    /// store when another process renewed them). When a revocation fails the tokens are not
    /// removed (the result lists ``SignOutSteps/removeFromStore`` as failed too), so the
    /// sign-out can be tried again. After a removal the session has no tokens and reports
    /// ``TokenSessionEvent/signedOut(_:)`` with `nil`.
    ///
    /// - Parameters:
    ///   - options: the steps; ``SignOutSteps/all`` by default.
    ///   - endSession: the end-session request's options; the ID token is added as
    ///     `id_token_hint` unless given.
    ///   - progress: called as each step starts and ends.
    public func signOut(
        _ options: SignOutSteps = .all,
        endSession: EndSessionOptions = EndSessionOptions(),
        progress: (@Sendable (SignOutProgress) -> Void)? = nil
    ) async -> SignOutResult {
        let steps = SignOutSteps(
            key: key, client: client, store: store, memory: state.snapshot?.tokens,
            options: options, endSession: endSession, progress: progress)
        let result: SignOutSteps.Outcome
        do {
            result = try await store.withExclusiveAccess(to: key) { try await steps.run() }
        } catch {
            // The lock or the first read failed: no step ran.
            var errors: [SignOutSteps: any Error] = [:]
            for step in SignOutSteps.ordered where options.contains(step) {
                errors[step] = error
                progress?(SignOutProgress(step: step, outcome: .failed(error)))
            }
            return SignOutResult(failed: options, errors: errors, endSessionRequest: nil)
        }
        if result.removed { replaceTokens(nil, event: .signedOut(nil)) }
        return result.result
    }
}

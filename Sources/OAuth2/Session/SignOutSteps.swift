import Foundation

/// The sign-out steps, run inside the store's lock.
struct SignOutSteps: Sendable {
    struct Outcome: Sendable {
        var result: SignOutResult
        var removed: Bool
    }

    let key: TokenSessionKey
    let client: OAuth2Client
    let store: any TokenStore
    let memory: TokenSet?
    let options: SignOutSteps
    let endSession: EndSessionOptions
    let progress: (@Sendable (SignOutProgress) -> Void)?

    /// The endpoint a network step talks to.
    private func endpoint(for step: SignOutSteps) -> URL? {
        step == .endSession ? client.metadata.endSessionEndpoint : client.metadata.revocationEndpoint
    }

    func run() async throws -> Outcome {
        let stored = try await store.load(key)
        let tokens = RenewalAttempt.newest(stored?.tokens, memory)
        var result = SignOutResult(failed: [], errors: [:], endSessionRequest: nil)
        var removed = false

        for step in SignOutSteps.ordered where options.contains(step) {
            progress?(SignOutProgress(step: step, outcome: .started))
            if step != .removeFromStore, endpoint(for: step) == nil {
                // The server has no endpoint for the step: nothing to send, nothing failed.
                progress?(SignOutProgress(step: step, outcome: .notOffered))
                continue
            }
            let outcome: SignOutProgress.Outcome
            do {
                switch step {
                case .revokeAccessToken:
                    if let token = tokens?.accessToken {
                        try await client.revoke(token, hint: .accessToken)
                        outcome = .succeeded
                    } else {
                        outcome = .skipped
                    }
                case .revokeRefreshToken:
                    if let token = tokens?.refreshToken {
                        try await client.revoke(token, hint: .refreshToken)
                        outcome = .succeeded
                    } else {
                        outcome = .skipped
                    }
                case .endSession:
                    var endSessionOptions = endSession
                    if endSessionOptions.idTokenHint == nil { endSessionOptions.idTokenHint = tokens?.idToken }
                    result.endSessionRequest = try client.endSessionRequest(endSessionOptions)
                    outcome = .succeeded
                default:  // .removeFromStore
                    let revocations: SignOutSteps = [.revokeAccessToken, .revokeRefreshToken]
                    if let failure = SignOutSteps.ordered.first(where: { revocations.contains($0) && result.failed.contains($0) }) {
                        let cause = result.errors[failure]
                        throw OAuth2Error(
                            (cause as? OAuth2Error)?.code ?? .invalidRequest, source: .client,
                            message: "The tokens were kept because \(failure) failed; sign out again to retry.",
                            underlyingError: cause)
                    }
                    try await store.remove(key)
                    removed = true
                    outcome = tokens == nil ? .skipped : .succeeded
                }
            } catch {
                result.failed.insert(step)
                result.errors[step] = error
                outcome = .failed(error)
            }
            progress?(SignOutProgress(step: step, outcome: outcome))
        }
        return Outcome(result: result, removed: removed)
    }
}

import Foundation

extension TestProvider {
    /// Makes the next `times` sign-ins at the authorization endpoint grant less than asked:
    /// `scopes` are left out of the code's grant, so the token response's `scope` (and the
    /// access token, introspection, UserInfo) lack them — as when a user unticks a
    /// permission on a consent page. Queued after any withholding already scripted.
    ///
    /// Use it to test a client's step-up loop: a resource server that answers
    /// `insufficient_scope` for a withheld scope keeps answering it after the step-up, and
    /// the client must stop (after one step-up) with an error rather than sign in forever.
    ///
    /// ```swift
    /// provider.withholdScopes(["mcp:write"], times: 2)   // the first sign-in and its step-up
    /// ```
    public func withholdScopes(_ scopes: Set<String>, times: Int = 1) {
        guard times > 0, !scopes.isEmpty else { return }
        core.state.withLock { $0.withheldScopes += Array(repeating: scopes, count: times) }
    }

    /// How many sign-ins scripted by ``withholdScopes(_:times:)`` are still to come.
    public var pendingScopeWithholdings: Int {
        core.state.withLock { $0.withheldScopes.count }
    }
}

extension ProviderState {
    /// The scopes a sign-in grants: the asked ones, less what the next scripted withholding
    /// (if any) leaves out, which is used up.
    mutating func grantedScopes(asked scopes: [String]) -> [String] {
        guard !withheldScopes.isEmpty else { return scopes }
        let withheld = withheldScopes.removeFirst()
        return scopes.filter { !withheld.contains($0) }
    }
}

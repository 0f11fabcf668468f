import Foundation
import NIOHTTP1
import OAuth2Internals
import OAuth2JOSE

extension TestProvider {
    /// A user code as typed: case, spaces and dashes do not matter (RFC 8628 §6.1).
    static func normalizedUserCode(_ code: String) -> String {
        String(code.uppercased().filter { $0 != "-" && !$0.isWhitespace })
    }
}

extension ProviderCore {
    /// The device authorization endpoint (RFC 8628 §3.1, §3.2).
    func deviceAuthorization(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        let parameters: Parameters
        let client: TestProvider.Client
        switch authenticatedForm(request) {
        case .success(let form): (parameters, client) = form
        case .failure(let reply): return reply
        }
        guard client.grantTypes.contains(.deviceCode) else {
            return .oauthError("unauthorized_client", "The client may not use the device flow.")
        }
        let scopes = Self.scopes(parameters["scope"])
        let forbidden = Self.forbiddenScopes(scopes, for: client)
        guard forbidden.isEmpty else {
            return .oauthError("invalid_scope", "The client may not ask for: \(forbidden.joined(separator: " ")).")
        }
        let (deviceCode, userCode, lifetimes) = state.withLock { state in
            state.prune(now: now)
            let deviceCode = Random.token()
            var userCode = Random.userCode()
            while state.userCodes[TestProvider.normalizedUserCode(userCode)] != nil { userCode = Random.userCode() }
            state.devices[deviceCode] = DeviceRecord(
                clientID: client.id, userCode: userCode, scopes: scopes,
                expiresAt: now.addingTimeInterval(state.lifetimes.deviceCode.timeInterval),
                interval: state.lifetimes.devicePollingInterval)
            state.userCodes[TestProvider.normalizedUserCode(userCode)] = deviceCode
            return (deviceCode, userCode, state.lifetimes)
        }
        return .json(.ok, [
            "device_code": .string(deviceCode),
            "user_code": .string(userCode),
            "verification_uri": .string(url(.deviceVerification)),
            "verification_uri_complete": .string(FormEncoding.appending([("user_code", userCode)], to: url(.deviceVerification))),
            "expires_in": .integer(lifetimes.deviceCode.wholeSeconds),
            "interval": .integer(max(1, lifetimes.devicePollingInterval.wholeSeconds)),
        ])
    }

    /// Approves (or denies) a pending device authorization by its user code.
    func decideDevice(userCode: String, username: String?, approve: Bool, now: Date) throws(TestProviderError) {
        let outcome = state.withLock { state -> Result<Void, TestProviderError> in
            guard let deviceCode = state.userCodes[TestProvider.normalizedUserCode(userCode)],
                var record = state.devices[deviceCode], now < record.expiresAt
            else { return .failure(TestProviderError(.unknownUserCode, "No pending device authorization has this user code.")) }
            if approve {
                guard let name = username ?? state.autoApprovedUser, state.users[name] != nil else {
                    return .failure(TestProviderError(.unknownUser, "No such user (and no auto-approved user) to approve the device for."))
                }
                record.status = .approved(username: name, at: now)
            } else {
                record.status = .denied
            }
            state.devices[deviceCode] = record
            return .success(())
        }
        try outcome.get()
    }

    /// The page the user visits (RFC 8628 §3.3): with a `user_code`, it approves that
    /// device for the auto-approved user; without, it shows a form asking for the code.
    func deviceVerification(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        guard request.method == .GET || request.method == .POST else { return .methodNotAllowed("GET, POST") }
        guard case .success(let parameters) = Parameters.read(request, body: request.method == .POST) else {
            return .html(.badRequest, title: "Invalid request", "The parameters are not valid form encoding.")
        }
        guard let userCode = parameters["user_code"] else {
            let form = """
                <form method="get" action="\(HTML.escape(url(.deviceVerification)))">
                <label>Code shown on your device: <input name="user_code" autocomplete="off"></label>
                <button type="submit">Approve</button></form>
                """
            return .response(
                .ok, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                body: Array(HTML.page(title: "Connect a device", body: form).utf8))
        }
        do {
            try decideDevice(userCode: userCode, username: nil, approve: true, now: now)
        } catch let error where error.code == .unknownUser {
            return .html(.forbidden, title: "Not signed in", "No user is signed in to approve the device with.")
        } catch {
            return .html(.badRequest, title: "Unknown code", "No pending device authorization has this code, or it has expired.")
        }
        return .html(.ok, title: "Device approved", "The device is signed in. You can close this page.")
    }
}

import ArgumentParser
import Foundation
import OAuth2

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "List profiles: issuer, client, subject, expiry and scopes (never a token).")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = Context(global)
        let names = global.profile == nil && ProcessInfo.processInfo.environment["OAUTH2_PROFILE"] == nil
            ? context.profiles.names() : [global.profileName]
        var entries: [JSONValue] = []
        for name in names {
            guard let profile = try context.profiles.load(name) else { continue }
            var entry: [String: JSONValue] = [
                "profile": .string(name), "client_id": .string(profile.clientID), "grant": .string(profile.grant),
                "store": .string((global.store ?? profile.store).rawValue),
            ]
            if let issuer = profile.issuer ?? profile.tokenEndpoint { entry["issuer"] = .string(issuer) }
            let key = TokenSessionKey(issuer: profile.issuer ?? profile.tokenEndpoint ?? "", clientID: profile.clientID, account: name)
            do {
                if let record = try await context.tokenStore(global.store ?? profile.store).load(key) {
                    entry["signed_in"] = true
                    if let subject = record.subject ?? record.tokens.idTokenClaims?.subject { entry["subject"] = .string(subject) }
                    if let expiresAt = record.tokens.expiresAt {
                        entry["expires_at"] = .string(ISO8601DateFormatter().string(from: expiresAt))
                        entry["expired"] = .bool(expiresAt <= Date())
                    }
                    entry["scopes"] = .array((record.tokens.scopes ?? profile.scopes).map(JSONValue.string))
                    entry["refresh_token"] = .bool(record.tokens.refreshToken != nil)
                    // The thumbprint (public) of the DPoP key kept with DPoP-bound tokens.
                    if let key = try? record.dpopKey() { entry["dpop_jkt"] = .string(key.thumbprint) }
                } else {
                    entry["signed_in"] = false
                }
            } catch {
                entry["store_error"] = .string(ErrorReport(error).sentence)
            }
            entries.append(.object(entry))
        }
        if global.json {
            Output.json(.array(entries))
            return
        }
        if entries.isEmpty { Output.result("No profiles in \(context.profiles.directory.path).") }
        for case .object(let entry) in entries {
            var line = "\(entry["profile"]?.stringValue ?? "?"): \(entry["issuer"]?.stringValue ?? "?") client \(entry["client_id"]?.stringValue ?? "?")"
            if entry["signed_in"] == .bool(true) {
                if let subject = entry["subject"]?.stringValue { line += ", subject \(subject)" }
                if let expiry = entry["expires_at"]?.stringValue {
                    line += entry["expired"] == .bool(true) ? ", expired \(expiry)" : ", expires \(expiry)"
                }
                if let scopes = entry["scopes"]?.arrayValue { line += ", scopes \(scopes.compactMap(\.stringValue).joined(separator: " "))" }
                if let jkt = entry["dpop_jkt"]?.stringValue { line += ", DPoP key \(jkt)" }
            } else {
                line += ", not signed in"
            }
            Output.result(line + " [\(entry["store"]?.stringValue ?? "")]")
        }
    }
}

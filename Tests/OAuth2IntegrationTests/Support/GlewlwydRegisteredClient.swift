import Foundation
import OAuth2

/// A confidential client of Glewlwyd registered for one test run through its admin API
/// (admin/password), with the properties the test needs; removed by `remove()`.
struct GlewlwydRegisteredClient {
    /// `<prefix>-` and eight random characters: unique to the run.
    let id: String
    let secret = UUID().uuidString
    let admin = Browser()
    var api: URL { Server.glewlwyd.baseURL.appendingPathComponent("api") }

    init(prefix: String) {
        id = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Registers the client: enabled, confidential, with its id, name and secret, and
    /// `properties` (`redirect_uri`, `authorization_type`, `scope`, …).
    func register(_ properties: [String: JSONValue]) async throws {
        try await admin.json(.post, api.appendingPathComponent("auth/"), #"{"username":"admin","password":"password"}"#)
        var body: [String: JSONValue] = [
            "client_id": .string(id), "client_name": .string(id), "confidential": true, "enabled": true, "client_secret": .string(secret),
        ]
        body.merge(properties) { _, new in new }
        try await admin.json(.post, api.appendingPathComponent("client/"), JSONValue.object(body).description)
    }

    func remove() async { _ = try? await admin.send(.delete, api.appendingPathComponent("client/\(id)")) }
}

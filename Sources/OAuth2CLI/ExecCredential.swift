import Foundation
import OAuth2

/// Kubernetes' `ExecCredential` (`client.authentication.k8s.io`), the message between
/// kubectl (client-go) and a credential plugin named in a kubeconfig's `users[].user.exec`.
///
/// kubectl passes the request in the environment variable `KUBERNETES_EXEC_INFO` (with
/// `provideClusterInfo`, or `interactiveMode` set); the plugin prints the answer, of the same
/// `apiVersion`, on stdout: `status.token`, and `status.expirationTimestamp` (RFC 3339), until
/// which kubectl keeps using the token without running the plugin again.
enum ExecCredential {
    /// The API versions this tool answers: `v1` (Kubernetes 1.22+) and `v1beta1`.
    static let apiVersions = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]
    /// The version answered when kubectl sends no request (`KUBERNETES_EXEC_INFO` unset).
    static let defaultAPIVersion = "client.authentication.k8s.io/v1"

    /// Why a request cannot be answered.
    struct RequestError: Error, Equatable {
        var reason: String
    }

    /// The `apiVersion` to answer with: the request's, from `KUBERNETES_EXEC_INFO`
    /// (`nil` or empty: ``defaultAPIVersion``).
    ///
    /// - Throws: ``RequestError`` when the request is not JSON, not an `ExecCredential`, or
    ///   of a version this tool does not speak (kubectl would refuse any other answer).
    static func apiVersion(ofRequest execInfo: String?) throws -> String {
        guard let execInfo, !execInfo.isEmpty else { return defaultAPIVersion }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(execInfo.utf8)), case .object(let object) = value else {
            throw RequestError(reason: "KUBERNETES_EXEC_INFO is not a JSON object")
        }
        if let kind = object["kind"], kind != .string("ExecCredential") {
            throw RequestError(reason: "KUBERNETES_EXEC_INFO is not an ExecCredential")
        }
        guard let version = object["apiVersion"]?.stringValue else {
            throw RequestError(reason: "KUBERNETES_EXEC_INFO has no apiVersion")
        }
        guard apiVersions.contains(version) else {
            throw RequestError(
                reason: "kubectl asks for \(version); this tool answers \(apiVersions.joined(separator: " and ")) (set it in the kubeconfig's exec.apiVersion)")
        }
        return version
    }

    /// The answer: `status.token`, and `status.expirationTimestamp` when the expiry is known
    /// — RFC 3339 in UTC, whole seconds rounded down, so never later than the token's.
    static func encode(apiVersion: String, token: HelperToken) throws -> String {
        var status: [String: JSONValue] = ["token": .string(token.accessToken)]
        if let expiresAt = token.expiresAt { status["expirationTimestamp"] = .string(timestamp(expiresAt)) }
        let credential: JSONValue = .object([
            "apiVersion": .string(apiVersion), "kind": "ExecCredential", "spec": .object([:]), "status": .object(status),
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(credential), as: UTF8.self)
    }

    /// `2006-01-02T15:04:05Z`: RFC 3339 in UTC, the seconds rounded down.
    static func timestamp(_ date: Date) -> String {
        let whole = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: whole)
    }
}

import Foundation
import HTTPTypes
import OAuth2Internals

/// Removes secrets from everything the library logs or puts in an error message.
///
/// It works by allow-list: a form or query parameter, a JSON member or a header keeps its
/// value only when its name is known to be harmless (`grant_type`, `scope`, `client_id`,
/// `expires_in`, `error`…); every other value — tokens, codes, verifiers, secrets,
/// passwords, assertions, and anything the library has never heard of — becomes
/// `<redacted>`. A new sensitive parameter is therefore redacted before anyone thinks
/// of it.
package enum Redactor {
    /// The placeholder written instead of a secret.
    public static let placeholder = "<redacted>"

    /// Parameter and member names whose values are safe to show.
    public static let visibleParameters: Set<String> = [
        "grant_type", "response_type", "response_mode", "client_id", "redirect_uri", "scope",
        "code_challenge_method", "token_type", "token_type_hint", "expires_in", "refresh_expires_in",
        "error", "error_description", "error_uri", "prompt", "max_age", "ui_locales", "acr_values",
        "display", "resource", "audience", "active", "interval", "iss", "issuer", "exp", "iat", "nbf",
        "requested_token_type", "issued_token_type", "subject_token_type", "actor_token_type",
        "client_assertion_type", "aud", "verification_uri", "dpop_jkt",
    ]

    /// Header names whose values are safe to show.
    public static let visibleHeaders: Set<HTTPField.Name> = [
        .contentType, .contentLength, .accept, .userAgent, .date, .cacheControl, .retryAfter,
        .location, .server, .acceptEncoding, .contentEncoding,
    ]

    /// The value to log for a parameter or member named `name`.
    public static func value(_ value: String, forParameter name: String) -> String {
        visibleParameters.contains(name) ? value : placeholder
    }

    /// Renders form parameters for a log line, secrets redacted.
    public static func parameters(_ parameters: [(String, String)]) -> String {
        parameters.map { "\($0.0)=\(value($0.1, forParameter: $0.0))" }.joined(separator: "&")
    }

    /// A URL for a log line: user info removed, query and fragment values redacted unless
    /// allow-listed.
    public static func url(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return placeholder
        }
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
        }
        // Only FormURLEncoding's output goes back in: URLComponents traps on invalid characters.
        if let query = components.percentEncodedQuery {
            components.percentEncodedQuery = redactedForm(query)
        }
        if let fragment = components.percentEncodedFragment, !fragment.isEmpty {
            components.percentEncodedFragment = redactedForm(fragment)
        }
        return components.string ?? placeholder
    }

    private static func redactedForm(_ text: String) -> String {
        let pairs = FormURLEncoding.decode(text) ?? [("", "")]
        return pairs.map { name, value in
            name.isEmpty && value.isEmpty
                ? FormURLEncoding.encode(placeholder)
                : "\(FormURLEncoding.encode(name))=\(FormURLEncoding.encode(Self.value(value, forParameter: name)))"
        }.joined(separator: "&")
    }

    /// Headers for a log line, secrets (Authorization, DPoP, cookies…) redacted.
    public static func headers(_ fields: HTTPFields) -> String {
        fields.map { "\($0.name): \(visibleHeaders.contains($0.name) ? $0.value : placeholder)" }
            .joined(separator: ", ")
    }

    /// Server-supplied text that goes into an error message: control characters (and
    /// Unicode format characters such as bidirectional overrides) removed and the length
    /// bounded, so a hostile server can neither forge log lines nor flood them.
    static func sanitizeServerText(_ text: String, limit: Int = 300) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }))
        return cleaned.count > limit ? String(cleaned.prefix(limit)) + "…" : cleaned
    }

    /// `true` when `code` may be an RFC 6749 `error` value: one or more characters of
    /// %x20-21 / %x23-5B / %x5D-7E (§5.2, Appendix A.7), at most 128 of them.
    static func isValidErrorCode(_ code: String) -> Bool {
        let scalars = code.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= 128 else { return false }
        return scalars.allSatisfy { (0x20...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\" }
    }
}

/// The secrets one exchange puts on the wire — the values of every request parameter or
/// JSON member whose name is not known to be harmless (tokens, codes, verifiers, client
/// secrets, assertions, passwords), and the credentials of the `Authorization` and `DPoP`
/// headers — so that a server echoing one back (in `error_description`, `error_uri`, a
/// challenge) cannot put it in an error message or a log line.
struct HeldSecrets: Sendable {
    /// Values shorter than this are not looked for: they would redact ordinary words.
    static let minimumLength = 6

    /// The values, longest first (so that a secret containing another is replaced whole).
    private(set) var values: [String]

    /// The given values.
    init(_ values: some Sequence<String>) {
        var unique = Set<String>()
        for value in values where value.count >= Self.minimumLength {
            unique.insert(value)
            let encoded = FormURLEncoding.encode(value)
            if encoded != value { unique.insert(encoded) }
        }
        self.values = unique.sorted { $0.count > $1.count }
    }

    /// The secrets of `request` and its form or JSON `body`.
    init(request: HTTPRequest, body: Data?) {
        var found: [String] = []
        for field in request.headerFields where !Redactor.visibleHeaders.contains(field.name) {
            found.append(field.value)
            // `Basic base64(id:secret)`, `Bearer token`, `DPoP token`: the credential alone,
            // and for Basic the decoded pair and the secret (the client id is no secret).
            let parts = field.value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let credential = String(parts[1]).trimmingCharacters(in: .whitespaces)
            found.append(credential)
            if parts[0].lowercased() == "basic", let decoded = Data(base64Encoded: credential).flatMap({ String(data: $0, encoding: .utf8) }) {
                found.append(decoded)
                if let colon = decoded.firstIndex(of: ":") {
                    let secret = String(decoded[decoded.index(after: colon)...])
                    found.append(FormURLEncoding.decodeComponent(secret) ?? secret)
                }
            }
        }
        if let body, !body.isEmpty {
            if let members = JSONValue.parseObject(body) {
                for (name, value) in members where !Redactor.visibleParameters.contains(name) {
                    if let text = value.stringValue { found.append(text) }
                }
            } else if let text = String(data: body, encoding: .utf8), let pairs = FormURLEncoding.decode(text) {
                for (name, value) in pairs where !Redactor.visibleParameters.contains(name) { found.append(value) }
            }
        }
        self.init(found)
    }

    /// `true` when there is nothing to withhold.
    var isEmpty: Bool { values.isEmpty }

    /// `text` with every secret replaced by ``Redactor/placeholder``.
    func scrub(_ text: String) -> String {
        var text = text
        for value in values where text.contains(value) {
            text = text.replacingOccurrences(of: value, with: Redactor.placeholder)
        }
        return text
    }
}

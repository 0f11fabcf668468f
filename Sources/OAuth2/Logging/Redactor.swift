import Foundation
import HTTPTypes

/// Removes secrets from everything the library logs or puts in an error message.
///
/// It works by allow-list: a form or query parameter, a JSON member or a header keeps its
/// value only when its name is known to be harmless (`grant_type`, `scope`, `client_id`,
/// `expires_in`, `error`…); every other value — tokens, codes, verifiers, secrets,
/// passwords, assertions, and anything the library has never heard of — becomes
/// `<redacted>`. A new sensitive parameter is therefore redacted before anyone thinks
/// of it.
public enum Redactor {
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

    /// Server-supplied text that goes into an error message: control characters removed
    /// and length bounded, so a hostile server cannot forge log lines.
    static func sanitizeServerText(_ text: String, limit: Int = 500) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }))
        return cleaned.count > limit ? String(cleaned.prefix(limit)) + "…" : cleaned
    }
}

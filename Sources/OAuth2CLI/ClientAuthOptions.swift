import ArgumentParser
import Foundation
import OAuth2

/// How the client authenticates: the method, and the key and audience of JWT assertions.
/// Shared by the commands that make a profile (`login`, `token --grant`).
struct ClientAuthOptions: ParsableArguments {
    /// The methods the tool knows.
    static let methods = [
        "client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "tls_client_auth", "self_signed_tls_client_auth",
        "none",
    ]

    /// The methods whose credential is the TLS client certificate (RFC 8705 §2).
    static let mutualTLSMethods = ["tls_client_auth", "self_signed_tls_client_auth"]

    /// What `--assertion-audience` takes.
    enum Audience: String, ExpressibleByArgument, CaseIterable {
        case issuer
        case tokenEndpoint = "token-endpoint"
        case endpoint

        var library: ClientAssertionOptions.Audience {
            switch self {
            case .issuer: return .issuer
            case .tokenEndpoint: return .tokenEndpoint
            case .endpoint: return .requestEndpoint
            }
        }
    }

    @Option(
        name: .customLong("auth-method"),
        help: """
            client_secret_basic, client_secret_post, client_secret_jwt (an HS256 assertion made with the \
            client secret), private_key_jwt (an assertion signed with --private-key), tls_client_auth or \
            self_signed_tls_client_auth (mutual TLS with --client-certificate) or none.
            """)
    var authMethod: String?

    @Option(
        name: .customLong("client-certificate"),
        help: ArgumentHelp(
            """
            A client certificate (PEM) to present over mutual TLS (RFC 8705), with --client-key: for \
            tls_client_auth, self_signed_tls_client_auth, or certificate-bound tokens with any method. The \
            profile keeps its path.
            """,
            valueName: "file"))
    var clientCertificate: String?

    @Option(
        name: .customLong("client-key"),
        help: ArgumentHelp("The private key (PEM) of --client-certificate; the profile keeps its path, never the key.", valueName: "file"))
    var clientKey: String?

    @Option(
        name: .customLong("private-key"),
        help: ArgumentHelp(
            "The private key (PEM or JWK file) of private_key_jwt; the profile keeps its path, never the key.",
            valueName: "file"))
    var privateKey: String?

    @Option(name: .customLong("key-id"), help: ArgumentHelp("The kid of --private-key's assertions (default: the JWK's own).", valueName: "kid"))
    var keyID: String?

    @Option(
        name: .customLong("assertion-audience"),
        help: """
            What a JWT assertion's aud names: issuer (default), token-endpoint, or endpoint (the URL each \
            request goes to, as Glewlwyd wants).
            """)
    var assertionAudience: Audience?

    func validate() throws {
        if let authMethod, !Self.methods.contains(authMethod) {
            throw ValidationError("--auth-method is one of \(Self.methods.joined(separator: ", ")) (got \"\(authMethod)\").")
        }
        if authMethod == "private_key_jwt", privateKey == nil { throw ValidationError("--auth-method private_key_jwt needs --private-key FILE.") }
        if privateKey != nil, let authMethod, authMethod != "private_key_jwt" {
            throw ValidationError("--private-key goes with --auth-method private_key_jwt (got \(authMethod)).")
        }
        if keyID != nil, privateKey == nil { throw ValidationError("--key-id goes with --private-key.") }
        if (clientCertificate == nil) != (clientKey == nil) { throw ValidationError("--client-certificate and --client-key go together.") }
        if let authMethod, Self.mutualTLSMethods.contains(authMethod), clientCertificate == nil {
            throw ValidationError("--auth-method \(authMethod) needs --client-certificate FILE and --client-key FILE.")
        }
        if assertionAudience != nil, authMethod != "client_secret_jwt", privateKey == nil {
            throw ValidationError("--assertion-audience goes with --auth-method client_secret_jwt or private_key_jwt.")
        }
    }

    /// Whether the client authenticates with a secret (so one must be given).
    var needsSecret: Bool { privateKey == nil && authMethod != "none" && !Self.mutualTLSMethods.contains(authMethod ?? "") }

    /// The authentication method to save: `private_key_jwt` when only `--private-key` was given.
    var method: String? { authMethod ?? (privateKey != nil ? "private_key_jwt" : nil) }

    /// The profile options these stand for (the key file as an absolute path).
    var profileOptions: [String: String] {
        var options: [String: String] = [:]
        if let privateKey { options[ProfileOption.privateKey] = URL(fileURLWithPath: privateKey).standardizedFileURL.path }
        if let keyID { options[ProfileOption.keyID] = keyID }
        if let assertionAudience { options[ProfileOption.assertionAudience] = assertionAudience.rawValue }
        if let clientCertificate, let clientKey {
            options[ProfileOption.clientCertificate] = URL(fileURLWithPath: clientCertificate).standardizedFileURL.path
            options[ProfileOption.clientKey] = URL(fileURLWithPath: clientKey).standardizedFileURL.path
        }
        return options
    }
}

import ArgumentParser
import Foundation
import OAuth2

/// The names under which a profile keeps the options of sender-constrained tokens, pushed
/// requests and JWT client authentication (``Profile/options``). Paths, algorithm names
/// and switches only: never key material.
enum ProfileOption {
    /// The DPoP key's algorithm (`ES256`, `EdDSA`…): the profile's tokens are DPoP-bound,
    /// and the key is kept with them in the token store.
    static let dpop = "dpop"
    /// `true`: authorization requests are pushed (PAR) even when the server does not require it.
    static let par = "par"
    /// The absolute path of the `private_key_jwt` key file (PEM or JWK).
    static let privateKey = "private_key"
    /// The `kid` put in client assertions, when not the key file's own.
    static let keyID = "key_id"
    /// What client assertions' `aud` names: `issuer`, `token-endpoint` or `endpoint`.
    static let assertionAudience = "assertion_audience"
}

/// How the client authenticates: the method, and the key and audience of JWT assertions.
/// Shared by the commands that make a profile (`login`, `token --grant`).
struct ClientAuthOptions: ParsableArguments {
    /// The methods the tool knows.
    static let methods = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"]

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
            client secret), private_key_jwt (an assertion signed with --private-key) or none.
            """)
    var authMethod: String?

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
        if assertionAudience != nil, authMethod != "client_secret_jwt", privateKey == nil {
            throw ValidationError("--assertion-audience goes with --auth-method client_secret_jwt or private_key_jwt.")
        }
    }

    /// Whether the client authenticates with a secret (so one must be given).
    var needsSecret: Bool { privateKey == nil && authMethod != "none" }

    /// The authentication method to save: `private_key_jwt` when only `--private-key` was given.
    var method: String? { authMethod ?? (privateKey != nil ? "private_key_jwt" : nil) }

    /// The profile options these stand for (the key file as an absolute path).
    var profileOptions: [String: String] {
        var options: [String: String] = [:]
        if let privateKey { options[ProfileOption.privateKey] = URL(fileURLWithPath: privateKey).standardizedFileURL.path }
        if let keyID { options[ProfileOption.keyID] = keyID }
        if let assertionAudience { options[ProfileOption.assertionAudience] = assertionAudience.rawValue }
        return options
    }
}

/// `--dpop [ALG]`: DPoP-bound tokens (RFC 9449) with a key made at sign-in.
enum DPoPArgument {
    /// What a bare `--dpop` stands for: the first algorithm the server lists that the library
    /// supports, ES256 when the server lists none.
    static let automatic = "auto"

    /// The algorithms `--dpop` takes, as written (matched without regard to case).
    static var algorithms: [String] { DPoPKey.supportedAlgorithms.map(\.rawValue) }

    /// `--dpop` followed by another option (or by nothing) becomes `--dpop=auto`, so that the
    /// option can be written alone (`login --dpop --issuer …`) or with its algorithm
    /// (`login --dpop EdDSA`). The commands that take `--dpop` have no positional arguments.
    static func expanded(_ arguments: [String]) -> [String] {
        var result: [String] = []
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { return result + arguments[index...] }
            guard argument == "--dpop" else {
                result.append(argument)
                continue
            }
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            result.append(next.map { !$0.hasPrefix("-") } == true ? argument : "--dpop=\(automatic)")
        }
        return result
    }

    /// The algorithm called `name` (any case), if DPoP keys can use it.
    static func algorithm(named name: String) -> JWSAlgorithm? {
        DPoPKey.supportedAlgorithms.first { $0.rawValue.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Checks a `--dpop` value.
    static func validate(_ value: String?) throws {
        guard let value, value != automatic else { return }
        guard algorithm(named: value) != nil else {
            throw ValidationError("--dpop takes an algorithm: \(algorithms.joined(separator: ", ")) (got \"\(value)\").")
        }
    }

    /// A new key for `value` (`auto`: chosen from the server's metadata).
    static func key(_ value: String, metadata: ServerMetadata) throws -> DPoPKey {
        do {
            guard let algorithm = algorithm(named: value) else { return try DPoPKey.generate(for: metadata) }
            if let listed = metadata.dpopSigningAlgValuesSupported, !listed.isEmpty, !listed.contains(algorithm.rawValue) {
                throw CLIError.usage("The server does not take DPoP proofs signed with \(algorithm.rawValue) (it lists \(listed.joined(separator: ", "))).")
            }
            return try DPoPKey.generate(algorithm)
        } catch let error as JOSEError {
            throw CLIError(.refused, "No DPoP key could be made: \(ErrorReport.reason(error)) (\(error.reason))")
        }
    }

    static let help = ArgumentHelp(
        """
        Bind the tokens to a DPoP key (RFC 9449) made now and kept with them in the token store. The algorithm may be \
        left out (ES256, or the first the server lists) or be ES384, ES512, EdDSA, RS256, PS256….
        """,
        valueName: "alg")
}

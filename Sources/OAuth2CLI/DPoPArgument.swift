import ArgumentParser
import Foundation
import OAuth2

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

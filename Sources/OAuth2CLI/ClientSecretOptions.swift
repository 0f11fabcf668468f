import ArgumentParser
import Foundation

/// The client secret of `login` and `token --grant`: from a file, from stdin, or (warned
/// against) on the command line. See ``SecretInput``.
struct ClientSecretOptions: ParsableArguments {
    @Option(
        name: .customLong("client-secret"),
        help: ArgumentHelp("The client secret itself (visible in ps and shell history: prefer the two forms below).", valueName: "secret"))
    var value: String?
    @Option(
        name: .customLong("client-secret-file"),
        help: ArgumentHelp("A file holding the client secret: any readable path, a pipe such as <(pass show app) included. A regular file is read again at each use; a pipe's secret is kept with the tokens.", valueName: "file"))
    var file: String?
    @Flag(name: .customLong("client-secret-stdin"), help: "Read the client secret from stdin.")
    var stdin = false

    /// `true` when a secret was given in any form.
    var isGiven: Bool { value != nil || file != nil || stdin }

    func validate() throws {
        if [value != nil, file != nil, stdin].filter({ $0 }).count > 1 {
            throw ValidationError("Give one of --client-secret, --client-secret-file and --client-secret-stdin.")
        }
    }

    /// The secret, read now, and the path a profile keeps to read it again: a regular
    /// file's only (the secret of a pipe or of stdin is kept in the token store instead, as
    /// one given on the command line).
    func resolve() throws -> (secret: String?, rememberedFile: String?) {
        if let file {
            let secret = try SecretInput.read(file: file, what: "The client secret file")
            let remembered = SecretInput.isRegularFile(file) ? URL(fileURLWithPath: file).standardizedFileURL.path : nil
            return (secret, remembered)
        }
        if stdin { return (try SecretInput.readStandardInput(for: "--client-secret-stdin"), nil) }
        if let value {
            SecretInput.warnOnCommandLine("--client-secret", instead: "--client-secret-file FILE or --client-secret-stdin")
            return (value, nil)
        }
        return (nil, nil)
    }
}

import ArgumentParser
import Foundation
import OAuth2

/// `oauth2 kubectl-credential`: a kubectl credential plugin (client-go's exec plugin),
/// printing an `ExecCredential` with the profile's access token.
struct KubectlCredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kubectl-credential",
        abstract: "A kubectl credential plugin: prints an ExecCredential with the profile's access token.",
        discussion: """
            In the kubeconfig (users[].user):
              exec:
                apiVersion: client.authentication.k8s.io/v1
                command: oauth2
                args: [kubectl-credential, --profile, work]
                interactiveMode: Never

            The token is renewed first when due, as `oauth2 token` does; status.expirationTimestamp is its \
            expiry (never later), until which kubectl reuses it without running the plugin again. The apiVersion \
            answered is the one kubectl asks for in KUBERNETES_EXEC_INFO (v1 or v1beta1; v1 when unset).
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let apiVersion: String
        do {
            apiVersion = try ExecCredential.apiVersion(ofRequest: ProcessInfo.processInfo.environment["KUBERNETES_EXEC_INFO"])
        } catch let error as ExecCredential.RequestError {
            throw CLIError.usage("kubectl-credential cannot answer: \(error.reason)")
        }
        let token = try await Context(global).helperToken()
        Output.result(try ExecCredential.encode(apiVersion: apiVersion, token: token))
    }
}

extension KubectlCredentialCommand: TakesGlobalOptions {}

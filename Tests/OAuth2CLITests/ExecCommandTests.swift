import ArgumentParser
import Foundation
import Testing

@testable import OAuth2CLI

/// `oauth2 exec [--env-var NAME] -- COMMAND [ARGUMENTS…]`: what is the command, what is the
/// tool's, and where the command is looked for.
@Suite struct ExecCommandTests {
    func parse(_ arguments: [String]) throws -> ExecCommand {
        try #require(try OAuth2Command.parseAsRoot(arguments) as? ExecCommand)
    }

    @Test func theCommandIsEverythingAfterTheDoubleDash() throws {
        let exec = try parse(["exec", "--profile", "p", "--env-var", "GH_TOKEN", "--", "gh", "api", "--paginate", "user"])
        #expect(exec.command == ["gh", "api", "--paginate", "user"])
        #expect(exec.envVar == "GH_TOKEN")
        #expect(exec.global.profileName == "p")
        #expect(try parse(["exec", "--", "--", "x"]).command == ["--", "x"], "only the first -- is the tool's")
    }

    @Test func orFromItsFirstWordWithItsOwnOptions() throws {
        let exec = try parse(["exec", "printenv", "--profile", "HOME"])
        #expect(exec.command == ["printenv", "--profile", "HOME"], "the command's options are its own")
        #expect(exec.global.profile == nil)
        #expect(exec.envVar == TokenOutput.defaultVariable)
    }

    @Test func aMissingCommandIsAUsageError() {
        for arguments in [["exec"], ["exec", "--"], ["exec", "--env-var", "T"], ["exec", "--env-var", "T", "--"]] {
            do {
                _ = try OAuth2Command.parseAsRoot(arguments)
                Issue.record("\(arguments) parsed")
            } catch {
                #expect(OAuth2Command.exitCode(for: error) == .validationFailure, "\(arguments)")  // CLI.run: exit 2
                #expect(OAuth2Command.message(for: error).contains("needs a command after --"), "\(arguments)")
            }
        }
    }

    @Test func anUnknownOptionBeforeTheCommandIsAUsageErrorAndHelpIsHelp() {
        do {
            _ = try OAuth2Command.parseAsRoot(["exec", "--profil", "p", "--", "true"])
            Issue.record("a misspelt option parsed")
        } catch {
            #expect(OAuth2Command.exitCode(for: error) == .validationFailure)  // CLI.run: exit 2
            #expect(OAuth2Command.message(for: error).contains("'--profil'"))
        }
        for help in ["--help", "-h"] {
            do {
                _ = try OAuth2Command.parseAsRoot(["exec", help])
                Issue.record("\(help) parsed as a command")
            } catch {
                #expect(OAuth2Command.exitCode(for: error) == .success)
                #expect(OAuth2Command.fullMessage(for: error).contains("USAGE: oauth2 exec"))
            }
        }
        #expect(throws: (any Error).self) { try OAuth2Command.parseAsRoot(["exec", "--env-var", "A-B", "--", "true"]) }
    }

    @Test func theCommandIsLookedForAsExecvpDoes() {
        #expect(ProcessReplacement.candidates(for: "gh", path: "/usr/local/bin:/usr/bin") == ["/usr/local/bin/gh", "/usr/bin/gh"])
        #expect(ProcessReplacement.candidates(for: "gh", path: "/bin::/usr/bin:") == ["/bin/gh", "gh", "/usr/bin/gh", "gh"], "an empty entry is the current directory")
        #expect(ProcessReplacement.candidates(for: "gh", path: nil) == ["/usr/local/bin/gh", "/usr/bin/gh", "/bin/gh"])
        #expect(ProcessReplacement.candidates(for: "./run.sh", path: "/usr/bin") == ["./run.sh"], "a path is not looked up")
        #expect(ProcessReplacement.candidates(for: "/usr/bin/env", path: "/bin") == ["/usr/bin/env"])
    }
}

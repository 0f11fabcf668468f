import ArgumentParser
import Foundation
import Testing

@testable import OAuth2CLI

/// `oauth2 --version` and the help text: paragraphs are single logical lines, so that the
/// argument parser wraps them to the terminal; only examples keep their own lines.
@Suite struct HelpAndVersionTests {
    @Test func versionIsOneLineFromOneConstant() throws {
        #expect(OAuth2Command.configuration.version == "oauth2 \(OAuth2Command.version)")
        #expect(OAuth2Command.version.range(of: #"^[0-9]+\.[0-9]+\.[0-9]+$"#, options: .regularExpression) != nil)
        do {
            _ = try OAuth2Command.parseAsRoot(["--version"])
            Issue.record("--version parsed as a command")
        } catch {
            #expect(OAuth2Command.exitCode(for: error) == .success)
            #expect(OAuth2Command.fullMessage(for: error) == "oauth2 \(OAuth2Command.version)")
        }
    }

    @Test func completionScriptsAreOffered() throws {
        for shell in ["bash", "zsh", "fish"] {
            do {
                _ = try OAuth2Command.parseAsRoot(["--generate-completion-script", shell])
                Issue.record("no completion script for \(shell)")
            } catch {
                #expect(OAuth2Command.exitCode(for: error) == .success)
                #expect(OAuth2Command.fullMessage(for: error).contains("register"), "\(shell)")
            }
        }
    }

    /// Every line of prose in a discussion ends a sentence (or introduces examples): no
    /// paragraph is broken across lines by hand.
    @Test func discussionsHaveNoHardBreaksInsideParagraphs() {
        let commands: [any ParsableCommand.Type] = [OAuth2Command.self] + OAuth2Command.configuration.subcommands
        #expect(commands.count > 10)
        for command in commands {
            for line in command.configuration.discussion.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix(" ") {
                    // An example, or its continuation: short enough not to be wrapped.
                    #expect(line.count <= 80, "\(command.configuration.commandName ?? "?"): \(line)")
                    continue
                }
                #expect([".", ":", ")"].contains(line.last.map(String.init) ?? ""), "\(command.configuration.commandName ?? "?"): \(line)")
            }
        }
    }

    @Test func aParagraphWrapsAsOne() {
        let help = LoginCommand.helpMessage(columns: 10_000)
        #expect(help.contains("Without --client-id, login signs in with the client of the existing profile (one made by `oauth2 register`, say); with no profile either"))
    }
}

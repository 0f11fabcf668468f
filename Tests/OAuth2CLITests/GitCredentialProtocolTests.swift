import Foundation
import Testing

@testable import OAuth2CLI

/// git's credential-helper protocol as `oauth2 git-credential` reads and answers it
/// (git-credential(1), "INPUT/OUTPUT FORMAT"): no git, no socket.
@Suite struct GitCredentialProtocolTests {
    func parse(_ text: String) throws -> GitCredentialMessage { try GitCredentialMessage.parse(Array(text.utf8)) }

    @Test func readsKeyValueLinesUpToTheBlankLine() throws {
        let message = try parse("protocol=https\nhost=git.example.com:8443\npath=team/project.git\nusername=alice\n\nhost=after.example.com\n")
        #expect(message.protocol == "https")
        #expect(message.host == "git.example.com:8443")
        #expect(message.path == "team/project.git")
        #expect(message.username == "alice")
    }

    @Test func endsAtTheEndOfInputWithoutABlankLine() throws {
        #expect(try parse("protocol=https\nhost=h").host == "h")
        #expect(try parse("").host == nil)
    }

    @Test func aValueKeepsEverythingAfterTheFirstEquals() throws {
        #expect(try parse("password=a=b==\n\n").password == "a=b==")
        #expect(try parse("password=\n\n").password == "")
    }

    @Test func unknownKeysAreIgnoredAndArraysCollected() throws {
        let message = try parse("capability[]=authtype\nwwwauth[]=Basic realm=\"x\"\nwwwauth[]=Bearer\nfuture_key=1\nprotocol=https\n\n")
        #expect(message.protocol == "https")
        #expect(message.list("wwwauth[]") == ["Basic realm=\"x\"", "Bearer"])
        #expect(message.list("capability[]") == ["authtype"])
        #expect(message["future_key"] == "1")
        // An empty value clears an array.
        #expect(try parse("wwwauth[]=Basic\nwwwauth[]=\nwwwauth[]=Bearer\n").list("wwwauth[]") == ["Bearer"])
    }

    @Test func crlfLineEndsAreRead() throws {
        let message = try parse("protocol=https\r\nhost=h\r\n\r\nhost=ignored\r\n")
        #expect(message.protocol == "https")
        #expect(message.host == "h")
        #expect(GitCredentialCommand.endsMessage(Array("protocol=https\r\n\r\n".utf8)))
    }

    @Test func malformedLinesAreRefused() {
        for text in ["protocol=https\nno equals sign\n\n", "=value\n\n", "host=a\0b\n\n"] {
            #expect(throws: GitCredentialMessage.ReadError.self) { try parse(text) }
        }
        #expect(throws: GitCredentialMessage.ReadError.self) { try GitCredentialMessage.parse([0x68, 0x3D, 0xFF, 0xFE, 0x0A]) }
    }

    @Test func theRefusalNeverQuotesTheLine() {
        do {
            _ = try parse("password-without-equals-s3cr3t\n\n")
            Issue.record("a malformed line was accepted")
        } catch {
            #expect(!String(describing: error).contains("s3cr3t"))
        }
    }

    @Test func oversizedInputIsBounded() throws {
        let big = "path=" + String(repeating: "a", count: GitCredentialMessage.maximumSize) + "\n\n"
        #expect(throws: GitCredentialMessage.ReadError(reason: "the request is larger than 64 KiB")) { try parse(big) }
        // What follows the blank line does not count.
        let after = "host=h\n\n" + String(repeating: "x", count: GitCredentialMessage.maximumSize * 2)
        #expect(try parse(after).host == "h")
    }

    @Test func theBlankLineIsFoundWhereverItIs() {
        #expect(GitCredentialCommand.endsMessage(Array("\n".utf8)))
        #expect(GitCredentialCommand.endsMessage(Array("host=h\n\nmore".utf8)))
        #expect(!GitCredentialCommand.endsMessage(Array("host=h\n".utf8)))
        #expect(!GitCredentialCommand.endsMessage([]))
    }

    @Test func servesHTTPSAndLoopbackHTTPOnly() throws {
        func serves(_ text: String, hosts: [String] = []) throws -> Bool { GitCredentialCommand.serves(try parse(text), hosts: hosts) }
        #expect(try serves("protocol=https\nhost=git.example.com\n"))
        #expect(try serves("protocol=http\nhost=127.0.0.1:8080\n"))
        #expect(try serves("protocol=http\nhost=[::1]:8080\n"))
        #expect(try serves("protocol=http\nhost=localhost\n"))
        #expect(try !serves("protocol=http\nhost=git.example.com\n"))
        #expect(try !serves("protocol=ssh\nhost=git.example.com\n"))
        #expect(try !serves("host=git.example.com\n"))
        #expect(try !serves("protocol=https\n"))
    }

    @Test func hostsFenceTheAnswers() throws {
        let request = try parse("protocol=https\nhost=git.example.com:8443\n")
        #expect(GitCredentialCommand.serves(request, hosts: ["git.example.com"]))
        #expect(GitCredentialCommand.serves(request, hosts: ["GIT.example.com:8443"]))
        #expect(!GitCredentialCommand.serves(request, hosts: ["git.example.com:443"]))
        #expect(!GitCredentialCommand.serves(request, hosts: ["other.example.com"]))
        #expect(!GitCredentialCommand.serves(try parse("protocol=https\nhost=evil-git.example.com\n"), hosts: ["git.example.com"]))
    }

    @Test func theAnswerHasUsernamePasswordAndExpiry() throws {
        let token = HelperToken(accessToken: "at-1", expiresAt: Date(timeIntervalSince1970: 1_800_000_000.9))
        let answer = try GitCredentialCommand.answer(to: try parse("protocol=https\nhost=h\n"), username: nil, token: token)
        #expect(answer == "username=oauth2\npassword=at-1\npassword_expiry_utc=1800000000\n")
        let noExpiry = HelperToken(accessToken: "at-2", expiresAt: nil)
        #expect(try GitCredentialCommand.answer(to: try parse("username=alice\n"), username: nil, token: noExpiry) == "username=alice\npassword=at-2\n")
        #expect(try GitCredentialCommand.answer(to: try parse("username=alice\n"), username: "x-access-token", token: noExpiry)
            == "username=x-access-token\npassword=at-2\n")
        #expect(try GitCredentialCommand.answer(to: try parse("username=\n"), username: nil, token: noExpiry) == "username=oauth2\npassword=at-2\n")
    }

    @Test func aTokenThatWouldAddLinesIsNeverWritten() throws {
        for bad in ["at\nquit=1", "at\r", "at\0"] {
            #expect(throws: CLIError.self) {
                try GitCredentialCommand.answer(to: GitCredentialMessage(), username: nil, token: HelperToken(accessToken: bad))
            }
        }
        #expect(throws: CLIError.self) {
            try GitCredentialCommand.answer(to: GitCredentialMessage(), username: "a\nb", token: HelperToken(accessToken: "at"))
        }
    }

    @Test func secretsCompareByContent() {
        #expect(GitCredentialCommand.constantTimeEqual("abc", "abc"))
        #expect(!GitCredentialCommand.constantTimeEqual("abc", "abd"))
        #expect(!GitCredentialCommand.constantTimeEqual("abc", "abcd"))
    }
}

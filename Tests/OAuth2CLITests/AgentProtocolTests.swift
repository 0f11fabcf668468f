import Foundation
import OAuth2JOSE
import Testing

@testable import OAuth2CLI

/// The agent's wire format (AgentProtocol), without a socket: what a request must be, what
/// an answer holds, and what each side makes of lines it cannot read.
@Suite struct AgentProtocolTests {
    func request(_ text: String) throws(AgentProtocol.RequestError) -> AgentProtocol.Request {
        try AgentProtocol.decodeRequest(Data(text.utf8))
    }

    func expectMalformed(_ text: String, mentioning word: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let parsed = try request(text)
            Issue.record("accepted \(text) as \(parsed)", sourceLocation: sourceLocation)
        } catch {
            guard case .malformed(let reason) = error else {
                Issue.record("\(text): \(error), not malformed", sourceLocation: sourceLocation)
                return
            }
            #expect(reason.contains(word), "\(reason)", sourceLocation: sourceLocation)
            #expect(error.failure.status == .usage, sourceLocation: sourceLocation)
        }
    }

    @Test func aRequestRoundTripsAsOneLine() throws {
        let line = AgentProtocol.encode(AgentProtocol.Request(profile: "work", minimumTTL: 120))
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(String(decoding: line, as: UTF8.self) == #"{"min_ttl":120,"profile":"work","v":1}"# + "\n")
        #expect(try AgentProtocol.decodeRequest(line) == AgentProtocol.Request(profile: "work", minimumTTL: 120))
        // min_ttl is optional; null is its absence; members a newer client adds are ignored.
        #expect(try request(#"{"v":1,"profile":"ci"}"#) == AgentProtocol.Request(profile: "ci"))
        #expect(try request(#"{"v":1,"profile":"ci","min_ttl":null,"future":true}"#) == AgentProtocol.Request(profile: "ci"))
    }

    @Test func malformedRequestsAreRefusedWithTheReason() {
        expectMalformed("", mentioning: "JSON object")
        expectMalformed("garbage", mentioning: "JSON object")
        expectMalformed("\u{0}\u{1}\u{2}", mentioning: "JSON object")
        expectMalformed(#"["v",1]"#, mentioning: "JSON object")
        expectMalformed(#"{"v":1,"profile":"ci""#, mentioning: "JSON object")
        expectMalformed(#"{"profile":"ci"}"#, mentioning: "\"v\"")
        expectMalformed(#"{"v":"1","profile":"ci"}"#, mentioning: "\"v\"")
        expectMalformed(#"{"v":1}"#, mentioning: "\"profile\"")
        expectMalformed(#"{"v":1,"profile":7}"#, mentioning: "\"profile\"")
        // A profile name is a file name in the config directory: no paths.
        expectMalformed(#"{"v":1,"profile":"../../etc/passwd"}"#, mentioning: "profile name")
        expectMalformed(#"{"v":1,"profile":""}"#, mentioning: "profile name")
        expectMalformed(#"{"v":1,"profile":"ci","min_ttl":-1}"#, mentioning: "\"min_ttl\"")
        expectMalformed(#"{"v":1,"profile":"ci","min_ttl":86401}"#, mentioning: "\"min_ttl\"")
        expectMalformed(#"{"v":1,"profile":"ci","min_ttl":"60"}"#, mentioning: "\"min_ttl\"")
        expectMalformed(#"{"v":1,"profile":"ci","min_ttl":1.5}"#, mentioning: "\"min_ttl\"")
    }

    @Test func anOversizedRequestIsRefusedBeforeParsing() {
        let padding = String(repeating: "x", count: AgentProtocol.maximumLineSize)
        #expect(throws: AgentProtocol.RequestError.tooLarge) {
            try request(#"{"v":1,"profile":"ci","pad":"\#(padding)"}"#)
        }
        #expect(AgentProtocol.RequestError.tooLarge.failure.status == .usage)
    }

    @Test func anUnknownVersionIsAnsweredWithTheAgentsOwn() {
        #expect(throws: AgentProtocol.RequestError.unsupportedVersion(2)) { try request(#"{"v":2,"profile":"ci"}"#) }
        let failure = AgentProtocol.RequestError.unsupportedVersion(2).failure
        #expect(failure.status == .usage)
        #expect(failure.message.contains("version 1, not 2"))
    }

    @Test func aTokenAnswerHoldsTheAccessTokenAndNothingElseSecret() throws {
        let token = AgentProtocol.Token(accessToken: "at-123", tokenType: "Bearer", expiresAt: Date(timeIntervalSince1970: 1_767_225_600.7))
        let line = AgentProtocol.encode(.token(token))
        let object = try #require(JSONValue.parseObject(line))
        #expect(Set(object.keys) == ["v", "access_token", "token_type", "expires_at"])
        #expect(object["expires_at"] == .integer(1_767_225_600))
        #expect(AgentProtocol.decodeAnswer(line.dropLast()) == .token(AgentProtocol.Token(
            accessToken: "at-123", tokenType: "Bearer", expiresAt: Date(timeIntervalSince1970: 1_767_225_600))))
        // Without a lifetime, no expires_at.
        let noExpiry = AgentProtocol.encode(.token(AgentProtocol.Token(accessToken: "at", tokenType: "Bearer")))
        #expect(try #require(JSONValue.parseObject(noExpiry))["expires_at"] == nil)
        #expect(AgentProtocol.decodeAnswer(noExpiry) == .token(AgentProtocol.Token(accessToken: "at", tokenType: "Bearer")))
    }

    @Test func everyExitStatusCrossesTheWireAsItsCode() {
        let statuses: [OAuth2CLI.ExitStatus] = [.refused, .usage, .transient, .cancelled, .signInAgain]
        for status in statuses {
            let failure = AgentProtocol.Failure(status: status, message: "Something happened", hint: "do this")
            #expect(AgentProtocol.decodeAnswer(AgentProtocol.encode(.failure(failure))) == .failure(failure))
        }
        #expect(AgentProtocol.code(of: .signInAgain) == "sign_in_again")
        let line = AgentProtocol.encode(.failure(AgentProtocol.Failure(status: .transient, message: "m")))
        #expect(String(decoding: line, as: UTF8.self) == #"{"error":{"code":"transient","message":"m"},"v":1}"# + "\n")
    }

    @Test func aClientReadsWhatItCannotUnderstandAsARefusal() {
        func failure(_ text: String) -> AgentProtocol.Failure? {
            guard case .failure(let failure) = AgentProtocol.decodeAnswer(Data(text.utf8)) else { return nil }
            return failure
        }
        #expect(failure("garbage")?.status == .refused)
        #expect(failure(#"{"v":1}"#)?.status == .refused)
        #expect(failure(#"{"v":1,"access_token":"","token_type":"Bearer"}"#)?.status == .refused)
        #expect(failure(#"{"v":1,"error":{"code":"sign_in_again"}}"#)?.status == .refused)
        // A code of a newer agent is a refusal with the agent's own sentence.
        #expect(failure(#"{"v":1,"error":{"code":"rate_limited","message":"Slow down"}}"#) == AgentProtocol.Failure(status: .refused, message: "Slow down"))
        #expect(failure(#"{"v":2,"access_token":"at","token_type":"Bearer"}"#)?.message.contains("version 2") == true)
        let huge = #"{"v":1,"access_token":""# + String(repeating: "a", count: AgentProtocol.maximumLineSize) + #"","token_type":"Bearer"}"#
        #expect(failure(huge)?.status == .refused)
    }
}

import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// kubectl's `ExecCredential` as `oauth2 kubectl-credential` reads and prints it: no kubectl.
@Suite struct ExecCredentialTests {
    @Test func theAnswerCarriesTheTokenAndItsExpiry() throws {
        let token = HelperToken(accessToken: "at-1", expiresAt: Date(timeIntervalSince1970: 1_800_000_000.75))
        let text = try ExecCredential.encode(apiVersion: "client.authentication.k8s.io/v1", token: token)
        #expect(
            text
                == #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{},"status":{"expirationTimestamp":"2027-01-15T08:00:00Z","token":"at-1"}}"#
        )
    }

    @Test func theExpiryIsRoundedDownNeverLater() {
        #expect(ExecCredential.timestamp(Date(timeIntervalSince1970: 59.999)) == "1970-01-01T00:00:59Z")
        #expect(ExecCredential.timestamp(Date(timeIntervalSince1970: 60)) == "1970-01-01T00:01:00Z")
    }

    @Test func noExpiryWhenUnknown() throws {
        let text = try ExecCredential.encode(apiVersion: "client.authentication.k8s.io/v1beta1", token: HelperToken(accessToken: "a\"b", expiresAt: nil))
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)).objectValue
        let status = value?["status"]?.objectValue
        #expect(value?["apiVersion"] == "client.authentication.k8s.io/v1beta1")
        #expect(status?["token"] == "a\"b")
        #expect(status != nil && status?["expirationTimestamp"] == nil)
    }

    @Test func theVersionIsTheRequests() throws {
        #expect(try ExecCredential.apiVersion(ofRequest: nil) == "client.authentication.k8s.io/v1")
        #expect(try ExecCredential.apiVersion(ofRequest: "") == "client.authentication.k8s.io/v1")
        #expect(
            try ExecCredential.apiVersion(
                ofRequest: #"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}"#)
                == "client.authentication.k8s.io/v1")
        #expect(
            try ExecCredential.apiVersion(ofRequest: #"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{}}"#)
                == "client.authentication.k8s.io/v1beta1")
    }

    @Test func otherRequestsAreRefused() {
        for request in [
            #"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1alpha1"}"#,
            #"{"kind":"Pod","apiVersion":"client.authentication.k8s.io/v1"}"#,
            #"{"kind":"ExecCredential"}"#, "not json", "[1]",
        ] {
            #expect(throws: ExecCredential.RequestError.self) { try ExecCredential.apiVersion(ofRequest: request) }
        }
    }
}

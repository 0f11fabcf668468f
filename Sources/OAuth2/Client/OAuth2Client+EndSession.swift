import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Builds an RP-initiated logout request for the provider's `end_session_endpoint`.
    ///
    /// - Throws: ``OAuth2Error/Code/missingEndpoint`` when the provider advertises no
    ///   end-session endpoint.
    public func endSessionRequest(_ options: EndSessionOptions = EndSessionOptions()) throws(OAuth2Error) -> EndSessionRequest {
        let url = try endpoint(metadata.endSessionEndpoint, "end_session_endpoint")
        return try EndSessionRequest.make(endpoint: url, clientID: configuration.clientID, options: options)
    }
}

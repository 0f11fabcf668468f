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
    /// The absolute path of the client certificate (PEM) presented over mutual TLS (RFC
    /// 8705): every request of the profile goes through a transport presenting it, to the
    /// server's `mtls_endpoint_aliases` when it has them.
    static let clientCertificate = "client_certificate"
    /// The absolute path of the client certificate's private key (PEM).
    static let clientKey = "client_key"
    /// The protected resource the profile was made for (`oauth2 request URL`, `oauth2 login
    /// --resource URL`; ``ResourceProfile``): its identifier is the `resource` (RFC 8707) of
    /// every authorization and token request, and a `403 insufficient_scope` from it leads to
    /// a step-up sign-in.
    static let resource = "resource"
    /// How a resource profile's client got its id: `configured`, `metadata_document` or
    /// `dynamic` (``ClientIdentity``).
    static let registration = "registration"
}

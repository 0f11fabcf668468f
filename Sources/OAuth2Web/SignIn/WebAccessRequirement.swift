import Foundation
import OAuth2
import OAuth2JOSE

/// What a route of a web app requires of the signed-in user, beyond being signed in.
///
/// ```swift
/// // Any signed-in user:
/// let signedIn = WebAccessRequirement()
/// // A user who granted `orders:write`, is in the `admins` group, signed in with a second
/// // factor at most 5 minutes ago:
/// let admin = WebAccessRequirement(
///     scopes: ["orders:write"], claims: ["groups": "admins"],
///     acrValues: ["mfa"], maxAge: 300)
/// ```
///
/// When a requirement is not met, ``WebSignIn/authorize(_:requiring:)`` answers:
/// - not signed in, a scope not granted, an `acr` not among ``acrValues``, a sign-in older
///   than ``maxAge``: a new sign-in at the provider asking for what is missing (step-up),
///   with `acr_values` and `max_age` when they are set; after it, the requirement is checked
///   again, and a provider that did not deliver gets 403, not a loop;
/// - `authorization_details` not granted (RFC 9396): a new sign-in asking for
///   ``authorizationDetails`` (step-up), checked again after it;
/// - a claim that does not match: 403 (a new sign-in would not change the user's claims).
public struct WebAccessRequirement: Sendable, Hashable, Codable {
    /// Scopes the user's tokens must carry.
    public var scopes: Set<String>
    /// Claims of the ID token: each must equal the value, or, for an array claim (`groups`,
    /// `roles`), contain it.
    public var claims: [String: JSONValue]
    /// Acceptable authentication context classes (the ID token's `acr`); empty: any.
    public var acrValues: [String]
    /// The oldest sign-in accepted, in seconds since the user last authenticated at the
    /// provider (the ID token's `auth_time`); `nil`: any age.
    public var maxAge: Int?
    /// Rich authorization details (RFC 9396) the sign-in's tokens must have been granted:
    /// each must be covered by a granted entry (`AuthorizationDetail/covers(_:)`: the
    /// same type, each member granted). A step-up sign-in asks for them as they are.
    public var authorizationDetails: [AuthorizationDetail]

    /// Creates a requirement; with no argument: only a signed-in user.
    public init(
        scopes: Set<String> = [], claims: [String: JSONValue] = [:], acrValues: [String] = [], maxAge: Int? = nil,
        authorizationDetails: [AuthorizationDetail] = []
    ) {
        self.scopes = scopes
        self.claims = claims
        self.acrValues = acrValues
        self.maxAge = maxAge
        self.authorizationDetails = authorizationDetails
    }

    private enum CodingKeys: String, CodingKey {
        case scopes, claims, acrValues, maxAge, authorizationDetails
    }

    /// Decodes a requirement; one stored before ``authorizationDetails`` existed has none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scopes = try container.decode(Set<String>.self, forKey: .scopes)
        claims = try container.decode([String: JSONValue].self, forKey: .claims)
        acrValues = try container.decode([String].self, forKey: .acrValues)
        maxAge = try container.decodeIfPresent(Int.self, forKey: .maxAge)
        authorizationDetails = try container.decodeIfPresent([AuthorizationDetail].self, forKey: .authorizationDetails) ?? []
    }

    /// Why a signed-in session does not meet a requirement.
    enum Shortfall: Equatable {
        /// Met.
        case none
        /// A new sign-in can meet it: scopes, `acr` or `auth_time`.
        case stepUp
        /// A claim does not match: no sign-in changes that.
        case forbidden
    }

    /// How `record` measures up at `now`.
    func shortfall(of record: WebSessionRecord, now: Date) -> Shortfall {
        for (name, expected) in claims where !Self.claim(record.claims[name], matches: expected) {
            return .forbidden
        }
        if !scopes.isSubset(of: record.scopes) { return .stepUp }
        if !authorizationDetails.isEmpty, !(record.authorizationDetails ?? []).covers(authorizationDetails) { return .stepUp }
        if !acrValues.isEmpty {
            guard let acr = record.claims["acr"]?.stringValue, acrValues.contains(acr) else { return .stepUp }
        }
        if let maxAge {
            // OpenID Connect Core §3.1.2.1: max_age is measured from auth_time.
            guard let authTime = record.claims["auth_time"]?.numericDate,
                now.timeIntervalSince(authTime) <= TimeInterval(maxAge)
            else { return .stepUp }
        }
        return .none
    }

    static func claim(_ value: JSONValue?, matches expected: JSONValue) -> Bool {
        guard let value else { return false }
        if value == expected { return true }
        if case .array(let elements) = value { return elements.contains(expected) }
        return false
    }
}

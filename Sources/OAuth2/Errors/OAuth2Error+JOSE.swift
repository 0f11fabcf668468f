import OAuth2JOSE

extension OAuth2Error {
    /// The `JOSEError.Reason` behind an ID-token or UserInfo failure, if this is one.
    public var joseReason: JOSEError.Reason? { (underlyingError as? JOSEError)?.reason }
}

import OAuth2

/// The reason of the JOSEError `body` throws; `nil` when it throws nothing or another error.
func reason(_ body: () throws -> Any) -> JOSEError.Reason? {
    do {
        _ = try body()
        return nil
    } catch {
        return (error as? JOSEError)?.reason
    }
}

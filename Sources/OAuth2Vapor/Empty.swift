#if !Vapor
#warning("OAuth2Vapor is empty: enable the package trait `Vapor` (traits: [\"Vapor\"]) to build the Vapor adapter")
#endif

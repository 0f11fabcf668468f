#if !Hummingbird
#warning("OAuth2Hummingbird is empty: enable the package trait `Hummingbird` (traits: [\"Hummingbird\"]) to build the Hummingbird adapter")
#endif

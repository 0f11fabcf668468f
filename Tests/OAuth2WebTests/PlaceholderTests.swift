import Testing
@testable import OAuth2Web

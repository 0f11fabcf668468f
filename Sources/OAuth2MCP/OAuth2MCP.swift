// OAuth2MCP: the MCP Swift SDK's client (`HTTPClientTransport`) fed by a swift-oauth2
// `TokenSession` through `TokenSessionAuthorizer`. Built with the package trait `MCP`; without
// it the module is empty.

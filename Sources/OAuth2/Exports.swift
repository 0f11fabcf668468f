// The bottom layer's types (JWS, JSONWebKey, JSONValue, JOSEError…) are part of this module's
// API: `import OAuth2` is enough to name them.
@_exported import OAuth2JOSE

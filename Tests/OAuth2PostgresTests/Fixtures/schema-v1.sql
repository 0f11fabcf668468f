-- Schema version 1 of the PostgreSQL token store, as swift-oauth2 created it before the
-- key id had a column of its own: the test of the migration builds it from this file, fills
-- it, and opens it with the current code. `__SCHEMA__` is replaced by the test's schema.
CREATE SCHEMA __SCHEMA__;
CREATE TABLE __SCHEMA__.oauth2_schema_migrations (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE __SCHEMA__.oauth2_sessions (
    issuer text NOT NULL,
    client_id text NOT NULL,
    account text NOT NULL,
    version bigint NOT NULL,
    document text NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (issuer, client_id, account));
CREATE INDEX oauth2_sessions_expires_at ON __SCHEMA__.oauth2_sessions (expires_at) WHERE expires_at IS NOT NULL;
INSERT INTO __SCHEMA__.oauth2_schema_migrations (version, description) VALUES (1, 'sessions table');

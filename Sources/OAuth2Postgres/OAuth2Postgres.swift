#if !Postgres
#warning("OAuth2Postgres is empty: enable the package trait `Postgres` (traits: [\"Postgres\"]) to build the PostgreSQL token store")
#endif

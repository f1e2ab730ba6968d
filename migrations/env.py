"""Alembic environment: runs on the connection handed over by ``localbo.storage.db.upgrade``."""

from alembic import context
from localbo.storage.models import Base
from sqlalchemy import create_engine

config = context.config
target_metadata = Base.metadata


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:  # plain `alembic upgrade` with sqlalchemy.url set
        engine = create_engine(config.get_main_option("sqlalchemy.url"))
        with engine.begin() as connection:
            _migrate(connection)
    else:
        _migrate(connection)


def _migrate(connection) -> None:  # noqa: ANN001
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run()

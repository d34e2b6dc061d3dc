"""Alembic environment: the URL and (optionally) an open connection come from the caller
(``worker.store.db.upgrade``), never from alembic.ini, so one code path serves the worker,
``spider-bot db upgrade`` and the tests."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from worker.store.models import Base

config = context.config
target_metadata = Base.metadata
_url = context.get_x_argument(as_dictionary=True).get("url")  # alembic -x url=... (authoring)
if _url:
    config.set_main_option("sqlalchemy.url", _url)


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"),
                      target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

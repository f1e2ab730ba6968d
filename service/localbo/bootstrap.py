"""The composition root: the database, its writer, the executor, the planner and the services on top.

    prepare_database(settings)       # migrations, once, before any process serves (never at import)
    service = Service(settings)      # builds everything; nothing here touches the schema
    service.close()

The API (``api.create_app``, built by uvicorn's factory) and the CLI build one ``Service`` each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine

from localbo.config import Settings
from localbo.spaces import Spaces
from localbo.storage.db import make_engine, upgrade, writer
from localbo.studies import Studies

if TYPE_CHECKING:
    import torch


def prepare_database(settings: Settings) -> None:
    """Apply the schema's migrations (safe from several processes at once: Postgres takes a lock)."""
    db = make_engine(settings.database_url, settings.sqlite_synchronous)
    try:
        upgrade(db)
    finally:
        db.dispose()


def policy_device(setting: str) -> torch.device:
    import torch

    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(setting)


def read_only(settings: Settings) -> tuple[Engine, Studies]:
    """The database and the studies service without planning, policies or torch: what the CLI's read
    verbs need (they start in a fraction of a second)."""
    db = make_engine(settings.database_url, settings.sqlite_synchronous)
    return db, Studies(db, writer(db), Spaces())


class Service:
    def __init__(self, settings: Settings) -> None:
        # the policies' side (torch, BoTorch) is imported here, not at import: `localbo studies list` needs none
        from localbo.analysis import Analysis
        from localbo.asking import Asking
        from localbo.notes import Notes
        from localbo.planning.planner import Planner
        from localbo.planning.runner import PolicyRunner
        from localbo.telling import Telling
        from localbo.transactions import Transactions
        from localbo.workers import make_executor

        self.settings = settings
        self.db = make_engine(settings.database_url, settings.sqlite_synchronous)
        self.write = writer(self.db)
        self.tx = Transactions(sqlite=self.db.dialect.name == "sqlite")
        self.device = policy_device(settings.device)
        self.executor = make_executor(settings)
        self.spaces = Spaces()
        self.runner = PolicyRunner(settings, self.executor, self.device)
        self.planner = Planner(settings, self.db, self.write, self.spaces, self.runner)
        self.studies = Studies(self.db, self.write, self.spaces)
        self.asking = Asking(settings, self.write, self.tx, self.spaces, self.planner)
        self.telling = Telling(settings, self.write, self.spaces, self.planner)
        self.analysis = Analysis(self.db, self.spaces)
        self.notes = Notes(self.db, self.write)

    def close(self, wait: bool = False) -> None:
        """Stop planning (``wait``: let running jobs finish, for tests), the executor and the pools."""
        self.planner.close(wait)
        self.executor.close()
        self.tx.close()
        self.db.dispose()

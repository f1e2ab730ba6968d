"""The service's verbs by study name, over a real ``bootstrap.Service`` on a real database: the tests'
way to drive asking, telling and planning without HTTP (every call goes through the real modules)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from localbo.bootstrap import Service, prepare_database
from localbo.config import Settings
from localbo.storage import repository as repo
from localbo.workers import Executor


class LocalService:
    def __init__(self, settings: Settings) -> None:
        prepare_database(settings)
        self.service = Service(settings)
        self.settings, self.db, self.write = settings, self.service.db, self.service.write
        studies, telling = self.service.studies, self.service.telling
        self.create_study, self.get_study, self.list_studies = studies.create, studies.get, studies.list
        self.policy_view, self.best = studies.policy_view, studies.best
        self.tell, self.heartbeat, self.add_trial = telling.tell, telling.heartbeat, telling.add_trial
        self.ask = self.service.asking.ask_blocking

    @property
    def executor(self) -> Executor:
        return self.service.runner.executor

    @executor.setter
    def executor(self, executor: Executor) -> None:
        self.service.runner.executor = executor

    def study_id(self, name: str) -> int:
        with self.db.begin() as conn:
            study = repo.get_study(conn, name)
        assert study is not None, name
        return study.id

    def plan(self, name: str, need: int = 1, ahead: bool = False) -> None:
        """Run the study's planning job in this thread."""
        self.service.planner.plan(self.study_id(name), need, ahead)

    def start_plan(self, name: str, need: int = 1) -> Future:
        """Start the study's background planning job (or join the one under way)."""
        return self.service.planner.start(self.study_id(name), need)

    def running_job(self, name: str) -> Future | None:
        return self.service.planner.jobs.running(self.study_id(name))

    def queue_for(self, study: Any, n: int) -> str:
        """The worker queue of a ``studies`` row's suggests, with ``n`` observations."""
        from localbo.study_handle import load_study

        with self.db.begin() as conn:
            space = self.service.spaces.of(conn, study)
        return self.service.runner.queue_for(load_study(study, space), n)

    def close(self, wait: bool = False) -> None:
        self.service.close(wait)

"""Tables. Schema changes go through Alembic revisions in ``migrations/versions``."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator):
    """Stores naive UTC (SQLite has no time zones); always hands back aware UTC."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):  # noqa: ANN001
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect):  # noqa: ANN001
        return value.replace(tzinfo=UTC) if value is not None else None


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Study(Base):
    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    direction: Mapped[str] = mapped_column(String(16))
    space: Mapped[dict] = mapped_column(JSON)
    policy: Mapped[str] = mapped_column(String(64))
    policy_config: Mapped[dict] = mapped_column(JSON)
    policy_config_version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")  # its Config.version
    user_metadata: Mapped[dict] = mapped_column(JSON)
    # What the study measures and must respect (``domain/outcomes.py``); None: the one unnamed value
    objectives: Mapped[list | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    constraints: Mapped[list | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    parameter_constraints: Mapped[list | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    failures: Mapped[str] = mapped_column(String(16), default="ignore", server_default="ignore")
    safety: Mapped[dict | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    reference_point: Mapped[dict | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)  # a person's note on the study (``notes.py``)
    notes_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # grows with every note written
    seed: Mapped[int] = mapped_column(Integer)
    # Policy state and its version: the version is bumped on every write so that a plan
    # computed from a stale snapshot is thrown away (optimistic concurrency).
    policy_state: Mapped[dict] = mapped_column(JSON)
    policy_state_version: Mapped[int] = mapped_column(Integer, default=0)
    trial_count: Mapped[int] = mapped_column(Integer, default=0)
    last_policy_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Who computes the next plan, until when: one refit per study at a time across API processes.
    plan_claim: Mapped[str | None] = mapped_column(String(32), nullable=True)
    plan_claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Trial(Base):
    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("study_id", "number", name="uq_trials_study_number"),
        Index("ix_trials_study_state", "study_id", "state"),
        # serves "this client's running trials, by number" without scanning the study
        Index("ix_trials_study_client_state", "study_id", "client_id", "state", "number"),
        # serves "was this candidate asked already" on finite spaces
        Index("ix_trials_study_candidate", "study_id", "candidate"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))  # running | complete | failed | stale
    params: Mapped[dict] = mapped_column(JSON)
    x: Mapped[list] = mapped_column(JSON)  # the point in the unit cube, as the policy saw it
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    metrics: Mapped[dict | None] = mapped_column(
        JSON(none_as_null=True), nullable=True
    )  # named values, when the study names metrics
    feasible: Mapped[bool | None] = mapped_column(Boolean, nullable=True)  # every outcome constraint held (None: none)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    source: Mapped[str] = mapped_column(String(64))
    client_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # finite spaces: the candidate's index in the study's list, and its id
    candidate: Mapped[int | None] = mapped_column(Integer, nullable=True)
    candidate_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)  # a person's note on the trial (``notes.py``)


class PlannedPoint(Base):
    """The study's plan queue: points the policy chose that no ask has taken yet."""

    __tablename__ = "planned_points"
    __table_args__ = (Index("ix_planned_study", "study_id", "priority", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    x: Mapped[list] = mapped_column(JSON)
    source: Mapped[str] = mapped_column(String(64))
    priority: Mapped[int] = mapped_column(Integer, default=0)  # higher first: stale re-offers
    candidate: Mapped[int | None] = mapped_column(Integer, nullable=True)  # finite spaces


class Candidate(Base):
    """One candidate of a finite search space: its index in the list, id, values and unit-cube point."""

    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("study_id", "idx", name="uq_candidates_study_idx"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    idx: Mapped[int] = mapped_column(Integer)
    cid: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict] = mapped_column(JSON)
    x: Mapped[list] = mapped_column(JSON)


class CandidateKernel(Base):
    """A finite space's prior covariance over its candidates, N x N float64, row-major bytes."""

    __tablename__ = "candidate_kernels"

    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class IdempotencyRecord(Base):
    """The first answer to a request that carried an Idempotency-Key, replayed on retry."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_idempotency_study_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

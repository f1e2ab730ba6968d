"""Finite search spaces: a study's candidates (and their kernel), and the candidate of each trial and planned point.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "candidates",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("studies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("cid", sa.String(length=200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("x", sa.JSON(), nullable=False),
        sa.UniqueConstraint("study_id", "idx", name="uq_candidates_study_idx"),
    )
    op.create_table(
        "candidate_kernels",
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.add_column(sa.Column("candidate", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("candidate_id", sa.String(length=200), nullable=True))
        batch_op.create_index("ix_trials_study_candidate", ["study_id", "candidate"])
    with op.batch_alter_table("planned_points", schema=None) as batch_op:
        batch_op.add_column(sa.Column("candidate", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("planned_points", schema=None) as batch_op:
        batch_op.drop_column("candidate")
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_index("ix_trials_study_candidate")
        batch_op.drop_column("candidate_id")
        batch_op.drop_column("candidate")
    op.drop_table("candidate_kernels")
    op.drop_table("candidates")

"""Named metrics, the objective and constraints of a study; each trial's metrics and feasibility.

Studies stored before keep working unchanged: no objectives (the one unnamed value), no constraints.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("objectives", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("constraints", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("parameter_constraints", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("failures", sa.String(length=16), nullable=False, server_default="ignore"))
        batch_op.add_column(sa.Column("safety", sa.JSON(), nullable=True))
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.add_column(sa.Column("metrics", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("feasible", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_column("feasible")
        batch_op.drop_column("metrics")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        for column in ("safety", "failures", "parameter_constraints", "constraints", "objectives"):
            batch_op.drop_column(column)

"""A multi-objective study's reference point (issue 31): {metric: value} in the metrics' own units, or null
(inferred from the data). Studies stored before have none and keep working unchanged.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reference_point", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_column("reference_point")

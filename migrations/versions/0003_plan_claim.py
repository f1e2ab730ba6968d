"""A claim on a study's next plan, so that several API processes never refit one study at once.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("plan_claim", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("plan_claimed_until", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_column("plan_claimed_until")
        batch_op.drop_column("plan_claim")

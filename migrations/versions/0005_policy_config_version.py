"""Versioned policy configs: the Config layout each study's stored ``policy_config`` was written in.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        # every config stored so far was written at v1 of its policy's Config
        batch_op.add_column(sa.Column("policy_config_version", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_column("policy_config_version")

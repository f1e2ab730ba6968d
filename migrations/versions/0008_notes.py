"""Notes (issue 27, item 6): a study's note and each trial's ("sample 17 was contaminated"), free text of at
most 2000 characters written by a write-scoped token, or null. ``notes_version`` grows with every note
written, so the dashboard's event stream tells viewers to read the notes again. Databases stored before have
no notes and keep working unchanged.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("notes_version", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_column("note")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_column("notes_version")
        batch_op.drop_column("note")

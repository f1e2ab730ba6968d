"""Index a client's running trials by (study, client, state, number).

SQLite answered "this client's running trials, ordered by number" through the unique
(study_id, number) index and filtered row by row, so re-asks slowed as studies grew.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_index("ix_trials_study_client")
        batch_op.create_index(
            "ix_trials_study_client_state", ["study_id", "client_id", "state", "number"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_index("ix_trials_study_client_state")
        batch_op.create_index("ix_trials_study_client", ["study_id", "client_id"], unique=False)

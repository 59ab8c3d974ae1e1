"""Assessment rules: overrides per assignment and extensions per learner; what each attempt was
submitted under

Revision ID: 0014
Revises: 0013
An exercise's rules (attempts, penalties, dates, when the explanation shows, runs) have defaults
in its exercise.toml; `assessment_rules` holds what staff set over them, for an assignment (an LTI
resource link, or a client's use of the exercise when there is no link) and, with `learner`, for
one learner (an extension). An attempt keeps its number in its assignment (`attempt_number`, one
sequence per learner, unique: two requests racing for the last allowed attempt cannot both take
it), whether it came late, and the penalties applied (`penalties`), so a regrade scores it under
the rules it was submitted under. A resource link keeps the dates its platform sent at launch, and
where the platform sends each learner their own (Canvas), `lti_learner_dates` keeps them.
Existing attempts are numbered in submission order, with no penalty. The learners' counters keep
their best raw score (the grader's, before penalties and overrides) beside the best that counts,
in the index the statistics read.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0014'
down_revision: str | Sequence[str] | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROGRESS_INDEX = ['exercise_id', 'passed', 'best_score', 'attempts_to_first_pass', 'first_attempt_at', 'first_passed_at']
ASSIGNMENT_KEY = [sa.text('client_id'), sa.text('exercise_id'), sa.text('coalesce(lti_link_id, 0)'), sa.text('learner')]


def upgrade() -> None:
    op.create_table(
        'assessment_rules',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('client_id', sa.Integer(), sa.ForeignKey('api_clients.id'), nullable=False),
        sa.Column('exercise_id', sa.Integer(), sa.ForeignKey('exercises.id'), nullable=False),
        sa.Column('lti_link_id', sa.Integer(), sa.ForeignKey('lti_resource_links.id'), nullable=True),
        sa.Column('learner', sa.String(255), nullable=True),
        sa.Column('rules', JSON_TYPE, nullable=False),
        sa.Column('note', sa.Text(), nullable=True),
        sa.Column('updated_by', sa.String(100), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index('ux_assessment_rules_scope', 'assessment_rules',
                    [sa.text('client_id'), sa.text('exercise_id'), sa.text('coalesce(lti_link_id, 0)'),
                     sa.text("coalesce(learner, '')")], unique=True)
    with op.batch_alter_table('attempts') as batch_op:
        batch_op.add_column(sa.Column('attempt_number', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('late', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('penalties', JSON_TYPE, nullable=True))
    op.execute(
        "UPDATE attempts SET attempt_number = (SELECT n FROM (SELECT id, row_number() OVER ("
        "PARTITION BY client_id, exercise_id, coalesce(lti_link_id, 0), learner ORDER BY created_at, id) AS n "
        "FROM attempts) AS numbered WHERE numbered.id = attempts.id)")
    op.create_index('ux_attempts_number', 'attempts', [*ASSIGNMENT_KEY, sa.text('attempt_number')], unique=True)
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.add_column(sa.Column('lms_available_from', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('lms_due_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        'lti_learner_dates',
        sa.Column('link_id', sa.Integer(), sa.ForeignKey('lti_resource_links.id'), primary_key=True),
        sa.Column('learner', sa.String(255), primary_key=True),
        sa.Column('available_from', sa.DateTime(timezone=True), nullable=True),
        sa.Column('due_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table('learner_progress') as batch_op:
        batch_op.add_column(sa.Column('best_raw_score', sa.Double(), nullable=True))
    op.execute(
        "UPDATE learner_progress SET best_raw_score = (SELECT max(a.grader_score) FROM attempts AS a "
        "WHERE a.client_id = learner_progress.client_id AND a.learner = learner_progress.learner "
        "AND a.exercise_id = learner_progress.exercise_id AND a.status = 'graded')")
    op.drop_index('ix_learner_progress_exercise', table_name='learner_progress')
    op.create_index('ix_learner_progress_exercise', 'learner_progress', [*PROGRESS_INDEX, 'best_raw_score'])


def downgrade() -> None:
    op.drop_index('ix_learner_progress_exercise', table_name='learner_progress')
    op.create_index('ix_learner_progress_exercise', 'learner_progress', PROGRESS_INDEX)
    with op.batch_alter_table('learner_progress') as batch_op:
        batch_op.drop_column('best_raw_score')
    op.drop_table('lti_learner_dates')
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.drop_column('lms_due_at')
        batch_op.drop_column('lms_available_from')
    op.drop_index('ux_attempts_number', table_name='attempts')
    with op.batch_alter_table('attempts') as batch_op:
        batch_op.drop_column('penalties')
        batch_op.drop_column('late')
        batch_op.drop_column('attempt_number')
    op.drop_index('ux_assessment_rules_scope', table_name='assessment_rules')
    op.drop_table('assessment_rules')

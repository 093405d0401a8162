"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models



class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0008_review_change_log_forgets_deleted_projects'),
        ('injection', '0009_drop_redundant_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # PostgreSQL's varchar_pattern_ops twins of the unique idempotency keys (for LIKE, which nothing runs on a
        # key); Django drops them with IF EXISTS itself when it alters such a field, so the state needs no change
        migrations.RunSQL(
            [
                'DROP INDEX IF EXISTS "annotation_reviewdecision_idempotency_key_5266739a_like"',
                'DROP INDEX IF EXISTS "annotation_likertrating_idempotency_key_6bc35aa7_like"',
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='likertrating',
                    name='item',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='ratings', to='annotation.ratingitem'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "annotation_likertrating_item_id_81c73583"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "annotation_likertrating_item_id_81c73583" ON "annotation_likertrating" ("item_id")'],
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='reviewdecision',
                    name='candidate',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='injection.candidate'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "annotation_reviewdecision_candidate_id_425304ad"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "annotation_reviewdecision_candidate_id_425304ad" ON "annotation_reviewdecision" ("candidate_id")'],
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='reviewdecision',
                    name='reviewer',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='review_decisions', to=settings.AUTH_USER_MODEL),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "annotation_reviewdecision_reviewer_id_a7325c5a"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "annotation_reviewdecision_reviewer_id_a7325c5a" ON "annotation_reviewdecision" ("reviewer_id")'],
                ),
            ],
        ),
    ]

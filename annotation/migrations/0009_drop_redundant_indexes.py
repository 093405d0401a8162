"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from core.index_ops import drop_field_index


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
        drop_field_index(
            migrations.AlterField(
                model_name='likertrating',
                name='item',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='ratings', to='annotation.ratingitem'),
            ),
            table="annotation_likertrating", column="item_id", index="annotation_likertrating_item_id_81c73583",
        ),
        drop_field_index(
            migrations.AlterField(
                model_name='reviewdecision',
                name='candidate',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='injection.candidate'),
            ),
            table="annotation_reviewdecision", column="candidate_id", index="annotation_reviewdecision_candidate_id_425304ad",
        ),
        drop_field_index(
            migrations.AlterField(
                model_name='reviewdecision',
                name='reviewer',
                field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='review_decisions', to=settings.AUTH_USER_MODEL),
            ),
            table="annotation_reviewdecision", column="reviewer_id", index="annotation_reviewdecision_reviewer_id_a7325c5a",
        ),
    ]

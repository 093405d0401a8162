"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.db import migrations, models

from core.index_ops import drop_field_index


class Migration(migrations.Migration):

    dependencies = [
        ('injection', '0008_flag_change_log_forgets_deleted_projects'),
    ]

    operations = [
        # PostgreSQL's varchar_pattern_ops twin of the items' status index (for LIKE, which nothing runs on a
        # status); Django drops it with IF EXISTS itself when it alters the field, so the state needs no change
        migrations.RunSQL('DROP INDEX IF EXISTS "injection_injectionitem_status_e74dd350_like"', reverse_sql=migrations.RunSQL.noop),
        drop_field_index(
            migrations.AlterField(
                model_name='candidate',
                name='run',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='candidates', to='injection.injectionrun'),
            ),
            table="injection_candidate", column="run_id", index="injection_candidate_run_id_e36545e9",
        ),
        drop_field_index(
            migrations.AlterField(
                model_name='candidate',
                name='status',
                field=models.CharField(choices=[('pending', 'Pending'), ('accepted', 'Accepted'), ('rejected', 'Rejected'), ('excluded', 'Excluded')], default='pending', max_length=10),
            ),
            table="injection_candidate", column="status", index="injection_candidate_status_c5514c64", pattern_index="injection_candidate_status_c5514c64_like",
        ),
        drop_field_index(
            migrations.AlterField(
                model_name='injectionitem',
                name='run',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='injection.injectionrun'),
            ),
            table="injection_injectionitem", column="run_id", index="injection_injectionitem_run_id_9cd3842f",
        ),
    ]

"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.db import migrations, models



class Migration(migrations.Migration):

    dependencies = [
        ('injection', '0008_flag_change_log_forgets_deleted_projects'),
    ]

    operations = [
        # PostgreSQL's varchar_pattern_ops twin of the items' status index (for LIKE, which nothing runs on a
        # status); Django drops it with IF EXISTS itself when it alters the field, so the state needs no change
        migrations.RunSQL('DROP INDEX IF EXISTS "injection_injectionitem_status_e74dd350_like"', reverse_sql=migrations.RunSQL.noop),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='candidate',
                    name='run',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='candidates', to='injection.injectionrun'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "injection_candidate_run_id_e36545e9"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "injection_candidate_run_id_e36545e9" ON "injection_candidate" ("run_id")'],
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='candidate',
                    name='status',
                    field=models.CharField(choices=[('pending', 'Pending'), ('accepted', 'Accepted'), ('rejected', 'Rejected'), ('excluded', 'Excluded')], default='pending', max_length=10),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "injection_candidate_status_c5514c64"', 'DROP INDEX IF EXISTS "injection_candidate_status_c5514c64_like"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "injection_candidate_status_c5514c64" ON "injection_candidate" ("status")'],
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='injectionitem',
                    name='run',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='injection.injectionrun'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "injection_injectionitem_run_id_9cd3842f"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "injection_injectionitem_run_id_9cd3842f" ON "injection_injectionitem" ("run_id")'],
                ),
            ],
        ),
    ]

"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.db import migrations, models



class Migration(migrations.Migration):

    dependencies = [
        ('core', '0002_drop_redundant_indexes'),
        ('exports', '0009_benchmark_change_log_forgets_deleted_projects'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='metricscore',
            name='exports_met_release_5ce6dc_idx',
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='metricscore',
                    name='release',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='metric_scores', to='exports.release'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "exports_metricscore_release_id_7c870ab9"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "exports_metricscore_release_id_7c870ab9" ON "exports_metricscore" ("release_id")'],
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='pseudotranslation',
                    name='segment',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='pseudo_translations', to='core.goldsegment'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "exports_pseudotranslation_segment_id_2ca4cc11"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "exports_pseudotranslation_segment_id_2ca4cc11" ON "exports_pseudotranslation" ("segment_id")'],
                ),
            ],
        ),
    ]

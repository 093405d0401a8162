"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.db import migrations, models



class Migration(migrations.Migration):

    dependencies = [
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='goldsegment',
            name='core_goldse_project_3d70be_idx',
        ),
        migrations.SeparateDatabaseAndState(  # the index only: AlterField would re-check the foreign key
            state_operations=[
                migrations.AlterField(
                    model_name='goldsegment',
                    name='project',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='segments', to='core.project'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=['DROP INDEX IF EXISTS "core_goldsegment_project_id_f3474f0d"'],
                    reverse_sql=['CREATE INDEX IF NOT EXISTS "core_goldsegment_project_id_f3474f0d" ON "core_goldsegment" ("project_id")'],
                ),
            ],
        ),
    ]

"""Drop indexes that a composite index or unique constraint leading with the same column(s) makes
redundant: each is written on every insert (COPY imports, merges, score ingest) and no query needs it."""
import django.db.models.deletion
from django.db import migrations, models

from core.index_ops import drop_field_index


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='goldsegment',
            name='core_goldse_project_3d70be_idx',
        ),
        drop_field_index(
            migrations.AlterField(
                model_name='goldsegment',
                name='project',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='segments', to='core.project'),
            ),
            table="core_goldsegment", column="project_id", index="core_goldsegment_project_id_f3474f0d",
        ),
    ]

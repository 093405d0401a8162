"""What a build was confirmed with: the directions that were undecided or empty when it started."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0015_metric_score_spans'),
    ]

    operations = [
        migrations.AddField(
            model_name='benchmarkbuild',
            name='acknowledged',
            field=models.JSONField(
                blank=True, default=list,
                help_text='what the admin confirmed building with: the directions that were undecided or empty, one line each',
            ),
        ),
    ]

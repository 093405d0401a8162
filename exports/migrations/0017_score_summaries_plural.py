"""The admin's plural of ScoreSummary: "score summaries", not "Score summarys"."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0016_build_acknowledged'),
    ]

    operations = [
        migrations.AlterModelOptions(name='scoresummary', options={'verbose_name_plural': 'score summaries'}),
    ]

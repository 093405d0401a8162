"""The admin's plural of ReviewTally: "review tallies", not "Review tallys"."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_drop_redundant_indexes'),
    ]

    operations = [
        migrations.AlterModelOptions(name='reviewtally', options={'verbose_name_plural': 'review tallies'}),
    ]

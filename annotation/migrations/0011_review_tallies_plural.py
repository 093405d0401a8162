"""The admin's plural of ReviewTally: "review tallies", not "Review tallys"."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0010_idempotency_key_request_hash'),
    ]

    operations = [
        migrations.AlterModelOptions(name='reviewtally', options={'verbose_name_plural': 'review tallies'}),
    ]

"""Bind each idempotency key to a hash of the request it was first used with: a replay with another body is
refused (422) instead of answering with the first request's result. Keys stored before have no hash."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_drop_redundant_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='usedidempotencykey',
            name='request_hash',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
    ]

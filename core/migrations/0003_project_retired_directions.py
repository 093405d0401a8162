"""A project's retired directions: kept for the releases made from them, hidden from new work and builds."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0002_drop_redundant_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='project',
            name='retired_directions',
            field=models.ManyToManyField(blank=True, related_name='+', to='core.direction'),
        ),
    ]

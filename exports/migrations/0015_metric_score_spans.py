from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0014_one_building_release_per_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="metricscore",
            name="spans",
            field=models.JSONField(blank=True, null=True),
        ),
    ]

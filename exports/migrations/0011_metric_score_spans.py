from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0010_drop_redundant_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="metricscore",
            name="spans",
            field=models.JSONField(blank=True, null=True),
        ),
    ]

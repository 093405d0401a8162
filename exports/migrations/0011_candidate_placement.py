"""The benchmark stage's record of what a build did with a pool candidate (excluded, transplanted)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0010_drop_redundant_indexes"),
        ("injection", "0009_drop_redundant_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="CandidatePlacement",
            fields=[
                (
                    "candidate",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="placement",
                        serialize=False,
                        to="injection.candidate",
                    ),
                ),
                (
                    "outcome",
                    models.CharField(
                        choices=[("excluded", "Excluded"), ("transplanted", "Transplanted")], max_length=12
                    ),
                ),
                ("reason", models.TextField(blank=True, help_text="why the merge cannot place it (excluded)")),
                (
                    "drift",
                    models.TextField(
                        blank=True, help_text="how its text outside the span differs from the reference (transplanted)"
                    ),
                ),
                (
                    "span_start",
                    models.PositiveIntegerField(
                        blank=True, help_text="where its edit was placed (transplanted)", null=True
                    ),
                ),
                ("span_end", models.PositiveIntegerField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
    ]

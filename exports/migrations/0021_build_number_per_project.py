"""Builds numbered per project (#46): the builds recorded before are numbered in the order they were made."""

from django.db import migrations, models


def number_builds(apps, schema_editor):
    Build = apps.get_model("exports", "BenchmarkBuild")
    numbered, seen = [], {}
    for build in Build.objects.order_by("project_id", "created_at", "pk").only("pk", "project_id"):
        seen[build.project_id] = build.number = seen.get(build.project_id, 0) + 1
        numbered.append(build)
    Build.objects.bulk_update(numbered, ["number"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0020_release_workers"),
    ]

    operations = [
        migrations.AddField(
            model_name="benchmarkbuild",
            name="number",
            field=models.PositiveIntegerField(default=0, help_text="the build's number within its project (1, 2, …)"),
        ),
        migrations.RunPython(number_builds, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="benchmarkbuild",
            constraint=models.UniqueConstraint(
                condition=models.Q(("number__gt", 0)), fields=("project", "number"), name="build_number_per_project"
            ),
        ),
    ]

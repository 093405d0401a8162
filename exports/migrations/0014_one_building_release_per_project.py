"""One release of a project written at a time: a lease that a writing release renews (a building release
whose lease has passed lost its process and is shown as interrupted) and a unique constraint on the
project's building release. Releases left building by earlier concurrent starts are closed first, all but
the newest of each project, as failed with the reason."""
from django.db import migrations, models
from django.db.models import Max


def close_duplicate_building_releases(apps, schema_editor):
    Release = apps.get_model("exports", "Release")
    newest = Release.objects.filter(status="building").values("project_id").annotate(keep=Max("pk")).values_list("keep", flat=True)
    Release.objects.filter(status="building").exclude(pk__in=list(newest)).update(
        status="failed", error="interrupted: another release of this project was started while it was being written",
    )


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0013_one_live_build_per_project'),
    ]

    operations = [
        migrations.AddField(
            model_name='release',
            name='lease_expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(close_duplicate_building_releases, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='release',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'building')), fields=('project',), name='one_building_release_per_project'),
        ),
    ]

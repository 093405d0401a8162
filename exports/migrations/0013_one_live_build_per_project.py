"""One build per project at a time: a lease that a working build renews (a live build whose lease has passed
lost its process and is shown as interrupted) and a unique constraint on the project's live build. Builds
left live by earlier concurrent starts (issue 36: several stuck "running" forever) are closed first, all but
the newest of each project, as failed with the reason."""
from django.db import migrations, models
from django.db.models import Max

LIVE = ("pending", "running")


def close_duplicate_live_builds(apps, schema_editor):
    BenchmarkBuild = apps.get_model("exports", "BenchmarkBuild")
    newest = BenchmarkBuild.objects.filter(status__in=LIVE).values("project_id").annotate(keep=Max("pk")).values_list("keep", flat=True)
    BenchmarkBuild.objects.filter(status__in=LIVE).exclude(pk__in=list(newest)).update(
        status="failed", error="interrupted: another build of this project was started while it was live",
    )


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0012_candidate_placement_from_candidates'),
    ]

    operations = [
        migrations.AddField(
            model_name='benchmarkbuild',
            name='lease_expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(close_duplicate_live_builds, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='benchmarkbuild',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['pending', 'running'])), fields=('project',), name='one_live_build_per_project'),
        ),
    ]

"""Who reviews which direction of which project, and the assignments of today's annotators: each annotator
reviews every direction of every project into one of their languages, as before."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def assign_from_languages(apps, schema_editor):
    Profile = apps.get_model("core", "Profile")
    Project = apps.get_model("core", "Project")
    ReviewerAssignment = apps.get_model("core", "ReviewerAssignment")
    projects = [(p, list(p.directions.all())) for p in Project.objects.prefetch_related("directions")]
    rows = []
    for profile in Profile.objects.filter(role="annotator").prefetch_related("languages"):
        languages = {language.pk for language in profile.languages.all()}
        rows += [
            ReviewerAssignment(project=project, direction=direction, user_id=profile.user_id)
            for project, directions in projects for direction in directions if direction.target_id in languages
        ]
    ReviewerAssignment.objects.bulk_create(rows, ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('core', '0003_project_retired_directions'),
    ]

    operations = [
        migrations.CreateModel(
            name='ReviewerAssignment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('direction', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='core.direction')),
                ('project', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='core.project')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_assignments', to=settings.AUTH_USER_MODEL)),
            ],
            options={'ordering': ['project', 'direction', 'user']},
        ),
        migrations.AddConstraint(
            model_name='reviewerassignment',
            constraint=models.UniqueConstraint(fields=('project', 'direction', 'user'), name='assignment_unique'),
        ),
        migrations.RunPython(assign_from_languages, migrations.RunPython.noop),
    ]

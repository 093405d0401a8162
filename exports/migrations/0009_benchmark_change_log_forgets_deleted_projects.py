"""A deleted project's rows leave the benchmark change log with it (``core.triggers_sql.forget_deleted_projects``)."""

from django.db import migrations

from core.trigger_ops import install_trigger
from exports.benchmark import changes_sql


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0008_score_summary'),
    ]

    operations = [
        install_trigger("xq_bench_project_delete", changes_sql.TRIGGERS["xq_bench_project_delete"]),
    ]

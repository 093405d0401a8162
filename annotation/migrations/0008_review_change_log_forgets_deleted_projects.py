"""A deleted project's rows leave the review change log with it (``core.triggers_sql.forget_deleted_projects``)."""

from django.db import migrations

from core.trigger_ops import install_trigger
from annotation.review import changes_sql


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0007_review_change_log'),
    ]

    operations = [
        install_trigger("xq_change_project_delete", changes_sql.STATEMENT_TRIGGERS["xq_change_project_delete"]),
    ]

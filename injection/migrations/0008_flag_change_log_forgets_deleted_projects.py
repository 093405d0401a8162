"""A deleted project's rows leave the flag change log with it (``core.triggers_sql.forget_deleted_projects``)."""

from django.db import migrations

from core.trigger_ops import install_trigger
from injection import changes_sql


class Migration(migrations.Migration):

    dependencies = [
        ('injection', '0007_flag_change_log'),
    ]

    operations = [
        install_trigger("xq_flags_project_delete", changes_sql.TRIGGERS["xq_flags_project_delete"]),
    ]

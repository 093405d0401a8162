"""A deleted project's rows leave the review change log with it (``core.triggers_sql.forget_deleted_projects``)."""

from django.db import migrations


# The SQL as this migration ran it (frozen: annotation.review.changes_sql may change after; a change is a new migration).
INSTALL = """
        CREATE OR REPLACE FUNCTION xq_change_project_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM annotation_reviewchange WHERE project_id IN (SELECT id FROM old_rows);
            RETURN NULL;
        END $$;
    
DROP TRIGGER IF EXISTS xq_change_project_delete ON core_project;
CREATE TRIGGER xq_change_project_delete AFTER DELETE ON core_project REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION xq_change_project_delete();"""

UNINSTALL = """DROP TRIGGER IF EXISTS xq_change_project_delete ON core_project; DROP FUNCTION IF EXISTS xq_change_project_delete();"""


def _postgresql(sql):
    """Run ``sql`` on PostgreSQL only: SQLite has no statement triggers (the pages count the rows there)."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0007_review_change_log'),
    ]

    operations = [
        migrations.RunPython(_postgresql(INSTALL), _postgresql(UNINSTALL)),
    ]

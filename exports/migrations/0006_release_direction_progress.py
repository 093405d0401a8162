from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0005_build_direction_progress'),
    ]

    operations = [
        migrations.AddField(
            model_name='release',
            name='directions',
            field=models.JSONField(blank=True, default=dict, help_text='per direction: status (pending, running, done, failed), triplets, the build stamp its files were written from, digest of its staged spool; a resumed release skips the done ones whose stamp and files still match'),
        ),
    ]

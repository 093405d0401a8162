from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        # Agreement listens to the review and rating stages without their importing it (see annotation.signals).
        from annotation.agreement import tasks
        from annotation.signals import annotations_written

        annotations_written.connect(tasks.on_annotations_written, dispatch_uid="annotation.agreement.refresh")

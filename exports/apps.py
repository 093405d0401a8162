from django.apps import AppConfig


class ExportsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "exports"

    def ready(self):
        from core.http import CREDENTIAL_CHECKS
        from exports.workers import services

        # A worker's upload (a part file, a staged direction) is past the anonymous body limit: its token
        # lifts it once it is one the platform issued (core.http, #48.5).
        CREDENTIAL_CHECKS["bearer"] = lambda request, secret: services.token_authenticate(secret=secret) is not None

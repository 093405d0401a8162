"""Settings, all from the environment (see the README's configuration table).

Embedded defaults run a fresh machine with no services: SQLite, Celery tasks in-process, the offline
rule-based injection backend. ``DJANGO_ENV=production`` switches on the deployment hardening that
``manage.py check --deploy`` looks for. Secrets (API keys, HF token) are read from the environment where
they are used and never stored in the database, logs or exports.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core.domain.secret_keys import WeakSecretKey, check_production_key

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


ENVIRONMENTS = ("development", "production")
DJANGO_ENV = os.environ.get("DJANGO_ENV") or "development"
if DJANGO_ENV not in ENVIRONMENTS:  # a typo (prod) would start with DEBUG on and the development key (#48.4)
    raise ImproperlyConfigured(f"DJANGO_ENV must be one of {', '.join(ENVIRONMENTS)}, not {DJANGO_ENV!r}")
PRODUCTION = DJANGO_ENV == "production"
DEBUG = env_bool("DEBUG", default=not PRODUCTION)

DEVELOPMENT_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-xqmeval-0123456789"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
# Production never runs on a key that can be guessed, whatever DEBUG says: sessions and CSRF tokens signed
# with it could be forged (#36.9, #48.4). Blank, made from the development key, short or low in entropy.
if PRODUCTION:
    try:
        check_production_key(SECRET_KEY, DEVELOPMENT_SECRET_KEY)
    except WeakSecretKey as exc:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be set to a secret of its own when DJANGO_ENV=production: {exc}"
        ) from None
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = DEVELOPMENT_SECRET_KEY
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served by us (no CDN)
    "csp",
    "axes",  # keep last among apps whose backends it wraps (django-axes docs)
    "django_htmx",
    "core",
    "injection",
    "annotation",
    "exports",
    "xqmeval",  # the site: home page, demo set-up command
]

MIDDLEWARE = [
    "core.http.BodySizeLimitMiddleware",  # first: an oversized body is refused before anything reads it
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into the lockout answer
]

ROOT_URLCONF = "xqmeval.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context_processors.navigation",
            ],
        },
    },
]

WSGI_APPLICATION = "xqmeval.wsgi.application"

# Default: a SQLite file under var/. Tests on PostgreSQL set DATABASE_URL=postgres://…
DATA_DIR = Path(os.environ.get("XQMEVAL_DATA_DIR", BASE_DIR / "var"))
DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'xqmeval.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Concurrent readers while a worker writes; the timeout rides out short write locks. IMMEDIATE: a
    # transaction takes the write lock when it begins, so two writers queue instead of one failing with
    # "database is locked" when a read lock cannot be upgraded (issue 36: two builds started at once).
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 30, "transaction_mode": "IMMEDIATE"})
# Parallel test runs on one PostgreSQL server need distinct test database names.
if os.environ.get("TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"]}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
RELEASES_DIR = Path(os.environ.get("RELEASES_DIR", DATA_DIR / "releases"))


def _storage_kind(variable: str) -> str:
    kind = os.environ.get(variable, "").strip().lower()
    if kind not in ("", "local", "s3"):
        raise ImproperlyConfigured(f"{variable}={kind!r}: expected s3, or local (the default)")
    return kind


def _object_storage(bucket: str, prefix: str, *, overwrite: bool, variable: str) -> dict:
    """S3-compatible object storage through django-storages (requirements.txt); the keys come from its
    AWS_* settings in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), docs/operations.md."""
    if not bucket:
        raise ImproperlyConfigured(
            f"{variable}=s3 needs a bucket: set OBJECT_STORAGE_BUCKET (or {variable[:-8]}_BUCKET)"
        )
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "location": prefix,
            "endpoint_url": os.environ.get("AWS_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("AWS_S3_REGION_NAME") or None,
            "file_overwrite": overwrite,
            "querystring_auth": True,  # nothing is public: a URL from the storage is signed
            # uploads one part at a time: boto3's 10 upload threads each keep their own malloc arena, and a
            # release's peak memory grew with its number of files (docs/performance.md, release staging)
            "use_threads": False,
        },
    }


# Where the platform reads finished releases and the parts workers upload (core.storage): the local file
# system by default (a release is its directory under RELEASES_DIR, nothing is copied), or S3-compatible
# object storage: RELEASES_STORAGE=s3 publishes each finished release into the bucket and every reader
# (ingest, the worker file endpoint, meta-evaluation, the scores page) streams it from there;
# WORKER_PARTS_STORAGE=s3 keeps uploaded parts there.
OBJECT_STORAGE_BUCKET = os.environ.get("OBJECT_STORAGE_BUCKET", "")


# The storages a variable chooses: that variable (s3 or local), and those of its bucket and key prefix.
_STORAGE_VARIABLES = {
    "releases": ("RELEASES_STORAGE", "RELEASES_BUCKET", "RELEASES_PREFIX"),
    "release_staging": ("RELEASE_STAGING_STORAGE", "RELEASE_STAGING_BUCKET", "RELEASE_STAGING_PREFIX"),
    "worker_parts": ("WORKER_PARTS_STORAGE", "WORKER_PARTS_BUCKET", "WORKER_PARTS_PREFIX"),
}


def _storage(name: str, prefix: str, *, overwrite: bool, location: Path) -> dict:
    """Storage ``name`` as its variables choose: in the bucket (default: OBJECT_STORAGE_BUCKET) under the key
    prefix (default: ``prefix``), or in the local directory ``location``."""
    variable, bucket, key_prefix = _STORAGE_VARIABLES[name]
    if _storage_kind(variable) == "s3":
        return _object_storage(
            os.environ.get(bucket) or OBJECT_STORAGE_BUCKET,
            os.environ.get(key_prefix, prefix),
            overwrite=overwrite,
            variable=variable,
        )
    return {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(location)}}


# a file published again replaces its copy
STORAGES["releases"] = _storage("releases", "releases", overwrite=True, location=RELEASES_DIR)
# Where a release's directions are staged until the release is finished (core.storage.StagedFiles): on the
# local file system beside the release's directory (RELEASES_DIR/PROJECT/.VERSION.staging; finishing is a
# rename, and every process that stages or finishes must share that disk), or RELEASE_STAGING_STORAGE=s3:
# under a prefix of the bucket, so the processes that stage directions and the one that finishes the
# release share no disk. A direction staged again replaces its files.
STORAGES["release_staging"] = _storage("release_staging", "release-staging", overwrite=True, location=RELEASES_DIR)
STORAGES["worker_parts"] = _storage(
    "worker_parts",
    "worker-parts",
    overwrite=False,
    location=Path(os.environ.get("WORKER_PARTS_DIR", DATA_DIR / "worker-parts")),
)
# The largest part file a worker may upload (bytes); a worker token's requests share REQUEST_BODY_MAX_BYTES.
WORKER_PART_MAX_BYTES = int(os.environ.get("WORKER_PART_MAX_BYTES", str(64 * 1024 * 1024)))
# Release directions staged by release workers that share nothing with the web app but the broker and HTTP
# (exports.workers.api): RELEASE_WORKERS=http sends a release's direction tasks to queue ``release``, whose
# workers read the rows over HTTP and upload each staged direction as an archive of at most
# RELEASE_UPLOAD_MAX_BYTES (unpacked: RELEASE_UPLOAD_MAX_UNPACKED_BYTES). Default: the platform's own workers
# stage them on its (shared) file system.
RELEASE_WORKERS = os.environ.get("RELEASE_WORKERS", "").strip().lower()
if RELEASE_WORKERS not in ("", "shared", "http"):
    raise ImproperlyConfigured(f"RELEASE_WORKERS={RELEASE_WORKERS!r}: use 'http' or leave it unset (shared)")
RELEASE_UPLOAD_MAX_BYTES = int(os.environ.get("RELEASE_UPLOAD_MAX_BYTES", str(64 * 1024 * 1024)))
RELEASE_UPLOAD_MAX_UNPACKED_BYTES = int(os.environ.get("RELEASE_UPLOAD_MAX_UNPACKED_BYTES", str(1024 * 1024 * 1024)))
# A job token (exports.workers.grants) opens one job's endpoints to a worker until it expires: the time a task
# may wait in its queue, run and be retried (scoring tasks on a busy GPU queue wait longest).
WORKER_JOB_TOKEN_MAX_AGE = int(os.environ.get("WORKER_JOB_TOKEN_MAX_AGE", str(7 * 24 * 3600)))
MEDIA_ROOT = DATA_DIR / "media"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# ---- Bounded input (#36.5; defaults in docs/security.md) ----------------------------------------------
# A request body past these answers 413 before it is read (core.http.BodySizeLimitMiddleware, and the
# upload handler for bodies without a Content-Length); the proxy in front should cap it too.
REQUEST_BODY_MAX_BYTES = int(os.environ.get("REQUEST_BODY_MAX_BYTES", str(64 * 1024 * 1024)))
ANONYMOUS_BODY_MAX_BYTES = int(os.environ.get("ANONYMOUS_BODY_MAX_BYTES", str(64 * 1024)))  # login, set-password
DATA_UPLOAD_MAX_MEMORY_SIZE = int(
    os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(10 * 1024 * 1024))
)  # non-file fields
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # larger uploads stream to a temporary file, not memory
FILE_UPLOAD_HANDLERS = [
    "core.http.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "core.http.SweptTemporaryFileUploadHandler",  # named by their process, swept once it is gone (#48.5)
]
# in the data directory, not the system's temporary folder: the platform's own, and swept (core.http)
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "upload-tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
CORPUS_UPLOAD_MAX_BYTES = int(os.environ.get("CORPUS_UPLOAD_MAX_BYTES", str(32 * 1024 * 1024)))
HF_HUB_TIMEOUT = float(os.environ.get("HF_HUB_TIMEOUT", "20"))  # seconds for a Hub dataset import's calls
# A Hub import's process holds its job this long (it cannot renew while datasets downloads); past it, a
# running import lost its process: shown as interrupted, and it can be retried. Must exceed the longest read.
CORPUS_IMPORT_LEASE_SECONDS = int(os.environ.get("CORPUS_IMPORT_LEASE_SECONDS", "900"))
HF_IMPORT_RETRIES = int(os.environ.get("HF_IMPORT_RETRIES", "4"))  # tries again after an unreachable Hub
CORPUS_LIMITS = {  # core.corpus.domain.Limits: the same for every format
    "segment_chars": int(os.environ.get("CORPUS_MAX_SEGMENT_CHARS", "5000")),
    "columns": int(os.environ.get("CORPUS_MAX_COLUMNS", "200")),
    "nesting": int(os.environ.get("CORPUS_MAX_NESTING", "32")),
    "rows": int(os.environ.get("CORPUS_MAX_ROWS", "200000")),
    "parquet_bytes": int(os.environ.get("CORPUS_MAX_PARQUET_BYTES", str(512 * 1024 * 1024))),
}

# ---- Login throttling (django-axes; core/auth.py) ----------------------------------------------------------
AUTHENTICATION_BACKENDS = ["core.auth.ThrottledBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_MINUTES = float(os.environ.get("AXES_COOLOFF_MINUTES", "15"))
AXES_COOLOFF_TIME = AXES_COOLOFF_MINUTES / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own: per account and per client
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "core.auth.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
# Behind reverse proxies every client looks like the proxy: PROXY_COUNT proxies in front makes the
# client the address they appended to X-Forwarded-For (core.auth.client_ip).
XQMEVAL_PROXY_COUNT = int(os.environ.get("PROXY_COUNT", "0"))
AXES_CLIENT_IP_CALLABLE = "core.auth.client_ip"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# ---- Celery ----------------------------------------------------------------------------------------
# No broker configured: tasks run in-process (eager), which keeps a fresh machine free of services.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
# Results (default: the broker): a build runs as a chord (one task per direction), which needs them.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or CELERY_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_DEFAULT_QUEUE = "default"
# Each stage's task module (autodiscover_tasks() finds only <app>.tasks). Task names are fixed in the
# decorators, so queued messages and routes do not depend on where a module lives.
CELERY_IMPORTS = [
    "core.corpus.tasks",
    "injection.tasks",
    "annotation.review.tasks",
    "annotation.agreement.tasks",
    "exports.benchmark.tasks",
    "exports.release.tasks",
    "exports.scores.tasks",  # scoring: send tasks to scoring workers, ingest their files
    "exports.metaeval.tasks",
]
CELERY_TASK_ROUTES = {
    "injection.*": {"queue": "llm"},
    "scoring.*": {"queue": "gpu"},
    "exports.release_direction_remote": {"queue": "release"},  # RELEASE_WORKERS=http: the release workers
}
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis redelivers an unacknowledged task after this long; long injection runs also hold a lease
# (InjectionRun.lease_*), so a redelivery while the first worker still runs does nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", str(6 * 3600)))
}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# ---- LLM backends (injection). Keys stay in the environment; never stored. ------------------------
LLM_BASE_URL = os.environ.get("LLM_BASE_URL", "")  # empty: api.openai.com
# The endpoints runs may call, each with the variable holding its key (llm_client.endpoints, docs/security.md):
# a key goes only to its own endpoint. Typed URLs (forms) only with LLM_ALLOW_CUSTOM_URL=1, and never with a key.
from llm_client.endpoints import EndpointError, configured_endpoints, custom_urls_allowed  # noqa: E402

try:
    LLM_ENDPOINTS = configured_endpoints(os.environ)
except EndpointError as exc:
    raise ImproperlyConfigured(str(exc)) from None
LLM_ALLOW_CUSTOM_URL = custom_urls_allowed(os.environ)
LLM_MODEL = os.environ.get("LLM_MODEL", "gpt-4o")
INJECTION_DEFAULT_BACKEND = os.environ.get("INJECTION_BACKEND", "rule")

# ---- REST API ----------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Basic auth for scripts (throttled like the login form); API_BASIC_AUTH=0 turns it off.
        *(["core.auth.ThrottledBasicAuthentication"] if env_bool("API_BASIC_AUTH", True) else []),
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.JSONParser",  # 400 for deeply nested bodies
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # an AppError (core.domain.errors) answers as its kind says: 400/422, 403, 409, or exactly as a missing thing
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    # a rate limit per signed-in user: 429 with Retry-After past it (core.throttles)
    "DEFAULT_THROTTLE_CLASSES": ["core.throttles.ApiUserThrottle"],
}
API_THROTTLE_RATES = {"user": os.environ.get("API_THROTTLE_USER", "1200/minute")}
SPECTACULAR_SETTINGS = {
    "TITLE": "xqmeval API",
    "DESCRIPTION": "Review queues, decisions, ratings and releases of the xqmeval benchmark platform.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and the docs page need a login like the API itself (the platform is not public).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# ---- Content-Security-Policy (django-csp): scripts, styles, images and requests from this site only; no
# inline script or style anywhere (templates load static files; plots are <img> SVGs). -------------------
from csp.constants import NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],  # Swagger UI's icons are data: URIs
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# ---- Agreement (annotation/agreement/selectors.py) -------------------------------------------------
# Review: how long a reviewer holds a candidate before it returns to the queue.
REVIEW_LOCK_SECONDS = int(os.environ.get("REVIEW_LOCK_SECONDS", "900"))
# A benchmark build renews its lease at its start and at each direction (one direction is one transaction):
# a live build whose lease has passed is shown as interrupted and the next start resumes it, so this must
# exceed the longest direction's merge.
BUILD_LEASE_SECONDS = int(os.environ.get("BUILD_LEASE_SECONDS", "3600"))
AGREEMENT_BOOTSTRAP_RESAMPLES = int(os.environ.get("AGREEMENT_BOOTSTRAP_RESAMPLES", "1000"))
AGREEMENT_BOOTSTRAP_SEED = int(os.environ.get("AGREEMENT_BOOTSTRAP_SEED", "0"))
AGREEMENT_CONFIDENCE = float(os.environ.get("AGREEMENT_CONFIDENCE", "0.95"))
AGREEMENT_CACHE_SECONDS = int(os.environ.get("AGREEMENT_CACHE_SECONDS", str(24 * 3600)))
AGREEMENT_REFRESH_DELAY = int(
    os.environ.get("AGREEMENT_REFRESH_DELAY", "30")
)  # seconds: a burst of submissions, one run
# annotator decisions above which the review admin page shows the per-annotator statistics the agreement
# refresh computed last instead of a pass over every decision per view (annotation.review.selectors)
REVIEW_FIGURES_LIVE_LIMIT = int(os.environ.get("REVIEW_FIGURES_LIVE_LIMIT", "20000"))
# rows (the planner's estimate) from which list pages show an estimated count instead of counting (core.paging)
LIST_EXACT_COUNT_BELOW = int(os.environ.get("LIST_EXACT_COUNT_BELOW", "50000"))
# characters of texts one page of the candidate list holds at most (its 50 rows go on past it: injection.views)
CANDIDATE_PAGE_MAX_CHARS = int(os.environ.get("CANDIDATE_PAGE_MAX_CHARS", "1000000"))

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["CACHE_URL"]}
        if os.environ.get("CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "filters": {"client_error_without_traceback": {"()": "core.log_filters.ClientErrorWithoutTraceback"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # a refused request (403, 400) logs its one line, not a traceback; a 5xx keeps its traceback
        "django.request": {"filters": ["client_error_without_traceback"]},
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# ---- Production hardening (checked by `manage.py check --deploy`) -----------------------------------
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"

"""One settings module, driven by the environment.

Nothing configured: SQLite in ``var/`` and kombu's SQLAlchemy transport on a SQLite file as
the broker (no server needed, but a real worker process consumes it). ``DATABASE_URL`` and
``CELERY_BROKER_URL`` switch to PostgreSQL and Redis. ``RUNTIME_MODE`` is what start-up
prints, so the mode in use is always visible.
"""

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import csp.constants as csp
import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from hilbench_annotate.toolkit.sqlitewal import AUTOCHECKPOINT_PAGES, JOURNAL_LIMIT_BYTES

# One BLAS thread per process, set before numpy loads: OpenBLAS's threads busy-wait (quality.md)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("HILBENCH_VAR_DIR", BASE_DIR / "var")).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _rate(name: str, default: str) -> tuple[int, int] | None:
    """``N/S``: at most N in any S seconds; ``0`` or ``off``: no limit."""
    value = os.environ.get(name, default).strip().lower()
    if value in {"", "0", "off"}:
        return None
    try:
        count, seconds = (int(part) for part in value.split("/"))
    except ValueError:
        count = seconds = 0
    if count < 1 or seconds < 1:
        raise ImproperlyConfigured(f"{name} must be N/SECONDS (e.g. 10/60) or 0, got {value!r}")
    return count, seconds


# Off unless asked for: a deployment that forgets the variable must not serve tracebacks and
# URL lists to strangers. `make run` and the test settings (tests/settings.py) turn it on.
DEBUG = _env_bool("DJANGO_DEBUG", False)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off (the default). On a laptop, "
            "`make run` turns DJANGO_DEBUG on; elsewhere set DJANGO_DEBUG=1 for development."
        )
    # Development only: a key that is obviously not a secret, never used with DEBUG off.
    SECRET_KEY = "dev-insecure-key-only-for-local-debug"  # noqa: S105

ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]
if DEBUG and not ALLOWED_HOSTS:
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
CSRF_TRUSTED_ORIGINS = [
    o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "hilbench_annotate",
    "authoring",
    "review",
    "validators",
    "judge",
    "evaluation",
    "exchange",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Bodies: small for anonymous requests, uploads held to the spool quota; refused before
    # anything reads them (CsrfViewMiddleware reads the form later, in process_view).
    "hilbench_annotate.request_limits.RequestBodyLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # AccessDenied from a view or service: a 403 page naming the reason (the API maps it itself).
    "hilbench_annotate.access.AccessDeniedMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "hilbench_annotate.urls"
WSGI_APPLICATION = "hilbench_annotate.wsgi.application"

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
                "review.context_processors.nav",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a kept connection the server dropped (restart, failover, idle kill) is
    # replaced at the next request instead of failing it.
    DATABASES = {
        "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            f"DATABASE_URL must point at PostgreSQL, got engine {DATABASES['default']['ENGINE']}"
        )
    DATABASES["default"]["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME")}
else:
    SQLITE_PATH = Path(os.environ.get("HILBENCH_SQLITE_PATH", VAR_DIR / "db.sqlite3"))
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": SQLITE_PATH,
            # A file, not memory, so a worker process in the tests can share it; one per
            # test process, so two test runs on one machine do not share a database.
            "TEST": {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")},
            # A process keeps its connection (as with PostgreSQL): opening the file and
            # setting its pragmas on every request was a large part of a short one.
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            # WAL and a busy timeout so the web server and the worker can share the file.
            # 16 KiB pages (set when the file is made; an existing file keeps its own): a
            # revision's snapshot (2-4 kB, a database's descriptions in it) filled a 4 KiB
            # page alone; an import of 10,000 questions writes a fifth less, in an eighth
            # less time. Checkpoints are the worker's (toolkit/sqlitewal.py): a commit makes
            # one only past a backstop of AUTOCHECKPOINT_PAGES.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": (
                    "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                    f" PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES};"
                    f" PRAGMA journal_size_limit={JOURNAL_LIMIT_BYTES};"
                ),
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite'}"
    EMBEDDED_BROKER = True
else:
    EMBEDDED_BROKER = False
# Results live in our own models (ImportJob, ValidationRun); the result backend is not used.
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes first: it refuses a login attempt while that username is locked out at that address.
# Then passwords, for people only: machine users (harness role) are refused (API tokens only).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "hilbench_annotate.authentication.PasswordBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "task-list"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "hilbench_annotate.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "hilbench_annotate.api_parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "hilbench_annotate.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "HiL-Bench Annotate API",
    "DESCRIPTION": "Tasks, blockers and trigger questions of human-in-the-loop benchmarks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Files ----------------------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Stores owned by the app: task databases (content-addressed) and bare git mirrors.
DATABASE_STORE = Path(os.environ.get("HILBENCH_DATABASE_STORE", VAR_DIR / "databases"))
REPOSITORY_STORE = Path(os.environ.get("HILBENCH_REPOSITORY_STORE", VAR_DIR / "repositories"))
UPLOAD_STORE = Path(os.environ.get("HILBENCH_UPLOAD_STORE", VAR_DIR / "uploads"))
MAX_UPLOAD_BYTES = int(os.environ.get("HILBENCH_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024)))
# An import's upload and what it unpacks to are deleted when its job ends; anything left in
# UPLOAD_STORE (a job whose worker died for good) is swept after this many hours.
UPLOAD_KEEP_HOURS = float(os.environ.get("HILBENCH_UPLOAD_KEEP_HOURS", "24"))
# Disk the upload folders of one project's unfinished imports may hold together (what they
# unpacked included): an upload past it is refused and nothing of it stored.
PROJECT_UPLOAD_QUOTA_MB = int(os.environ.get("HILBENCH_PROJECT_UPLOAD_QUOTA_MB", "20000"))
# What an uploaded archive may unpack to: at most this many bytes, and (past 64 MiB) at most
# this many times its own size, so a small decompression bomb is refused before it is written.
UNPACK_MAX_BYTES = int(os.environ.get("HILBENCH_UNPACK_MAX_BYTES", str(4 * 1024**3)))
UNPACK_MAX_RATIO = float(os.environ.get("HILBENCH_UNPACK_MAX_RATIO", "100"))
# Where a repository named in the import form (a worker clones it on the server) may come
# from: URLs starting with one of these prefixes, and folders under these server roots
# (comma-separated). Uploaded repository archives are always accepted. Local paths and
# file:// URLs are refused unless a root allows them, and never reach the app's own stores.
REPOSITORY_URL_PREFIXES = [
    p.strip()
    for p in os.environ.get("HILBENCH_REPOSITORY_URL_PREFIXES", "https://github.com/").split(",")
    if p.strip()
]
REPOSITORY_LOCAL_ROOTS = [
    Path(p.strip())
    for p in os.environ.get("HILBENCH_REPOSITORY_LOCAL_ROOTS", "").split(",")
    if p.strip()
]
# Export bundles: where finished bundles wait for download, and for how long; what an
# imported bundle may unpack to (bytes, files) before it is refused unread.
BUNDLE_STORE = Path(os.environ.get("HILBENCH_BUNDLE_STORE", VAR_DIR / "bundles"))
BUNDLE_KEEP_HOURS = float(os.environ.get("HILBENCH_BUNDLE_KEEP_HOURS", "72"))
BUNDLE_MAX_BYTES = int(os.environ.get("HILBENCH_BUNDLE_MAX_BYTES", str(8 * 1024**3)))
BUNDLE_MAX_FILES = int(os.environ.get("HILBENCH_BUNDLE_MAX_FILES", "50000"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Request bodies (hilbench_annotate/request_limits.py). A request neither signed in nor
# carrying a valid API token may send at most this many kB (1000 bytes): larger is refused
# (413) before it is read.
ANONYMOUS_BODY_MAX_KB = float(os.environ.get("HILBENCH_ANONYMOUS_BODY_MAX_KB", "256"))
# Uploads past FILE_UPLOAD_MAX_MEMORY_SIZE are spooled here while a request is read, not to
# /tmp; one whose Content-Length would take the folder past this quota is refused (413).
FILE_UPLOAD_TEMP_DIR = VAR_DIR / "upload-spool"
FILE_UPLOAD_TEMP_DIR.mkdir(parents=True, exist_ok=True)
UPLOAD_SPOOL_QUOTA_MB = float(os.environ.get("HILBENCH_UPLOAD_SPOOL_QUOTA_MB", "4000"))

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- Security -------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Served over TLS (directly or behind a proxy that sets X-Forwarded-Proto): redirect plain HTTP,
# send HSTS, and mark the cookies secure. Off by default: `make run` serves plain HTTP.
HTTPS = _env_bool("HILBENCH_HTTPS", False)
if HTTPS:
    SECURE_SSL_REDIRECT = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("HILBENCH_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("HILBENCH_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = _env_bool("HILBENCH_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
# Content-Security-Policy (django-csp). Scripts: our own static files, plus inline <script>
# blocks carrying the per-response nonce ({{ request.csp_nonce }}); no inline event handlers,
# no eval (htmx runs with allowEval off). Styles allow 'unsafe-inline' on purpose: the heat
# map cells and the SVG charts set style attributes, and Swagger UI injects <style> blocks;
# inline CSS cannot run code, so the script policy is what keeps injected markup inert.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp.SELF],
        "script-src": [csp.SELF, csp.NONCE],
        "style-src": [csp.SELF, csp.UNSAFE_INLINE],
        "img-src": [csp.SELF, "data:"],
        "font-src": [csp.SELF, "data:"],
        "connect-src": [csp.SELF],
        "object-src": [csp.NONE],
        "base-uri": [csp.SELF],
        "form-action": [csp.SELF],
        "frame-ancestors": [csp.NONE],
    }
}
# Login throttling (django-axes, attempts stored in the database so every web process sees
# them): after LOGIN_FAILURE_LIMIT failures for one username from one address, further attempts
# for that username from that address are refused (429) for the cool-off time. A success resets
# the count. Locking by address alone would lock every colleague behind the same office NAT
# or proxy out after one person's typos; locking by username alone would let anyone lock
# anyone out from anywhere.
AXES_ENABLED = _env_bool("HILBENCH_LOGIN_THROTTLE", True)
AXES_FAILURE_LIMIT = int(os.environ.get("HILBENCH_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("HILBENCH_LOGIN_COOLOFF_MINUTES", "15")))


def _lockout_parameters(value: str) -> list[list[str]]:
    """``username+ip_address`` locks the pair; ``a,b`` locks by a and by b apart (axes' list)."""
    keys = [key for key in value.split(",") if key.strip()]
    return [[part.strip() for part in key.split("+") if part.strip()] for key in keys]


# Behind a reverse proxy every attempt comes from the proxy's address, so the pair amounts to
# a lock by username there.
AXES_LOCKOUT_PARAMETERS = _lockout_parameters(
    os.environ.get("HILBENCH_LOGIN_LOCKOUT_BY", "username+ip_address")
)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "login_locked.html"
AXES_VERBOSE = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}


def _describe_mode() -> str:
    """One line naming the database and broker in use; printed at start-up."""
    db = DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        db_text = f"SQLite at {db['NAME']} (embedded)"
    else:
        db_text = (
            f"PostgreSQL {db.get('HOST') or 'local socket'}:{db.get('PORT') or 5432}/{db['NAME']}"
        )
    if EMBEDDED_BROKER:
        broker_text = f"embedded broker (SQLAlchemy on {VAR_DIR / 'celery-broker.sqlite'})"
    else:
        broker_text = "broker " + CELERY_BROKER_URL.split("@")[-1]
    return f"HiL-Bench Annotate mode: database {db_text}; {broker_text}"


RUNTIME_MODE = _describe_mode()

# --- Authoring ------------------------------------------------------------------------------
# Lint: two trigger questions at least this similar are near-duplicates; two blockers whose
# descriptions overlap this much are flagged as not independent.
LINT_DUPLICATE_SIMILARITY = float(os.environ.get("HILBENCH_LINT_DUPLICATE_SIMILARITY", "0.85"))
LINT_OVERLAP_SIMILARITY = float(os.environ.get("HILBENCH_LINT_OVERLAP_SIMILARITY", "0.6"))
# The workspace's autosaves of one editing session (one open page) fold into one revision
# while the session's last save is less than this old; an explicit save (Ctrl+S, Save) ends it.
AUTOSAVE_SESSION_MINUTES = float(os.environ.get("HILBENCH_AUTOSAVE_SESSION_MINUTES", "10"))
# The SQL console: wall-time limit and row cap per query.
SQL_CONSOLE_TIMEOUT_S = float(os.environ.get("HILBENCH_SQL_CONSOLE_TIMEOUT_S", "5"))
SQL_CONSOLE_ROW_CAP = int(os.environ.get("HILBENCH_SQL_CONSOLE_ROW_CAP", "500"))
# Every query on a task database (console, validators, evaluation; toolkit/sqlconsole.py) runs
# in a process killed at its deadline, with these limits: one value's size, the process's
# memory (SQLite's heap gets half), and what an answer shown to a person or a model may hold
# (longer values and further rows are cut, with a marker); answers that are compared (scoring,
# validation, golden output) are never cut, and refused past SQL_EXACT_RESULT_BYTES.
SQL_VALUE_BYTES = int(os.environ.get("HILBENCH_SQL_VALUE_BYTES", "10000000"))
SQL_MEMORY_MB = int(os.environ.get("HILBENCH_SQL_MEMORY_MB", "1024"))
SQL_CONSOLE_CELL_BYTES = int(os.environ.get("HILBENCH_SQL_CONSOLE_CELL_BYTES", "10000"))
SQL_CONSOLE_RESULT_BYTES = int(os.environ.get("HILBENCH_SQL_CONSOLE_RESULT_BYTES", "2000000"))
SQL_EXACT_RESULT_BYTES = int(os.environ.get("HILBENCH_SQL_EXACT_RESULT_BYTES", "64000000"))
# Disk a project's task databases may take: the stored databases its tasks use plus its edited
# copies (DATABASE_STORE/edited/project-<id>/, a cache). Copies unused for
# EDITED_DATABASE_TTL_S are deleted by the beat; copies unused for 30 minutes make room for a
# new one when the quota is reached (hilbench_annotate/databases.py).
PROJECT_DATABASE_QUOTA_MB = int(os.environ.get("HILBENCH_PROJECT_DATABASE_QUOTA_MB", "10000"))
EDITED_DATABASE_TTL_S = int(os.environ.get("HILBENCH_EDITED_DATABASE_TTL_S", "86400"))

# --- Validators -----------------------------------------------------------------------------
# Which sandbox runs task code: "local" (bubblewrap namespaces) or "docker" (containers);
# when the chosen one cannot isolate, task code does not run (validators/sandbox).
SANDBOX_BACKEND = os.environ.get("HILBENCH_SANDBOX_BACKEND", "local")
SANDBOX_WALL_S = float(os.environ.get("HILBENCH_SANDBOX_WALL_S", "600"))
SANDBOX_CPU_S = int(os.environ.get("HILBENCH_SANDBOX_CPU_S", "600"))
SANDBOX_MEMORY_MB = int(os.environ.get("HILBENCH_SANDBOX_MEMORY_MB", "4096"))
SANDBOX_PROCESSES = int(os.environ.get("HILBENCH_SANDBOX_PROCESSES", "256"))
SANDBOX_DISK_MB = int(os.environ.get("HILBENCH_SANDBOX_DISK_MB", "2048"))
SANDBOX_TMP_MB = int(os.environ.get("HILBENCH_SANDBOX_TMP_MB", "1024"))
SANDBOX_SHM_MB = int(os.environ.get("HILBENCH_SANDBOX_SHM_MB", "64"))
# What runs see of this machine lives here (the bwrap binary, built environments, interpreter
# copies, the trees of running jobs): every level must be readable by the sandbox user.
SANDBOX_ROOT = Path(os.environ.get("HILBENCH_SANDBOX_ROOT", VAR_DIR / "sandbox"))
# A root worker runs task code as this user (nobody); a non-root worker as itself.
SANDBOX_RUN_UID = int(os.environ.get("HILBENCH_SANDBOX_UID", "65534"))
SANDBOX_RUN_GID = int(os.environ.get("HILBENCH_SANDBOX_GID", "65534"))
SANDBOX_BWRAP = os.environ.get("HILBENCH_SANDBOX_BWRAP", "")
# A cgroup v2 folder delegated to the worker's user (memory and pids enabled for children),
# where each run gets a cgroup of its own; empty: the worker's own cgroup, if it may.
SANDBOX_CGROUP = os.environ.get("HILBENCH_SANDBOX_CGROUP", "")
SANDBOX_DOCKER_IMAGE = os.environ.get("HILBENCH_SANDBOX_DOCKER_IMAGE", "python:3.11-slim")
# Interpreters for environments, beyond those found on PATH, in /usr and under pyenv:
# "3.9=/opt/python3.9/bin/python3.9,3.12=/usr/local/bin/python3.12".
SANDBOX_PYTHONS = dict(
    item.split("=", 1)
    for item in os.environ.get("HILBENCH_SANDBOX_PYTHONS", "").split(",")
    if "=" in item
)
ENVIRONMENT_BUILD_WALL_S = float(os.environ.get("HILBENCH_ENVIRONMENT_BUILD_WALL_S", "1800"))
# A task's requirement files, all -r files in (each time named): validators/requirements.py
REQUIREMENTS_MAX_LINES = int(os.environ.get("HILBENCH_REQUIREMENTS_MAX_LINES", "20000"))
REQUIREMENTS_MAX_BYTES = int(os.environ.get("HILBENCH_REQUIREMENTS_MAX_BYTES", str(2 * 1024**2)))
REQUIREMENTS_MAX_INCLUDES = int(os.environ.get("HILBENCH_REQUIREMENTS_MAX_INCLUDES", "32"))
# The only hosts an environment build may connect to (through its proxy, port 443 or 80;
# validators/sandbox/egress.py): the package registries, and the host of a pip index the
# worker is configured with (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL). ".example.org" allows its
# subdomains. Nothing else — not this machine, not the deployment's services — is reachable.
BUILD_EGRESS_HOSTS = [
    h.strip()
    for h in os.environ.get(
        "HILBENCH_BUILD_EGRESS_HOSTS",
        "pypi.org,files.pythonhosted.org,registry.npmjs.org,deb.debian.org,"
        "proxy.golang.org,sum.golang.org",
    ).split(",")
    if h.strip()
] + [
    urlsplit(url).hostname
    for variable in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
    for url in os.environ.get(variable, "").split()
    if urlsplit(url).hostname
]
# ...on these ports (a pip index's own port is added), through CONNECT: plain-HTTP requests
# to the proxy are not relayed, so an http:// index must be reached over https.
BUILD_EGRESS_PORTS = sorted(
    {int(p) for p in os.environ.get("HILBENCH_BUILD_EGRESS_PORTS", "443,80").split(",") if p}
    | {
        urlsplit(url).port
        for variable in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
        for url in os.environ.get(variable, "").split()
        if urlsplit(url).port
    }
)
SQL_CHECK_TIMEOUT_S = float(os.environ.get("HILBENCH_SQL_CHECK_TIMEOUT_S", "30"))
# Jobs (hilbench_annotate/jobs.py): one still queued after JOB_REDISPATCH_S is sent again (the
# broker may have lost it); a running one whose worker said nothing for its kind's *_STALE_S
# lost its worker and is taken over; after JOB_MAX_ATTEMPTS claims it is failed instead.
JOB_REDISPATCH_S = int(os.environ.get("HILBENCH_JOB_REDISPATCH_S", "300"))
JOB_MAX_ATTEMPTS = int(os.environ.get("HILBENCH_JOB_MAX_ATTEMPTS", "3"))
VALIDATION_STALE_S = int(os.environ.get("HILBENCH_VALIDATION_STALE_S", "300"))
# Model and Harbor runs beat every JOB_HEARTBEAT_S from a thread of their own while their
# worker lives, so a run silent for EVALUATION_STALE_S lost its worker.
JOB_HEARTBEAT_S = float(os.environ.get("HILBENCH_JOB_HEARTBEAT_S", "15"))
EVALUATION_STALE_S = int(os.environ.get("HILBENCH_EVALUATION_STALE_S", "90"))
STUDY_STALE_S = int(os.environ.get("HILBENCH_STUDY_STALE_S", "1800"))
IMPORT_STALE_S = int(os.environ.get("HILBENCH_IMPORT_STALE_S", "900"))
# Tasks an import writes per chunk (one INSERT per table, savepoint, progress reported).
IMPORT_CHUNK_SIZE = int(os.environ.get("HILBENCH_IMPORT_CHUNK_SIZE", "500"))
EXPORT_STALE_S = int(os.environ.get("HILBENCH_EXPORT_STALE_S", "1800"))
# Tasks an export chunk holds until written, by as many workers as there are; the bytes
# depend on it, not on the workers (150: a pool process's own peak 28-32 MB, 64-69 with 250,
# the same CPU, 3% more bytes; docs/quality.md, tenth pass); one heartbeat every 10 s.
EXPORT_CHUNK_SIZE = int(os.environ.get("HILBENCH_EXPORT_CHUNK_SIZE", "150"))
EXPORT_CHUNK_STALE_S = int(os.environ.get("HILBENCH_EXPORT_CHUNK_STALE_S", "120"))
# Builds heartbeat every 10 s, even inside one long install step.
ENVIRONMENT_STALE_S = int(os.environ.get("HILBENCH_ENVIRONMENT_STALE_S", "120"))
# Redis: an unacknowledged job (its worker died) is delivered again after this many seconds.
# (The SQLAlchemy transport takes no such option.)
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("HILBENCH_VISIBILITY_TIMEOUT_S", "900"))
    }
# The embedded broker's SQLAlchemy transport looks for messages once per polling interval
# (kombu's default: 1 s, which each queued job waited for, one after the other); a look is
# one query on the broker's own file. hilbench_annotate/celery.py sets it on the transport
# (the transport hands its options to SQLAlchemy's create_engine, which refuses this one).
# 0.05 s: a job waits 25 ms for a worker on average (an API import of 10,000 questions, 0.7 s
# in all, waited 40–100 ms at 0.1 s); an idle worker's main process takes 2.7% of a core
# instead of 2.0% (its checkpoints included).
BROKER_POLL_S = float(os.environ.get("HILBENCH_BROKER_POLL_S", "0.05"))
CELERY_BEAT_SCHEDULE = {
    "delete-expired-bundles": {"task": "bundles.expire", "schedule": 3600.0},
    # Uploads a dead worker left behind (exchange/services/imports.py, uploads_sweep).
    "sweep-old-uploads": {"task": "uploads.sweep", "schedule": 3600.0},
    # Every kind of job a broker lost or whose worker died (hilbench_annotate/jobs.py).
    "reap-lost-jobs": {
        "task": "jobs.reap",
        "schedule": float(os.environ.get("HILBENCH_REAP_INTERVAL_S", "20")),
    },
    # Edited database copies nobody used for EDITED_DATABASE_TTL_S.
    "sweep-edited-databases": {"task": "databases.sweep", "schedule": 900.0},
}

# --- Judge ----------------------------------------------------------------------------------
JUDGE_BACKEND = os.environ.get("HILBENCH_JUDGE", "embedded")
# Build a task's judge index (its embeddings, kept in the database) in a worker whenever its
# registry is saved, so the first ask_human question does not pay for it.
JUDGE_PREPARE_ON_SAVE = os.environ.get("HILBENCH_JUDGE_PREPARE_ON_SAVE", "1") != "0"
# Model endpoints registered by leads read their API key from an environment variable with
# this prefix only (never the server's own secrets), and, when this list is set, may only
# point at these hosts (comma-separated): the workers call them.
MODEL_KEY_ENV_PREFIX = os.environ.get("HILBENCH_MODEL_KEY_ENV_PREFIX", "HILBENCH_MODEL_KEY_")
MODEL_ENDPOINT_HOSTS = [
    h for h in os.environ.get("HILBENCH_MODEL_ENDPOINT_HOSTS", "").split(",") if h.strip()
]
# Agent runs in Harbor (exchange/services/harbor_runs.py): its command, the environment it
# runs trials in (the project's Docker environment for machines without an image registry;
# "docker", "daytona", "modal", "e2b"… move the trials elsewhere), how many trials at once,
# and any further arguments (e.g. "--override-cpus 2" where tasks ask for more CPUs than a
# machine has). Each run works in HARBOR_RUNS_DIR/<run id>.
HARBOR_BIN = os.environ.get(
    "HILBENCH_HARBOR_BIN", str(BASE_DIR / ".venv-harbor" / "bin" / "harbor")
)
HARBOR_ENVIRONMENT = os.environ.get(
    "HILBENCH_HARBOR_ENVIRONMENT", "harbor_agents.environments:OfflineDocker"
)
HARBOR_CONCURRENCY = int(os.environ.get("HILBENCH_HARBOR_CONCURRENCY", "3"))
HARBOR_EXTRA_ARGS = os.environ.get("HILBENCH_HARBOR_EXTRA_ARGS", "--override-cpus 2")
HARBOR_RUNS_DIR = Path(os.environ.get("HILBENCH_HARBOR_RUNS_DIR", VAR_DIR / "harbor-runs"))
HARBOR_POLL_S = float(os.environ.get("HILBENCH_HARBOR_POLL_S", "2"))
# Harbor runs confined (validators/sandbox/confine.py): its whole process tree (Harbor, the
# Docker CLI it calls) within HARBOR_MEMORY_MB (a cgroup), each process within HARBOR_CPU_S of
# CPU time and HARBOR_FILE_MB per file. A trial's containers get at most
# HARBOR_TRIAL_MAX_CPUS / HARBOR_TRIAL_MAX_MEMORY_MB, whatever the task's task.toml asks.
HARBOR_MEMORY_MB = int(os.environ.get("HILBENCH_HARBOR_MEMORY_MB", "4096"))
HARBOR_CPU_S = int(os.environ.get("HILBENCH_HARBOR_CPU_S", str(12 * 3600)))
HARBOR_FILE_MB = int(os.environ.get("HILBENCH_HARBOR_FILE_MB", "2048"))
HARBOR_TRIAL_MAX_CPUS = float(os.environ.get("HILBENCH_HARBOR_TRIAL_MAX_CPUS", "4"))
HARBOR_TRIAL_MAX_MEMORY_MB = int(os.environ.get("HILBENCH_HARBOR_TRIAL_MAX_MEMORY_MB", "8192"))
JUDGE_LLM_BASE_URL = os.environ.get("JUDGE_LLM_BASE_URL", "")
JUDGE_LLM_MODEL = os.environ.get("JUDGE_LLM_MODEL", "meta-llama/Llama-3.3-70B-Instruct")
JUDGE_LLM_TIMEOUT_S = float(os.environ.get("JUDGE_LLM_TIMEOUT_S", "30"))
# HILBENCH_JUDGE=ensemble: the LLM judge decides the questions whose embedded logit lies
# within this band of the threshold (about 1 in 6 of the calibration questions at 1.5).
JUDGE_ENSEMBLE_BAND = float(os.environ.get("HILBENCH_JUDGE_ENSEMBLE_BAND", "1.5"))
# Web processes load the judge's model when they start (hilbench_annotate/warmup.py), not
# inside the first request that needs it; Celery processes in the first job that judges.
PRELOAD = _env_bool("HILBENCH_PRELOAD", True)
# The release harness answers at most 3 questions per task instance; 0 means no cap.
ASK_HUMAN_ANSWER_CAP = int(os.environ.get("HILBENCH_ASK_HUMAN_ANSWER_CAP", "3"))


# A new run must not buy three more answers: across the runs one harness session (one API
# token; a signed-in caller's own runs) starts for a task, at most this many answered
# questions (10 passes of pass@k at the per-run cap). 0: no cap. Runs the app starts itself
# (built-in runner, imported results) are bounded by their evaluation run's passes instead.
ASK_HUMAN_SESSION_ANSWER_CAP = int(os.environ.get("HILBENCH_ASK_HUMAN_SESSION_ANSWER_CAP", "30"))
# Rate limits of harness callers, counted from the run and call rows in the database so every
# web process sees the same counts: requests (runs started + questions) per API token, and
# new runs of one task per caller (whichever of their tokens they use).
ASK_HUMAN_RATE_PER_TOKEN = _rate("HILBENCH_ASK_HUMAN_RATE_PER_TOKEN", "300/60")
ASK_HUMAN_RUN_RATE_PER_TASK = _rate("HILBENCH_ASK_HUMAN_RUN_RATE_PER_TASK", "10/60")
# Judge recall on a task's held-out questions: expand trigger phrases below this…
JUDGE_RECALL_EXPANSION_BELOW = float(
    os.environ.get("HILBENCH_JUDGE_RECALL_EXPANSION_BELOW", "0.80")
)
# …and pass at this floor.
JUDGE_RECALL_FLOOR = float(os.environ.get("HILBENCH_JUDGE_RECALL_FLOOR", "0.85"))
# The recall is measured only on enough settled held-out questions: this many targeting each
# blocker, and this many in all (questions that became trigger phrases no longer count).
JUDGE_MIN_HELD_OUT_PER_BLOCKER = int(os.environ.get("HILBENCH_JUDGE_MIN_PER_BLOCKER", "3"))
JUDGE_MIN_HELD_OUT_PER_TASK = int(os.environ.get("HILBENCH_JUDGE_MIN_PER_TASK", "10"))
# A held-out question this close to a trigger question (difflib ratio of the normalised
# texts, or word containment) is refused: it would measure the trigger, not the judge.
JUDGE_HELD_OUT_MAX_SIMILARITY = float(os.environ.get("HILBENCH_JUDGE_MAX_SIMILARITY", "0.85"))
# Gates every exported task must pass, whatever its project's pipeline says.
EXPORT_REQUIRED_GATES = ("lint_clean", "structural", "judge_recall")

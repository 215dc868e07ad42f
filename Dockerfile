# The app image: web (gunicorn), Celery worker and beat all run from it (docker-compose.yml).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=hilbench_annotate.settings \
    HILBENCH_VAR_DIR=/var/lib/hilbench

# git for the task repositories (run through hilbench_annotate/toolkit/gitrepo.run_git), sqlite3 for operators' inspection.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git sqlite3 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY hilbench_annotate ./hilbench_annotate
COPY authoring ./authoring
COPY review ./review
COPY validators ./validators
COPY judge ./judge
COPY evaluation ./evaluation
COPY exchange ./exchange
COPY templates ./templates
COPY static ./static
COPY docs ./docs
COPY manage.py ./
RUN pip install --no-cache-dir . \
    && python -m compileall -q hilbench_annotate authoring review validators judge evaluation exchange manage.py

RUN useradd --system --home /var/lib/hilbench --create-home hilbench \
    && mkdir -p /var/lib/hilbench && chown -R hilbench /var/lib/hilbench
USER hilbench
EXPOSE 8000
CMD ["gunicorn", "hilbench_annotate.wsgi", "--preload", "--bind", "0.0.0.0:8000", "--workers", "2", "--worker-class", "gthread", "--threads", "8", "--timeout", "120"]

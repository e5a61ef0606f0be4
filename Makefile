# Two commands do all the set-up:  `make demo`  and  `make test`.
# Both create .venv (Python 3.12) and install what is missing first.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

TASK  ?= stack_three
ARGS  ?=

.PHONY: setup setup-dev demo test lint clean libero

setup:
	@scripts/setup_venv.sh

setup-dev:
	@scripts/setup_venv.sh dev

## The main job: the long-horizon demo (video, log, task memory under outputs/), by default the wholly
## non-privileged stack (configs/demo.yaml); the oracle upper bound: ARGS="planner=oracle verifier=oracle executor=scripted goals=oracle"
demo: setup
	$(VENV)/bin/tandem-demo task=$(TASK) $(ARGS)

## The test suite, after the checks of `make lint`.
test: lint
	$(PY) -m pytest $(ARGS)

## The optional LIBERO-10 extra (task=libero_10/<task>): LIBERO's task files, its assets (298 MB) and the link to them.
libero: setup
	@scripts/install_libero.sh

## The import-linter contracts, ruff (with the docstring rules) and the type check (mypy against a baseline that only
## shrinks: scripts/typecheck.py).
lint: setup-dev
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(PY) scripts/typecheck.py

clean:
	rm -rf $(VENV) outputs .pytest_cache .mypy_cache

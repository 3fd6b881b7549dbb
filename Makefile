# Two commands on a fresh machine: `make trace` and `make test`. Each installs what it needs
# into .venv first (once; again when pyproject.toml changes).
VENV ?= .venv
PY := $(VENV)/bin/python
# A GPU machine gets the CUDA build of torch; a CPU-only one asks for torch==2.13.0, which the
# project's machines serve as the much smaller CPU build (on public PyPI that wheel is the CUDA
# one: README's install section gives PyTorch's CPU index).
TORCH := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo torch || echo torch==2.13.0)

.PHONY: trace test

# The first run downloads about a gigabyte (torch, triton): pip shows what it fetches.
$(VENV)/.installed: pyproject.toml
	@echo "== 1/4 creating $(VENV)"
	python3 -m venv $(VENV)
	@echo "== 2/4 upgrading pip"
	$(PY) -m pip install -q --upgrade pip
	@echo "== 3/4 installing $(TORCH) (the largest download)"
	$(PY) -m pip install --progress-bar on "$(TORCH)"
	@echo "== 4/4 installing gwatch-nb and its test tools (builds the C helper)"
	$(PY) -m pip install --progress-bar on -e ".[test]"
	touch $@
	@echo "== $(VENV) is ready"

# Trace the example attention kernel (GPU if present, else the Triton interpreter) into trace.html.
trace: $(VENV)/.installed
	$(PY) examples/cuda/trace/trace_triton_attention.py --report trace.html

# The whole test suite, a worker per core (each test file on one worker, so a file's
# fixtures are made once); browser tests need Debian's chromium (installed here when running
# as root). It ends with the time each group of tests took.
test: $(VENV)/.installed
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || \
		(apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	$(PY) -m pytest tests -rs -n auto --dist loadfile

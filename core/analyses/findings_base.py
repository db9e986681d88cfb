"""The findings table's foundations (issue 35): the findings themselves, the settings every row shares, and
what is cached — the pieces :mod:`core.analyses.findings` (F1, F1a and the table) and
:mod:`core.analyses.findings_defenses` (F2 – F5) both build their rows from.

* :data:`FINDINGS`: one :class:`Finding` per claim of the studies, with the tasks it applies to and its source;
* the row settings: :data:`TARGET_REPEATS` (the fewest repeats with which the sign-flip test can reach 95 %),
  the memorization schedule, the Dirichlet k and the training-defense values, F3's rule;
* what is cached: :func:`cached_run` (a run's cached summary, noting its measured time), :class:`Missing` (a
  computation a row still needs, as a job of :mod:`ui.jobs`), :class:`Costs` (a missing run's expected time
  from the runs measured on this machine, :func:`core.defenses.sweeps.run_cost_s`), :func:`time_text`;
* a row (:func:`finding_row`) and a comparison as its measured cell (:func:`measured_cell`).

Nothing here trains.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.defenses.sweeps import run_cost_s
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary
from core.foundations.config import ExperimentConfig
from core.measurement.stats import min_repeats_for
from core.measurement.studies import Source

#: the repeats a row asks for: the fewest with which the sign-flip test can reach 95 % (6)
TARGET_REPEATS = min_repeats_for()
#: the tasks of the studies
TASKS = ("image", "translation", "navigation")
#: memorization's schedule as the Analyses page and ``analyze`` run it (core.analyses.analysis.memorization)
MEMORIZATION_BLOCKS = 4
#: the Dirichlet k of F3 and the training-defense values of F4 / F5
DIRICHLET_K = 1.0
DP_TARGET_EPSILON = 8.0
L2_LAMBDA = 1e-3
#: F3's rule (the paper gives none): attack accuracy within 50 % ± this, utility loss at most F3_MAX_LOSS
F3_TOLERANCE = 0.05
F3_MAX_LOSS = 0.10


@dataclass(frozen=True)
class Finding:
    """One claim of the studies: its id, the sentence, the tasks it applies to, where the papers say it."""

    id: str
    claim: str
    tasks: tuple[str, ...]
    source: Source


FINDINGS: dict[str, Finding] = {f.id: f for f in (
    Finding("F1", "the RNN is more vulnerable than the FFNN at matched size and utility", TASKS,
            Source("000/001", "000 Fig. 4 (image, translation), 001 §5.2 (translation), 001 Fig. 2 / §5.1 (navigation)")),
    Finding("F1a", "the attacker's view: F1 holds under LiRA and RMIA as well as under the studies' Shokri attack", TASKS,
            Source("—", "not in the studies (their attack is Shokri's shadow attack); our question")),
    Finding("F2", "the FFNN forgets early training blocks faster than the RNN", ("image",), Source("000", "Fig. 6")),
    Finding("F3", "Dirichlet k ≤ 1 brings the attack to ≈ 50 % at a small utility cost", ("translation", "navigation"),
            Source("001", "Tables 1–2 (RNN victims only)")),
    Finding("F4", "the same ε costs the RNN more utility", TASKS, Source("000", "Fig. 8")),
    Finding("F5", "L2 regularisation helps the FFNN more", TASKS, Source("000", "Fig. 7")),
)}


def commit() -> str:
    """The checkout's commit (short hash, ``+dirty`` with uncommitted changes), or ``unknown``."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


# ---------------------------------------------------------------------------- what is cached
@dataclass(frozen=True)
class Missing:
    """One missing computation: a config and the job that computes it (``kind`` of :mod:`ui.jobs`,
    with ``params``), what it is, and its expected seconds (None: time unknown)."""

    config: ExperimentConfig
    kind: str
    params: dict[str, Any] | None
    what: str
    seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"config_hash": self.config.config_hash, "task": self.config.task, "arch": self.config.arch,
                "seed": self.config.seed, "kind": self.kind, "params": self.params, "what": self.what,
                "expected_s": self.seconds, "config": self.config.to_dict()}


class Costs:
    """Expected seconds of a missing run of (task, arch, preset) from the runs of the same kind
    measured on this machine (:func:`run_cost_s` of cached summaries: their recorded training and
    attack times); None where none was measured."""

    def __init__(self) -> None:
        self.measured: dict[tuple[str, str, str, str], list[float]] = {}
        self.lower_bounds: set[str] = set()  # configs timed from an undefended run only

    def note(self, summary: dict[str, Any] | None, recipe: str) -> None:
        if summary is None:
            return
        cost = run_cost_s(summary)
        if cost is not None:
            key = (summary["task"], summary["arch"], str(summary.get("preset")), recipe)
            self.measured.setdefault(key, []).append(cost)

    def of(self, cfg: ExperimentConfig, recipe: str) -> float | None:
        done = self.measured.get((cfg.task, cfg.arch, str(cfg.preset), recipe))
        if done:
            return float(np.mean(done))
        if recipe != "plain":  # a defended run costs at least the undefended one (DP-SGD more): a lower bound
            done = self.measured.get((cfg.task, cfg.arch, str(cfg.preset), "plain"))
            if done:
                self.lower_bounds.add(cfg.config_hash)
                return float(np.mean(done))
        return None


def leading(flags: list[bool]) -> int:
    """How many of ``flags`` are true before the first false (repeats 0, 1, … all present)."""
    n = 0
    for f in flags:
        if not f:
            break
        n += 1
    return n


def cached_run(cfg: ExperimentConfig, cache: ArtifactCache, costs: Costs, recipe: str = "plain") -> dict[str, Any] | None:
    s = cached_summary(cfg, cache)
    costs.note(s, recipe)
    return s


def missing_run(cfg: ExperimentConfig, costs: Costs, recipe: str, what: str) -> Missing:
    seconds = costs.of(cfg, recipe)
    if cfg.config_hash in costs.lower_bounds:
        what += " (timed from the undefended run: a lower bound)"
    return Missing(cfg, "experiment", None, what, seconds)


def sets_text(sets: dict[str, Any] | None) -> str:
    """``--set key=value`` for each field (lists as comma-separated values)."""
    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return ",".join(text(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)

    return "".join(f" --set {k}={text(v)}" for k, v in (sets or {}).items())


def time_text(missing: list[Missing]) -> str:
    """The expected time of ``missing`` in words (from this machine's measured runs), or "" when none is missing."""
    if not missing:
        return ""
    known = [m.seconds for m in missing if m.seconds is not None]
    lower = any("lower bound" in m.what for m in missing)
    if len(known) == len(missing):
        return (f"{'≥' if lower else '≈'} {duration_text(sum(known))} on this machine (from its measured runs"
                f"{'; defended runs timed as undefended ones: a lower bound' if lower else ''})")
    if known:
        return (f"≥ {duration_text(sum(known))} for {len(known)} of them; time unknown for the other "
                f"{len(missing) - len(known)} (nothing of their kind measured here yet)")
    return "time unknown (nothing of this kind measured on this machine yet)"


def duration_text(s: float) -> str:
    """Seconds as the findings print a time: "40 s", "12 min", "1.5 h"."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


# ---------------------------------------------------------------------------- rows
def finding_row(finding: Finding, task: str, preset: str, **fields: Any) -> dict[str, Any]:
    """One row of the table: the finding's id, claim and source, the task and preset, and ``fields``."""
    return {"finding": finding.id, "claim": finding.claim, "task": task, "preset": preset,
            "source": finding.source.to_dict(), **fields}


def measured_cell(c: Any) -> dict[str, Any]:
    """A comparison as a row's measured cell: FFNN, RNN, FFNN − RNN (mean, interval, N) and the verdict. ``c``: a
    :class:`core.measurement.stats.Comparison` (a metric that is its own family: F2, F4, F5) or a judged metric
    of :func:`core.analyses.repeats.judged_pairs` (F1, F1a: its ``role`` and, for a secondary metric, the
    Holm-adjusted ``p_holm`` and the verdict held to it, as ``compare`` prints it)."""
    d = c if isinstance(c, dict) else c.to_dict()
    out = {"ffnn": d["ffnn"], "rnn": d["rnn"], "difference": d["difference"]["diff"],
           "p_permutation": d["difference"].get("p_permutation"), "verdict": d["verdict"]}
    for key in ("role", "p_holm", "no_verdict_reason"):
        if d.get(key) is not None:
            out[key] = d[key]
    return out

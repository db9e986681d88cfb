"""The findings table's foundations, shared by :mod:`core.analyses.findings` (F1, F1a and the table) and
:mod:`core.analyses.findings_defenses` (F2 – F5): the findings (:data:`FINDINGS`), the settings every row
shares, what is cached (:func:`cached_run`, :class:`Missing`, :class:`Costs`) and the typed table
(:class:`FindingsTable` of :class:`FindingRow`, with ``to_dict`` / ``from_dict``). Nothing here trains.
"""
from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar, Union

import numpy as np

from core.defenses.sweeps import run_cost_s
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run as stored_run
from core.experiment.results import RunSummary
from core.experiment.roles import config_from_dict
from core.experiment.run_source import RunSource
from core.foundations.config import ExperimentConfig
from core.measurement.metrics import Resolution
from core.measurement.stats import Comparison, Estimate, Verdict, min_repeats_for
from core.measurement.studies import Source

#: the repeats a row asks for: the fewest with which the sign-flip test can reach 95 % (6)
TARGET_REPEATS = min_repeats_for()
#: the most repeats a row reads: past its target N, the repeats cached for every architecture count too
MAX_TABLE_REPEATS = 64
#: the tasks of the studies
TASKS = ("image", "translation", "navigation")
#: memorization's schedule as the Analyses page and ``analyze`` run it (core.analyses.analysis.memorization)
MEMORIZATION_BLOCKS = 4
#: the Dirichlet k of F3 (F4's σ grid and F5's grids: core.analyses.findings)
DIRICHLET_K = 1.0
#: F3's margin and loss bound: core.analyses.finding_specs (F3_MARGIN, F3_MAX_LOSS), tested by TOST


@dataclass(frozen=True)
class Finding:
    """One claim of the studies: its id, the sentence, the tasks it applies to, where the papers say it."""

    id: str
    claim: str
    tasks: tuple[str, ...]
    source: Source


FINDINGS: dict[str, Finding] = {f.id: f for f in (
    Finding("F1", "the RNN is more vulnerable than the FFNN at matched size and utility", TASKS,
            Source("000/001", "000 §4.3 and Fig. 4 (image, translation, navigation); 001 §1 (98 % vs 91 %) and §5.1 / "
                              "Fig. 2 (navigation)")),
    Finding("F1a", "the attacker's view: F1 holds under LiRA and RMIA as well as under the studies' Shokri attack", TASKS,
            Source("—", "not in the studies (their attack is Shokri's shadow attack); our question")),
    Finding("F2", "the FFNN forgets early training blocks faster than the RNN", ("image",),
            Source("000", "§4.3, Fig. 6")),
    Finding("F3", "Dirichlet k ≤ 1 brings the attack to ≈ 50 % at a small utility cost", ("translation", "navigation"),
            Source("001", "§5.3, Tables 1–2 (RNN victims only)")),
    Finding("F4", "the same ε costs the RNN more utility", TASKS, Source("000", "§5.2.2, Fig. 8")),
    Finding("F5", "L2 regularisation helps the FFNN more", TASKS, Source("000", "§5.1, Fig. 7")),
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
    """One missing computation: a config and the job that computes it (``kind`` of :mod:`core.jobs.manager`,
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

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Missing":
        return cls(config_from_dict(d["config"]), d["kind"], d["params"], d["what"], d["expected_s"])


class Costs:
    """Expected seconds of a missing run of (task, arch, preset) from the runs of the same kind
    measured on this machine (:func:`run_cost_s` of cached summaries: their recorded training and
    attack times); None where none was measured."""

    def __init__(self) -> None:
        self.measured: dict[tuple[str, str, str, str], list[float]] = {}
        self.lower_bounds: set[str] = set()  # configs timed from an undefended run only
        #: (task, preset) → the machines the runs read were made on (their ``machine`` block's label) → each of those
        #: runs (config hash) → the load average it finished at (None: not recorded)
        self.machines: dict[tuple[str, str], dict[str, dict[str, float | None]]] = {}
        #: (task, arch, preset, recipe) → the machines whose runs timed it; config hash → those of its estimate
        self.timed_on: dict[tuple[str, str, str, str], set[str]] = {}
        self.estimated_on: dict[str, set[str]] = {}

    def note(self, summary: RunSummary | None, recipe: str, timed: bool = True) -> None:
        """Note where ``summary`` was made and (``timed``) its measured time, as a cost of its kind here."""
        if summary is None:
            return
        label = machine_label(summary)
        load = (summary.machine or {}).get("load")
        self.machines.setdefault((summary.task, str(summary.preset)), {}).setdefault(label, {})[
            summary.config_hash] = float(load) if isinstance(load, (int, float)) else None
        cost = run_cost_s(summary) if timed else None
        if cost is not None:
            key = (summary.task, summary.arch, str(summary.preset), recipe)
            self.measured.setdefault(key, []).append(cost)
            self.timed_on.setdefault(key, set()).add(label)

    def machines_of(self, task: str, preset: str) -> tuple[str, ...] | None:
        """The machines one (task, preset)'s runs were made on, one line each with its number of runs and the
        range of the load they finished at (a timing read from them is only as good as that load)."""
        lines = []
        for label, loads in sorted(self.machines.get((task, preset), {}).items()):
            known = [v for v in loads.values() if v is not None]
            span = "" if not known else (f", load {min(known):.1f}" if min(known) == max(known) else
                                         f", load {min(known):.1f}–{max(known):.1f}")
            lines.append(f"{label} ({len(loads)} run{'s' * (len(loads) != 1)}{span})")
        return tuple(lines) or None

    def of(self, cfg: ExperimentConfig, recipe: str) -> float | None:
        key = (cfg.task, cfg.arch, str(cfg.preset), recipe)
        done = self.measured.get(key)
        if done:
            self.estimated_on[cfg.config_hash] = self.timed_on.get(key, set())
            return float(np.mean(done))
        if recipe != "plain":  # a defended run costs at least the undefended one (DP-SGD more): a lower bound
            plain = (cfg.task, cfg.arch, str(cfg.preset), "plain")
            done = self.measured.get(plain)
            if done:
                self.lower_bounds.add(cfg.config_hash)
                self.estimated_on[cfg.config_hash] = self.timed_on.get(plain, set())
                return float(np.mean(done))
        return None


def machine_label(summary: RunSummary) -> str:
    """Where a run was made, in one line: its ``machine`` block (CPU, cores, GPU, torch; the load is the run's, not
    the machine's: :meth:`Costs.machines_of` gives its range), or what a summary without the block says (its
    device only)."""
    m = summary.machine
    if not m:
        return f"{summary.device or 'unknown device'} (machine not recorded)"
    gpu = f", {m['gpu']}" if m.get("gpu") else ""
    return f"{m.get('cpu') or 'unknown CPU'} × {m.get('cores') or '?'}{gpu}, torch {m.get('torch') or '?'}"


def leading(flags: list[bool]) -> int:
    """How many of ``flags`` are true before the first false (repeats 0, 1, … all present)."""
    n = 0
    for f in flags:
        if not f:
            break
        n += 1
    return n


_T = TypeVar("_T")


def present(items: Sequence[_T | None], n: int) -> list[_T]:
    """The first ``n`` of ``items``, every one present: the repeats :func:`leading` counted."""
    out = [x for x in items[:n] if x is not None]
    assert len(out) == n, f"{n} leading repeats counted, {len(out)} present"
    return out


def cached_run(cfg: ExperimentConfig, cache: ArtifactCache | RunSource, costs: Costs, recipe: str = "plain"
               ) -> RunSummary | None:
    """The cached run of ``cfg``, typed where it is read (None: not cached), its measured time and machine noted in ``costs``: the one place the findings read a run.
    From a :class:`RunSource` an imported summary is read too, but its time is not noted: it was measured on
    another machine, so it says nothing of what a missing run costs here."""
    if isinstance(cache, RunSource):
        run, local = cache.run(cfg)
        costs.note(run, recipe, timed=local)
        return run
    run = stored_run(cfg, cache)
    costs.note(run, recipe)
    return run


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


def time_text(missing: list[Missing], costs: "Costs | None" = None) -> str:
    """The expected time of ``missing`` in words (from this machine's measured runs), or "" when none is missing;
    with ``costs``, the machines whose runs gave the estimate (their ``machine`` blocks) are named."""
    if not missing:
        return ""
    text = _time_text(missing)
    on = sorted(set().union(*(costs.estimated_on.get(m.config.config_hash, set()) for m in missing))) if costs else []
    return text + (f" — timed from runs made on: {'; '.join(on)}" if on else "")


def _time_text(missing: list[Missing]) -> str:
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


# ---------------------------------------------------------------------------- rows, typed from birth
def _finite(x: float | None) -> float | None:
    """``x``, or None where it is not a finite number (as :meth:`Estimate.to_dict` writes it)."""
    return None if x is None or not math.isfinite(x) else x


@dataclass(frozen=True)
class MeasuredCell:
    """A comparison as a row's measured cell: FFNN, RNN, FFNN − RNN (mean, interval, N) and the verdict; for a
    metric of :func:`core.analyses.repeats.judged_pairs` (F1, F1a) its ``role`` and, for a secondary metric, the
    Holm-adjusted ``p_holm`` (the verdict then held to it, as ``compare`` prints it), or why it has no verdict."""

    ffnn: Estimate
    rnn: Estimate
    difference: Estimate
    p_permutation: float | None
    verdict: Verdict | None
    role: str | None = None
    p_holm: dict[str, Any] | None = None
    no_verdict_reason: str | None = None

    @classmethod
    def of(cls, c: Comparison, role: str | None = None, p_holm: dict[str, Any] | None = None,
           no_verdict_reason: str | None = None) -> "MeasuredCell":
        """The cell of a comparison (a metric that is its own family: F2, F4, F5; or a judged metric)."""
        d = c.difference
        return cls(d.a, d.b, d.diff, _finite(d.p_permutation), c.verdict, role, p_holm, no_verdict_reason)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ffnn": self.ffnn.to_dict(), "rnn": self.rnn.to_dict(), "difference": self.difference.to_dict(),
            "p_permutation": self.p_permutation, "verdict": None if self.verdict is None else self.verdict.to_dict()}
        # written only where set: a metric judged alone has no role, only a secondary one a Holm p
        for key, value in (("role", self.role), ("p_holm", self.p_holm), ("no_verdict_reason", self.no_verdict_reason)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MeasuredCell":
        return cls(Estimate.from_dict(d["ffnn"]), Estimate.from_dict(d["rnn"]), Estimate.from_dict(d["difference"]),
                   d.get("p_permutation"), Verdict.from_dict(d["verdict"]) if d.get("verdict") else None,
                   d.get("role"), d.get("p_holm"), d.get("no_verdict_reason"))


@dataclass(frozen=True)
class RuleVerdict:
    """F3's verdict under its stated rule (:func:`core.analyses.findings_defenses.f3_verdict`)."""

    value: str
    n: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "n": self.n, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RuleVerdict":
        return cls(str(d["value"]), int(d["n"]), str(d["reason"]))


@dataclass(frozen=True)
class RuleCell:
    """F3's measured cell: the RNN's attack accuracy and utility loss under Dir_k and the rule's verdict."""

    attack_accuracy: Estimate
    utility_loss: Estimate
    verdict: RuleVerdict

    def to_dict(self) -> dict[str, Any]:
        return {"attack_accuracy": self.attack_accuracy.to_dict(), "utility_loss": self.utility_loss.to_dict(),
                "verdict": self.verdict.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RuleCell":
        return cls(Estimate.from_dict(d["attack_accuracy"]), Estimate.from_dict(d["utility_loss"]),
                   RuleVerdict.from_dict(d["verdict"]))


#: a row's measured cell: one comparison (F1, F2, F4, F5), one per attack (F1a: metric → cell), or F3's rule
Measured = Union[MeasuredCell, RuleCell, Mapping[str, MeasuredCell]]


def _measured_from_dict(finding: str, d: Mapping[str, Any] | None) -> Measured | None:
    if d is None:
        return None
    if finding == "F3":
        return RuleCell.from_dict(d)
    if finding == "F1a":
        return {name: MeasuredCell.from_dict(c) for name, c in d.items()}
    return MeasuredCell.from_dict(d)


def _measured_to_dict(m: Measured) -> dict[str, Any]:
    if isinstance(m, (MeasuredCell, RuleCell)):
        return m.to_dict()
    return {name: c.to_dict() for name, c in m.items()}


@dataclass(frozen=True)
class UtilityGap:
    """F1 / F1a's validation-utility gap FFNN − RNN with its interval and whether the two count as matched."""

    ffnn: float
    rnn: float
    gap: Estimate
    relative: float
    matched: bool
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"ffnn": self.ffnn, "rnn": self.rnn, "gap": self.gap.to_dict(), "relative": self.relative,
                "matched": self.matched, "rule": self.rule}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "UtilityGap":
        return cls(d["ffnn"], d["rnn"], Estimate.from_dict(d["gap"]), d["relative"], bool(d["matched"]), d["rule"])


@dataclass(frozen=True)
class PaperClaim:
    """What the paper says for a row: the text and citation; navigation's F1 the study's attack accuracies
    (``ffnn``, ``rnn``); F3 the study's k = 1 row (``attack_accuracy``, ``utility_loss``)."""

    cite: str
    text: str | None = None
    ffnn: float | None = None
    rnn: float | None = None
    attack_accuracy: float | None = None
    utility_loss: float | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.text is None or self.attack_accuracy is not None:
            # F3's block, written cite first and then the study's k = 1 row
            out: dict[str, Any] = {"cite": self.cite}
            if self.text is not None:
                out.update(text=self.text, attack_accuracy=self.attack_accuracy, utility_loss=self.utility_loss)
            return out
        out = {"text": self.text, "cite": self.cite}
        if self.ffnn is not None or self.rnn is not None:
            out.update(ffnn=self.ffnn, rnn=self.rnn)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PaperClaim":
        return cls(d["cite"], d.get("text"), d.get("ffnn"), d.get("rnn"), d.get("attack_accuracy"),
                   d.get("utility_loss"))


@dataclass(frozen=True)
class DecideBlock:
    """The repeats that decide a row against one difference (:func:`core.analyses.findings.repeats_to_decide`):
    how many, how many more than measured, their expected seconds; ``source`` for the study's difference."""

    difference: float
    repeats: int | None
    more: int | None
    expected_s: float | None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"difference": self.difference, "repeats": self.repeats, "more": self.more,
                               "expected_s": self.expected_s}
        if self.source is not None:
            out["source"] = self.source
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DecideBlock":
        return cls(d["difference"], d["repeats"], d["more"], d["expected_s"], d.get("source"))


@dataclass(frozen=True)
class DecideEntry:
    """One measured metric's repeats-to-decide: against the study's difference (``study``, None where it gives
    none: ``study_note`` says so) and against the difference measured here (``at_measured``)."""

    metric: str
    n: int
    sd: float | None
    per_repeat_s: float | None
    study: DecideBlock | None
    study_note: str
    at_measured: DecideBlock
    formula: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "n": self.n, "sd": self.sd, "per_repeat_s": self.per_repeat_s,
                "study": None if self.study is None else self.study.to_dict(), "study_note": self.study_note,
                "at_measured": self.at_measured.to_dict(), "formula": self.formula}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DecideEntry":
        return cls(d["metric"], d["n"], d["sd"], d["per_repeat_s"],
                   None if d["study"] is None else DecideBlock.from_dict(d["study"]), d["study_note"],
                   DecideBlock.from_dict(d["at_measured"]), d["formula"])


#: the JSON's key order of a row, after finding, claim, task, preset, source, status and before decide: F1 / F1a
#: (the architectures compared), F2 – F5 (forgetting and the defenses), and a task without the preset asked for
_ARCH_KEYS = ("metric", "measured", "primary", "note", "resolution", "utility_gap", "utility_metric", "config_hashes",
              "to_decide_note", "paper", "n", "target_repeats", "missing", "missing_time", "command")
_DEFENSE_KEYS = ("measured", "paper", "metric", "n", "target_repeats", "rule", "missing", "missing_time", "command")
_NO_PRESET_KEYS = ("n", "target_repeats", "missing", "missing_time", "command", "note")
#: the findings that compare the architectures on the same runs (:func:`core.analyses.findings._arch_rows`)
ARCH_FINDINGS = ("F1", "F1a")


@dataclass(frozen=True)
class FindingRow:
    """One row of the findings table: a finding on one task at one preset — what the paper says, what this
    machine measured (``measured``; None: not run), the runs still missing for N = ``target_repeats``
    (``missing``: jobs a page can queue) and the repeats that decide it (``decide``). ``repeat_items``: the
    computations of one more repeat (config, recipe), for timing; in memory only, not written."""

    finding: str
    claim: str
    task: str
    preset: str
    source: Source
    status: str
    n: int
    target_repeats: int
    missing: tuple[Missing, ...]
    missing_time: str
    command: str
    metric: str | None = None
    measured: Measured | None = None
    primary: str | None = None
    note: str | None = None
    #: the comparison's evaluation set (repeat 0's FFNN run): what one record is worth
    resolution: Resolution | None = None
    utility_gap: UtilityGap | None = None
    utility_metric: str | None = None
    config_hashes: dict[str, tuple[str, ...]] | None = None
    to_decide_note: str | None = None
    paper: PaperClaim | None = None
    rule: str | None = None
    decide: tuple[DecideEntry, ...] | None = None
    #: the row's declaration (core.analyses.finding_specs.RowSpec as JSON) and the contract's fields: the sign the
    #: claim predicts, the Holm family, the N the test can decide at, how the target was sized, the utility match
    #: (train and validation; None where the row has none), the verdict word and why, the machines the runs were
    #: made on, the design note (a target past a read N is a new design), what else was measured beside the verdict
    spec: dict[str, Any] | None = None
    expected_sign: int | None = None
    family: tuple[str, ...] | None = None
    decidable_at: int | None = None
    target_sized_by: str | None = None
    matched: dict[str, Any] | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    machine: tuple[str, ...] | None = None
    design_note: str | None = None
    beside: dict[str, Any] | None = None
    repeat_items: tuple[tuple[ExperimentConfig, str], ...] = field(default=(), repr=False, compare=False)

    def _layout(self) -> tuple[str, ...]:
        if self.status == "no preset":
            return _NO_PRESET_KEYS
        return _ARCH_KEYS if self.finding in ARCH_FINDINGS else _DEFENSE_KEYS

    def _written(self, name: str, value: Any) -> bool:
        """Whether ``name`` is written: a set value always; None only where the row kind always carries the key
        (a measured F1 / F1a row's comparison context and F1a's primary metric, every row's ``decide``)."""
        if value is not None:
            return True
        if self.status != "measured" or self.finding not in ARCH_FINDINGS:
            return False
        return name in ("resolution", "utility_gap", "utility_metric", "config_hashes") or \
            (name == "primary" and self.finding == "F1a")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"finding": self.finding, "claim": self.claim, "task": self.task,
                               "preset": self.preset, "source": self.source.to_dict(), "status": self.status}
        for name in self._layout():
            value = getattr(self, name)
            if not self._written(name, value):
                continue
            if name == "measured":
                value = _measured_to_dict(value)
            elif name == "missing":
                value = [m.to_dict() for m in value]
            elif name == "config_hashes":
                value = {a: list(h) for a, h in value.items()}
            elif hasattr(value, "to_dict"):
                value = value.to_dict()
            out[name] = value
        out["decide"] = None if self.decide is None else [e.to_dict() for e in self.decide]
        # the findings JSON contract: every row carries these keys (null where they do not apply)
        out.update(metric=self.metric, expected_sign=self.expected_sign,
                   family=None if self.family is None else list(self.family), decidable_at=self.decidable_at,
                   target_repeats=self.target_repeats, target_sized_by=self.target_sized_by, n=self.n,
                   matched=self.matched, verdict=self.verdict, verdict_reason=self.verdict_reason,
                   machine=None if self.machine is None else list(self.machine), design_note=self.design_note,
                   spec=self.spec, beside=self.beside)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FindingRow":
        """A row read back from its JSON (``repeat_items`` are not written: empty)."""
        src = d["source"]
        gap, paper, hashes, res = d.get("utility_gap"), d.get("paper"), d.get("config_hashes"), d.get("resolution")
        return cls(
            finding=d["finding"], claim=d["claim"], task=d["task"], preset=d["preset"],
            source=Source(src["paper"], src["where"], src.get("note", "")), status=d["status"], n=d["n"],
            target_repeats=d["target_repeats"], missing=tuple(Missing.from_dict(m) for m in d["missing"]),
            missing_time=d["missing_time"], command=d["command"], metric=d.get("metric"),
            measured=_measured_from_dict(d["finding"], d.get("measured")), primary=d.get("primary"),
            note=d.get("note"), resolution=None if res is None else Resolution.from_dict(res, "finding.resolution"),
            utility_gap=None if gap is None else UtilityGap.from_dict(gap), utility_metric=d.get("utility_metric"),
            config_hashes=None if hashes is None else {a: tuple(h) for a, h in hashes.items()},
            to_decide_note=d.get("to_decide_note"), paper=None if paper is None else PaperClaim.from_dict(paper),
            rule=d.get("rule"),
            decide=None if d.get("decide") is None else tuple(DecideEntry.from_dict(e) for e in d["decide"]),
            spec=d.get("spec"), expected_sign=d.get("expected_sign"),
            family=None if d.get("family") is None else tuple(d["family"]), decidable_at=d.get("decidable_at"),
            target_sized_by=d.get("target_sized_by"), matched=d.get("matched"), verdict=d.get("verdict"),
            verdict_reason=d.get("verdict_reason"),
            machine=None if d.get("machine") is None else tuple(d["machine"]), design_note=d.get("design_note"),
            beside=d.get("beside"))


def finding_row(finding: Finding, task: str, preset: str, **fields: Any) -> FindingRow:
    """One row of the table: the finding's id, claim and source, the task and preset, and ``fields``."""
    return FindingRow(finding=finding.id, claim=finding.claim, task=task, preset=preset, source=finding.source,
                      **fields)


@dataclass(frozen=True)
class FindingsTable:
    """The findings table (:func:`core.analyses.findings.findings_table`): the presets and tasks asked for, the
    ``--set`` fields, the target repeats, the commit it was read at, and its rows."""

    preset: str
    presets: tuple[str, ...]
    sets: dict[str, Any]
    tasks: tuple[str, ...]
    target_repeats: int
    commit: str
    rows: tuple[FindingRow, ...]
    #: with imported summaries (:mod:`core.experiment.run_source`): the batches read and, per F1 / F1a row, the
    #: origins of its runs and whether they mix machines; None (not written) when nothing was imported
    sources: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"preset": self.preset, "presets": list(self.presets), "sets": dict(self.sets),
               "tasks": list(self.tasks), "target_repeats": self.target_repeats, "commit": self.commit,
               "rows": [r.to_dict() for r in self.rows]}
        if self.sources is not None:
            out["sources"] = self.sources
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FindingsTable":
        return cls(d["preset"], tuple(d["presets"]), dict(d["sets"]), tuple(d["tasks"]), d["target_repeats"],
                   d["commit"], tuple(FindingRow.from_dict(r) for r in d["rows"]), d.get("sources"))

"""The studies' findings beside what this machine measured (issue 35): one row per finding × task.

Every row reads the cache only (nothing trains here): the cached repeats of a preset
(:func:`core.analyses.repeats.repeat_config`; repeat r of both architectures shares its seed, hence
its split), the memorization analysis' cached result of each repeat, the cached defended points of
the Dirichlet mechanism, and the cached training-defense runs (DP-SGD at a target ε, L2 at a λ).
A row is *measured* when at least one repeat of what it needs is cached: then it carries N, the 95 %
interval and the verdict (:func:`core.measurement.stats.compare`: the t interval and the exact
sign-flip test, which cannot reach 95 % below N = 6); otherwise it says *not run*. F1 and F1a take each
metric's verdict from the judgement ``python -m core compare`` builds on the same repeats
(:func:`core.analyses.repeats.judged_pairs`: the declared primary metric, the secondary metrics
Holm-adjusted over their family), so a metric's verdict here always equals compare's and the Home page's. Either way it lists
the runs that are missing for N = :data:`TARGET_REPEATS` (``missing``: each an ordinary config and a
job kind of :mod:`ui.jobs`, so a page can queue exactly those) and their expected time from the runs
measured on this machine (:func:`core.defenses.sweeps.run_cost_s`), or "time unknown".

The findings (``FINDINGS``; the papers' own numbers and sources from :mod:`core.measurement.studies`):

* F1 the RNN is more vulnerable than the FFNN (paper 000 Fig. 4 image and translation, 001 §5.1 navigation):
  the primary (Shokri shadow) attack's accuracy, FFNN − RNN < 0, with the validation-utility gap;
* F1a the attacker's view: the same under LiRA and RMIA (AUC);
* F2 the FFNN forgets early training blocks faster (000 Fig. 6): attack accuracy on the first block
  learned, FFNN − RNN < 0;
* F3 Dirichlet k = 1 brings the attack to ≈ 50 % at a small utility cost (001 Tables 1–2, RNN victims):
  the rule is stated in the row (the paper gives no tolerance; ours: 50 % ± 5 points, loss ≤ 10 %);
* F4 the same ε costs the RNN more utility (000 Fig. 8): DP-SGD at target ε = 8, utility loss
  FFNN − RNN < 0;
* F5 L2 helps the FFNN more (000 Fig. 7): the attack accuracy's drop under λ = 1e-3, FFNN − RNN > 0.
"""
from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import math

import numpy as np
from scipy import stats as sps

from core.analyses.repeats import comparison_configs, judged_pairs, repeat_config, summary_resolution
from core.defenses.defender import DefenseSpec
from core.defenses.sweeps import baseline_config, point_config, run_cost_s
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary
from core.experiment.results import DefendedPoint, RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.measurement.metrics import utility_loss
from core.measurement.stats import CONFIDENCE, Estimate, compare, is_zero_width, mean_interval, min_repeats_for
from core.measurement.studies import ARCH_FINDINGS, DIRICHLET, RL_ATTACK_ACCURACY, Source
from core.tasks import get_task

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
#: the validation utilities of FFNN and RNN count as matched within this relative gap
MATCHED_RELATIVE_GAP = 0.05
#: the most repeats :func:`repeats_to_decide` searches (beyond: "more than this")
MAX_REPEATS_SEARCHED = 100_000

#: (finding, task) → the difference FFNN − RNN the study reports in the row's metric, and where: only where the
#: study prints numbers (001 §5.1's navigation attack accuracies); the other findings are figures without numbers
STUDY_DIFFERENCES: dict[tuple[str, str], tuple[float, str]] = {
    ("F1", "navigation"): (RL_ATTACK_ACCURACY[("navigation", "ffnn")] - RL_ATTACK_ACCURACY[("navigation", "rnn")],
                           f"001 §5.1: attack accuracy {RL_ATTACK_ACCURACY[('navigation', 'ffnn')]:.0%} (MLP) − "
                           f"{RL_ATTACK_ACCURACY[('navigation', 'rnn')]:.0%} (LSTM)"),
}

#: task → what deciding F1 / F1a on it needs beyond repeats, where this was measured (command, commit), and what
#: no preset does yet. Translation (issue 35): models that generalise (validation BLEU ≥ 20 for both) with attacks
#: below saturation (AUC ≤ 0.95); figures from docs/results.md "GPU check" (docs/device_runs/2026-11-26-b, -c).
DECIDING_NEEDS: dict[str, str] = {
    "translation": (
        "To decide F1 on translation both models must translate (validation BLEU ≥ 20 on Multi30K) with attacks "
        "below saturation (AUC ≤ 0.95), over N ≥ 6 repeats. No CPU preset reaches it yet: multi30k_cpu and "
        "pairs_cpu reach validation BLEU 2–8 on 2 CPU cores (the models memorise; every attack AUC ≥ 0.99). The "
        "paper preset needs a GPU: on one H100 (en→de, one seed, `CPU_ARCHS=rnn bench/device_session.sh .m30k "
        "$OUT` at commit f0f2da2; the LSTM again at commit 67b6db4) victim + 5 shadows trained in 82 s "
        "(Transformer) / 77 s (LSTM) and the attacks took 43 s / 35 s, i.e. about 4 min of GPU time per repeat "
        "of both, about 24 min for 6 repeats (an estimate from that one repeat) — but it did not reach the bar "
        "either: validation BLEU 12.9 (Transformer) / 19.6 (LSTM), LiRA AUC 0.962 / 0.944, RMIA 0.985 / 0.963. "
        "Deciding F1 on translation needs a larger or longer-trained run on a GPU: the multi30k_gpu preset "
        "(12,000 pairs, a warm-up schedule, label smoothing) is prepared for it; its BLEU, attacks and time are "
        "not measured yet."),
}


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


class _Costs:
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


def _leading(flags: list[bool]) -> int:
    """How many of ``flags`` are true before the first false (repeats 0, 1, … all present)."""
    n = 0
    for f in flags:
        if not f:
            break
        n += 1
    return n


def _run(cfg: ExperimentConfig, cache: ArtifactCache, costs: _Costs, recipe: str = "plain") -> dict[str, Any] | None:
    s = cached_summary(cfg, cache)
    costs.note(s, recipe)
    return s


def _missing_run(cfg: ExperimentConfig, costs: _Costs, recipe: str, what: str) -> Missing:
    seconds = costs.of(cfg, recipe)
    if cfg.config_hash in costs.lower_bounds:
        what += " (timed from the undefended run: a lower bound)"
    return Missing(cfg, "experiment", None, what, seconds)


def _sets_text(sets: dict[str, Any] | None) -> str:
    """``--set key=value`` for each field (lists as comma-separated values)."""
    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return ",".join(text(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)

    return "".join(f" --set {k}={text(v)}" for k, v in (sets or {}).items())


def _time_text(missing: list[Missing]) -> str:
    if not missing:
        return ""
    known = [m.seconds for m in missing if m.seconds is not None]
    lower = any("lower bound" in m.what for m in missing)
    if len(known) == len(missing):
        return (f"{'≥' if lower else '≈'} {_duration(sum(known))} on this machine (from its measured runs"
                f"{'; defended runs timed as undefended ones: a lower bound' if lower else ''})")
    if known:
        return (f"≥ {_duration(sum(known))} for {len(known)} of them; time unknown for the other "
                f"{len(missing) - len(known)} (nothing of their kind measured here yet)")
    return "time unknown (nothing of this kind measured on this machine yet)"


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


# ---------------------------------------------------------------------------- repeats to decide
def repeats_to_decide(sd: float, difference: float, floor: int = TARGET_REPEATS,
                      confidence: float = CONFIDENCE, cap: int = MAX_REPEATS_SEARCHED) -> int | None:
    """The fewest repeats N ≥ ``floor`` (the sign-flip test's 6) with t_{N−1, 1−α/2} · sd / √N < |difference|:
    the 95 % interval's half-width below the difference, so that an interval around a mean of that size
    excludes 0. ``sd``: the measured standard deviation of the paired differences; None beyond ``cap``
    (or for a zero difference)."""
    target = abs(float(difference))
    if not math.isfinite(target) or target == 0.0 or not math.isfinite(sd):
        return None
    n = max(2, int(floor))
    if sd <= 0.0:
        return n

    def half(k: int) -> float:
        return float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * sd / math.sqrt(k)

    if half(n) < target:
        return n
    if half(cap) >= target:
        return None
    lo, hi = n, cap  # half(lo) ≥ target > half(hi); half falls with k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if half(mid) >= target else (lo, mid)
    return hi


def _decide_entry(metric: str, sd: float | None, n: int, measured_mean: float, study: tuple[float, str] | None,
                  per_repeat_s: float | None, study_missing: str = "the study gives no number") -> dict[str, Any]:
    """One metric's repeats-to-decide: against the study's difference (when it gives one) and, for reference,
    against the difference measured here; with the expected time of the repeats still to run."""
    def block(diff: float) -> dict[str, Any]:
        need = repeats_to_decide(sd, diff) if sd is not None else None
        more = None if need is None else max(0, need - n)
        return {"difference": diff, "repeats": need, "more": more,
                "expected_s": None if more is None or per_repeat_s is None else more * per_repeat_s}

    return {"metric": metric, "n": n, "sd": sd, "per_repeat_s": per_repeat_s,
            "study": None if study is None else {**block(study[0]), "source": study[1]},
            "study_note": "" if study is not None else study_missing,
            "at_measured": block(measured_mean),
            "formula": (f"the fewest N ≥ {TARGET_REPEATS} with t(N−1, 0.975) × sd / √N < |difference| "
                        f"(sd: the measured spread of the N = {n} paired differences)")}


def _per_repeat_s(items: list[tuple[ExperimentConfig, str]], costs: _Costs) -> float | None:
    """The expected seconds of one more repeat of a row: the sum over its computations (None if one is unknown)."""
    total = 0.0
    for cfg, recipe in items:
        s = costs.of(cfg, recipe) if recipe != "analysis" else None
        if s is None:
            return None
        total += s
    return total


def _decide(row: dict[str, Any], costs: _Costs) -> list[dict[str, Any]] | None:
    """The repeats each measured metric of ``row`` needs to decide (N ≥ 2 measured), or None."""
    if row.get("status") != "measured" or row.get("n", 0) < 2:
        return None
    per = _per_repeat_s(row.get("_repeat_items", []), costs)
    study = STUDY_DIFFERENCES.get((row["finding"], row["task"]))
    m = row["measured"]
    if row["finding"] == "F3":
        acc = m["attack_accuracy"]
        margin = abs(abs(acc["mean"] - 0.5) - F3_TOLERANCE)
        return [_decide_entry("attack_accuracy (distance to the rule's 50 % ± 5 points)", acc.get("sd"), row["n"],
                              margin, None, per,
                              "the study gives no tolerance (ours: 50 % ± 5 points; the margin is the measured "
                              "mean's distance to its edge)")]
    comps = m if row["finding"] == "F1a" else {row["metric"]: m}
    return [_decide_entry(name, c["difference"].get("sd"), row["n"], c["difference"]["mean"], study, per)
            for name, c in comps.items()]


# ---------------------------------------------------------------------------- rows
def _row(finding: Finding, task: str, preset: str, **fields: Any) -> dict[str, Any]:
    return {"finding": finding.id, "claim": finding.claim, "task": task, "preset": preset,
            "source": finding.source.to_dict(), **fields}


def _est(e: Any) -> dict[str, Any] | None:
    return None if e is None else (e if isinstance(e, dict) else e.to_dict())


def _utility_gap(comps: dict[str, Any]) -> dict[str, Any] | None:
    """The validation-utility gap FFNN − RNN with its interval and whether the two count as matched
    (|gap| ≤ :data:`MATCHED_RELATIVE_GAP` of the larger mean, and its interval too where it has one)."""
    c = comps.get("utility_val")
    if c is None:
        return None
    d = c.difference
    f, r = d.a.mean, d.b.mean
    scale = max(abs(f), abs(r), 1e-12)
    ends = [x for x in (d.diff.ci_low, d.diff.ci_high) if x is not None] or [d.diff.mean]
    matched = max(abs(x) for x in ends) <= MATCHED_RELATIVE_GAP * scale
    return {"ffnn": f, "rnn": r, "gap": d.diff.to_dict(), "relative": abs(d.diff.mean) / scale, "matched": matched,
            "rule": f"matched when the gap's interval lies within ±{MATCHED_RELATIVE_GAP:.0%} of the larger utility"}


def _paired_pairs(configs: dict[str, ExperimentConfig], cache: ArtifactCache, costs: _Costs, limit: int
                  ) -> tuple[dict[str, list[dict[str, Any]]], list[Missing]]:
    """The leading repeats cached for both architectures (up to ``limit``) and the runs missing for ``limit``."""
    per: dict[str, list[dict[str, Any] | None]] = {
        a: [_run(repeat_config(c, r), cache, costs) for r in range(limit)] for a, c in configs.items()}
    n = _leading([all(per[a][r] is not None for a in per) for r in range(limit)])
    missing = [_missing_run(repeat_config(c, r), costs, "plain", f"run {a} repeat {r}")
               for r in range(limit) for a, c in configs.items() if per[a][r] is None]
    return {a: [s for s in v[:n]] for a, v in per.items()}, missing


def _arch_rows(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: _Costs,
               target: int) -> list[dict[str, Any]]:
    configs = comparison_configs(task, preset, 1, sets)
    pairs, missing = _paired_pairs(configs, cache, costs, target)
    n = len(pairs["ffnn"])
    command = f"python -m core compare --task {task} --preset {preset}{_sets_text(sets)} --repeats {max(n, target)}"
    text, src = ARCH_FINDINGS.get(task, ("", None))
    paper = {"text": text, "cite": src.cite() if src else ""}
    if task == "navigation":
        paper["ffnn"], paper["rnn"] = RL_ATTACK_ACCURACY[("navigation", "ffnn")], RL_ATTACK_ACCURACY[("navigation", "rnn")]
    common = dict(paper=paper, n=n, target_repeats=target, missing=[m.to_dict() for m in missing],
                  missing_time=_time_text(missing), command=command, _missing=missing,
                  _repeat_items=[(c, "plain") for c in configs.values()])
    f1_note = {"to_decide_note": DECIDING_NEEDS[task]} if task in DECIDING_NEEDS else {}
    if n == 0:
        return [_row(FINDINGS["F1"], task, preset, status="not run", metric="attack_accuracy", **f1_note, **common),
                _row(FINDINGS["F1a"], task, preset, status="not run", metric="lira_auc, rmia_auc", **common)]
    # the verdicts of the compare command's own judgement (core.analyses.repeats.judged_pairs): the declared
    # primary metric, the secondary metrics Holm-adjusted over their family — never a metric judged alone
    comps, judged = judged_pairs(pairs["ffnn"], pairs["rnn"])
    primary = next((m for m, d in judged.items() if d["role"] == "primary"), None)
    resolution = summary_resolution(pairs["ffnn"][0])
    gap = _utility_gap(comps)
    utility_metric = RunSummary.coerce(pairs["ffnn"][0]).utility.metric
    hashes = {a: [s["config_hash"] for s in pairs[a]] for a in pairs}
    out = [_row(FINDINGS["F1"], task, preset, status="measured", metric="attack_accuracy",
                measured=_measured(judged["attack_accuracy"]), resolution=resolution, utility_gap=gap,
                utility_metric=utility_metric, config_hashes=hashes, **f1_note, **common)]
    views = {m: _measured(judged[m]) for m in ("lira_auc", "rmia_auc") if m in judged}
    if views:
        out.append(_row(FINDINGS["F1a"], task, preset, status="measured", metric=", ".join(views), measured=views,
                        primary=primary if primary in views else None,
                        resolution=resolution, utility_gap=gap, utility_metric=utility_metric, config_hashes=hashes,
                        **common))
    else:
        out.append(_row(FINDINGS["F1a"], task, preset, status="not run", metric="lira_auc, rmia_auc",
                        note="the cached runs have no LiRA/RMIA numbers (they need n_shadows ≥ 2)", **common))
    return out


def _measured(c: Any) -> dict[str, Any]:
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


def _memorization_key(cfg: ExperimentConfig, cache: ArtifactCache) -> str:
    """The cache key :func:`core.analyses.analysis.memorization` stores its result under (its default schedule)."""
    return cache.key("analysis", cfg.training_hash, "memorization", cfg.config_hash, MEMORIZATION_BLOCKS,
                     max(1, cfg.epochs // MEMORIZATION_BLOCKS))


def _memorization_row(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: _Costs,
                      target: int) -> dict[str, Any]:
    configs = comparison_configs(task, preset, 1, sets)
    per: dict[str, list[dict[str, Any] | None]] = {}
    missing: list[Missing] = []
    for a, c in configs.items():
        per[a] = []
        for r in range(target):
            rc = repeat_config(c, r)
            stored = cache.get_json(_memorization_key(rc, cache))
            ok = isinstance(stored, dict) and bool(stored.get("blocks"))
            per[a].append(stored if ok else None)
            if not ok:
                missing.append(Missing(rc, "analysis", {"name": "memorization"}, f"memorization {a} repeat {r}",
                                       None))
    n = _leading([all(per[a][r] is not None for a in per) for r in range(target)])
    common = dict(paper={"text": "trained on blocks in sequence, the FFNN's attack on the first block falls toward "
                                 "50 % while the RNN's stays high", "cite": FINDINGS["F2"].source.cite()},
                  metric="attack accuracy on the first block learned", n=n, target_repeats=target,
                  missing=[m.to_dict() for m in missing], missing_time=_time_text(missing),
                  command=f"python -m core analyze --task {task} --preset {preset}{_sets_text(sets)} --analysis memorization "
                          f"--repeats {max(n, target)} --out findings_memorization", _missing=missing,
                  _repeat_items=[(c, "plain") for c in configs.values()] + [(c, "analysis") for c in configs.values()])
    if n == 0:
        return _row(FINDINGS["F2"], task, preset, status="not run", **common)
    f = [per["ffnn"][r]["blocks"][0]["attack_accuracy"] for r in range(n)]
    r_ = [per["rnn"][r]["blocks"][0]["attack_accuracy"] for r in range(n)]
    comp = compare("memorization_first_block", f, r_, -1, bounds=(0.0, 1.0))
    return _row(FINDINGS["F2"], task, preset, status="measured", measured=_measured(comp), **common)


def _defended_point(cfg: ExperimentConfig, spec: DefenseSpec, cache: ArtifactCache) -> dict[str, Any] | None:
    """The Dirichlet point with utility cached for ``cfg`` (the adaptive job's ``both``, else ``naive``), or None."""
    for attacker in ("both", "naive"):
        stored = cache.get_json(cache.key("defended", cfg.config_hash, spec.key, attacker),
                                validate=DefendedPoint.from_dict)
        if isinstance(stored, dict) and stored.get("value") == spec.value and stored.get("attack") \
                and stored.get("utility_loss") is not None:
            return stored
    return None


def f3_verdict(acc: Estimate, loss: Estimate, n: int) -> tuple[str, str]:
    """F3's (value, reason) from the RNN's attack accuracy and utility loss under Dir_k over ``n`` repeats: the
    rule in :func:`_dirichlet_row`'s ``rule``; never a verdict from a zero-width interval (every repeat equal)."""
    value, reason = "inconclusive", f"N = {n}"
    if n < TARGET_REPEATS:
        reason = f"N = {n} < {TARGET_REPEATS}: run {TARGET_REPEATS} repeats"
    elif acc.ci_low is None or loss.ci_low is None:
        reason = "no interval"
    elif is_zero_width(acc.ci_low, acc.ci_high, acc.mean) or is_zero_width(loss.ci_low, loss.ci_high, loss.mean):
        which = "attack accuracy" if is_zero_width(acc.ci_low, acc.ci_high, acc.mean) else "utility loss"
        reason = (f"every one of the N = {n} repeats gave the same {which}: a zero-width interval is the metric's "
                  "resolution, not certainty")
    elif acc.ci_low >= 0.5 - F3_TOLERANCE and acc.ci_high <= 0.5 + F3_TOLERANCE and loss.ci_high <= F3_MAX_LOSS:
        value, reason = "holds", "accuracy interval within 50 % ± 5 points and the loss's upper end ≤ 10 %"
    elif acc.ci_low > 0.5 + F3_TOLERANCE or loss.ci_low > F3_MAX_LOSS:
        value, reason = "reversed", "accuracy interval above 55 % or the loss's lower end above 10 %"
    else:
        reason = "the intervals straddle the rule's bounds"
    return value, reason


def _dirichlet_row(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: _Costs,
                   target: int) -> dict[str, Any]:
    cfg = get_task(task).make_config("rnn", preset, dict(sets or {}))
    spec = DefenseSpec("dirichlet", DIRICHLET_K)
    points, missing = [], []
    for r in range(target):
        rc = repeat_config(cfg, r)
        run = _run(rc, cache, costs)
        point = _defended_point(rc, spec, cache) if run is not None else None
        points.append(point)
        if run is None:
            missing.append(_missing_run(rc, costs, "plain", f"run rnn repeat {r}"))
        if point is None:
            missing.append(Missing(rc, "adaptive", {"spec": dataclasses.asdict(spec)},
                                   f"Dirichlet k = {DIRICHLET_K:g} point (naive + adaptive attacker, utility) repeat {r}",
                                   None))
    n = _leading([p is not None for p in points])
    study = DIRICHLET.get((task, "rnn"))
    paper = {"cite": study["source"].cite() if study else ""}
    if study:
        acc, acc_sd, util, util_sd = study["rows"][DIRICHLET_K]
        base = study["rows"][None][2]
        paper.update(text=f"k = 1: attack {acc:.2f} % ± {acc_sd:.2f}, {study['metric']} {util:g} ± {util_sd:g} "
                          f"(undefended {base:g}: loss {1 - util / base:.1%})",
                     attack_accuracy=acc / 100, utility_loss=1 - util / base)
    rule = (f"holds: N ≥ {TARGET_REPEATS} and the attack accuracy's 95 % interval within 50 % ± {F3_TOLERANCE:.0%} "
            f"points and the utility loss's upper end ≤ {F3_MAX_LOSS:.0%}; reversed: N ≥ {TARGET_REPEATS} and the "
            f"accuracy interval wholly above 50 % + {F3_TOLERANCE:.0%} or the loss's lower end above "
            f"{F3_MAX_LOSS:.0%}; else inconclusive (the paper gives no tolerance: ours)")
    common = dict(paper=paper, metric=f"RNN attack accuracy and utility loss under Dir_k, k = {DIRICHLET_K:g}", n=n,
                  target_repeats=target, rule=rule, missing=[m.to_dict() for m in missing],
                  missing_time=_time_text(missing),
                  command=f"python -m core defend --task {task} --arch rnn --preset {preset}{_sets_text(sets)} --mechanism dirichlet "
                          f"--values {DIRICHLET_K:g} --attacker both --repeats {max(n, target)}", _missing=missing,
                  _repeat_items=[(cfg, "plain"), (cfg, "analysis")])
    if n == 0:
        return _row(FINDINGS["F3"], task, preset, status="not run", **common)
    acc = mean_interval([float(p["attack"]["accuracy"]) for p in points[:n]], bounds=(0.0, 1.0))
    loss = mean_interval([float(p["utility_loss"]) for p in points[:n]], bounds=(None, 1.0))
    value, reason = f3_verdict(acc, loss, n)
    measured = {"attack_accuracy": acc.to_dict(), "utility_loss": loss.to_dict(),
                "verdict": {"value": value, "n": n, "reason": reason}}
    return _row(FINDINGS["F3"], task, preset, status="measured", measured=measured, **common)


def _training_defense_row(finding: Finding, task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache,
                          costs: _Costs, target: int,
                          mechanism: str, value: float, target_epsilon: bool, metric: str,
                          read: Callable[[dict[str, Any], dict[str, Any]], float | None], expected: int,
                          paper: dict[str, Any]) -> dict[str, Any]:
    """A training-time defense compared between the architectures over repeats: per repeat r and
    architecture, the undefended run and the defended one (both cached), ``read(baseline, point)``."""
    configs = comparison_configs(task, preset, 1, sets)
    values: dict[str, list[float | None]] = {a: [] for a in configs}
    missing: list[Missing] = []
    run_sets: dict[str, Any] = {}
    items: list[tuple[ExperimentConfig, str]] = []
    for a, c in configs.items():
        point_cfg = point_config(c, mechanism, value, target_epsilon)
        base_cfg = baseline_config(c, mechanism)
        items += [(base_cfg, "plain"), (point_cfg, mechanism)]
        run_sets = {**dict(sets or {}), **{k: v for k, v in point_cfg.to_dict().items() if v != c.to_dict().get(k)}}
        for r in range(target):
            b = _run(repeat_config(base_cfg, r), cache, costs)
            p = _run(repeat_config(point_cfg, r), cache, costs, mechanism)
            if b is None:
                missing.append(_missing_run(repeat_config(base_cfg, r), costs, "plain", f"undefended {a} repeat {r}"))
            if p is None:
                missing.append(_missing_run(repeat_config(point_cfg, r), costs, mechanism,
                                            f"{mechanism} {a} repeat {r}"))
            values[a].append(read(RunSummary.coerce(b), RunSummary.coerce(p)) if b is not None and p is not None
                             else None)
    n = _leading([all(values[a][r] is not None for a in values) for r in range(target)])
    reps = max(n, target)
    command = " ; ".join(f"python -m core run --task {task} --arch {a} --preset {preset}{_sets_text(run_sets)} "
                         f"--repeats {reps} --quiet --out /dev/null" for a in configs)
    common = dict(paper=paper, metric=metric, n=n, target_repeats=target, missing=[m.to_dict() for m in missing],
                  missing_time=_time_text(missing), command=command, _missing=missing, _repeat_items=items)
    if n == 0:
        return _row(finding, task, preset, status="not run", **common)
    comp = compare(metric, [float(v) for v in values["ffnn"][:n]], [float(v) for v in values["rnn"][:n]], expected)
    return _row(finding, task, preset, status="measured", measured=_measured(comp), **common)


def _summary_utility_loss(base: RunSummary, point: RunSummary) -> float | None:
    """:func:`core.measurement.metrics.utility_loss` of ``point``'s validation utility against ``base``'s."""
    u0, u = base.utility.val, point.utility.val
    return utility_loss(None if u is None else float(u), None if u0 is None else float(u0))


def _accuracy_drop(base: RunSummary, point: RunSummary) -> float | None:
    return float(base.attack.accuracy) - float(point.attack.accuracy)


def task_presets(task: str) -> list[str]:
    """The presets of ``task``."""
    return list(get_task(task).presets)


def parse_presets(preset: str | list[str] | tuple[str, ...], tasks: tuple[str, ...]) -> list[str]:
    """The presets asked for: a name, comma-separated names or a list; ``all``: every preset of ``tasks``
    (in the tasks' order). Unknown names: ConfigError."""
    names = [p.strip() for p in (preset.split(",") if isinstance(preset, str) else preset) if p.strip()]
    known: list[str] = []
    for t in tasks:
        known += [p for p in get_task(t).presets if p not in known]  # an unknown task: ConfigError
    if names == ["all"]:
        return known
    if not names:
        raise ConfigError(f"no preset given; choose from {', '.join(sorted(known))} (or all)")
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown preset {name!r} for {', '.join(tasks)}; choose one of "
                              f"{', '.join(sorted(known))} (or all)")
    return list(dict.fromkeys(names))


def findings_table(tasks: tuple[str, ...] | list[str] | None = None, preset: str | list[str] = "quick",
                   cache: ArtifactCache | None = None, target: int = TARGET_REPEATS,
                   sets: dict[str, Any] | None = None) -> dict[str, Any]:
    """The findings table from the cache: ``rows`` (one per finding × task × preset; :data:`FINDINGS`), the
    presets asked for (``preset``: a name, comma-separated names, a list, or ``all``: :func:`parse_presets`),
    the commit, and per row the runs missing for N = ``target`` and, where N ≥ 2 is measured, the repeats
    that decide it (``decide``: :func:`repeats_to_decide`). A task with none of the presets gets a row per
    finding saying so; ``sets``: config fields changed from the preset (both architectures; every command
    carries them). Nothing trains."""
    cache = cache or ArtifactCache()
    tasks = tuple(tasks or TASKS)
    presets = parse_presets(preset, tasks)
    costs = _Costs()
    rows: list[dict[str, Any]] = []
    for task in tasks:
        have = [p for p in presets if p in get_task(task).presets]
        if not have:
            for f in FINDINGS.values():
                if task in f.tasks:
                    rows.append(_row(f, task, ",".join(presets), status="no preset", n=0, target_repeats=target,
                                     missing=[], missing_time="", command="", _missing=[],
                                     note=f"task {task} has no preset {' or '.join(map(repr, presets))} "
                                          f"({', '.join(task_presets(task))})"))
            continue
        for p in have:
            rows.extend(_task_rows(task, p, sets, cache, costs, target))
    for row in rows:
        row["decide"] = _decide(row, costs)
    order = list(FINDINGS)
    preset_order = {p: i for i, p in enumerate(presets)}
    rows.sort(key=lambda r: (order.index(r["finding"]), tasks.index(r["task"]), preset_order.get(r["preset"], -1)))
    return {"preset": ",".join(presets), "presets": presets, "sets": dict(sets or {}), "tasks": list(tasks),
            "target_repeats": target, "commit": commit(), "rows": rows}


def _task_rows(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: _Costs,
               target: int) -> list[dict[str, Any]]:
    """Every finding's row of one task at one preset."""
    rows = _arch_rows(task, preset, sets, cache, costs, target)
    if task in FINDINGS["F2"].tasks:
        rows.append(_memorization_row(task, preset, sets, cache, costs, target))
    if task in FINDINGS["F3"].tasks:
        rows.append(_dirichlet_row(task, preset, sets, cache, costs, target))
    rows.append(_training_defense_row(
        FINDINGS["F4"], task, preset, sets, cache, costs, target, "dpsgd", DP_TARGET_EPSILON, True,
        f"utility loss under DP-SGD at target ε = {DP_TARGET_EPSILON:g}", _summary_utility_loss, -1,
        {"text": "at the same ε the RNN loses more utility than the FFNN (curves only; no numbers printed)",
         "cite": FINDINGS["F4"].source.cite()}))
    rows.append(_training_defense_row(
        FINDINGS["F5"], task, preset, sets, cache, costs, target, "l2", L2_LAMBDA, False,
        f"attack accuracy drop under L2, λ = {L2_LAMBDA:g}", _accuracy_drop, +1,
        {"text": "L2 lowers the attack more for the FFNN than for the RNN (curves only; no numbers printed)",
         "cite": FINDINGS["F5"].source.cite()}))
    return rows


def missing_jobs(table: dict[str, Any], row_index: int | None = None) -> list[Missing]:
    """The missing computations of one row (or of every row), each once (the queue's unit: config × kind)."""
    rows = table["rows"] if row_index is None else [table["rows"][row_index]]
    seen, out = set(), []
    for row in rows:
        for m in row.get("_missing", []):
            key = (m.config.config_hash, m.kind, repr(m.params))
            if key not in seen:
                seen.add(key)
                out.append(m)
    return out


def table_json(table: dict[str, Any]) -> dict[str, Any]:
    """The table as JSON (the rows without their in-memory job objects)."""
    return {**table, "rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in table["rows"]]}



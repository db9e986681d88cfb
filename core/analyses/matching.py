"""Comparison at matched utility by construction (``match_utility``), above the pipeline.

The studies compared FFNN and RNN after tuning both to a similar converged utility. Here each
architecture trains until its victim's validation utility first reaches a target, then stops:

1. the full run of the config (cached as usual) records the victim's validation utility after
   every epoch (``per_epoch[].utility_val``);
2. the target is a number, or ``lower``: the lower of the two architectures' final validation
   utilities (per repeat: repeat r of FFNN and RNN share their split);
3. e* = the first epoch whose validation utility is ≥ the target; the *stopped run* is the same
   config with ``epochs = e*`` (checkpoints beyond e* dropped), an ordinary cached run whose
   victim **and shadows** train e* epochs — the attacker copies the victim's recipe, stopping
   epoch included. Training is seeded per role and has no schedule depending on the epoch count,
   so the stopped victim is the full run's epoch-e* model; its own measured utility is reported
   (``utility_at_stop``) and checked against the target.

An architecture that never reaches the target is compared at its final epoch and marked
``reached: false``. Known limit: the shadows stop at the victim's e*, not at an epoch of their own
(the pipeline measures utility for the victim only).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from core.analyses.repeats import _RepeatProgress, comparison_json, repeat_configs
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment
from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.foundations.progress import ProgressCallback

if TYPE_CHECKING:
    from core.experiment.executor import Executor


def utility_curve(summary: RunSummary) -> list[tuple[int, float]]:
    """(epoch, validation utility) of the victim after every epoch that measured it."""
    return [(r.epoch, float(r.utility_val)) for r in summary.per_epoch
            if r.utility_val is not None and math.isfinite(float(r.utility_val))]


def first_epoch_reaching(summary: RunSummary, target: float) -> int | None:
    """The first epoch whose validation utility is ≥ ``target`` (None if none is)."""
    for epoch, value in utility_curve(summary):
        if value >= target:
            return epoch
    return None


def stopped_config(cfg: ExperimentConfig, epoch: int) -> ExperimentConfig:
    """``cfg`` trained for ``epoch`` epochs (checkpoints after it dropped; orchestration fields off)."""
    if not 1 <= epoch <= cfg.epochs:
        raise ValueError(f"stopping epoch {epoch} outside 1..{cfg.epochs}")
    return dataclasses.replace(cfg, epochs=epoch, attack_epochs=tuple(e for e in cfg.attack_epochs if e <= epoch),
                               match_utility="off", repeats=1).validate()


def final_utility(summary: RunSummary) -> float:
    """The victim's final validation utility, which ``lower`` resolves the target from.

    Raises:
        ConfigError: the run did not measure it (no utility to match on).
    """
    val = summary.utility.val
    if val is None:
        raise ConfigError(f"the {summary.arch} run {summary.config_hash[:6]} has no validation "
                          f"{summary.utility.metric}: match_utility needs it")
    return float(val)


def resolve_target(match_utility: str, finals: dict[str, float]) -> float:
    """The target utility: the number, or (``lower``) the lower of the final utilities ``finals``."""
    if match_utility == "lower":
        return min(finals.values())
    try:
        target = float(match_utility)
    except ValueError:
        raise ConfigError(f"match_utility must be off, lower or a number, got {match_utility!r}") from None
    if not math.isfinite(target):
        raise ConfigError(f"match_utility must be a finite number, got {match_utility!r}")
    return target


@dataclass(frozen=True)
class StoppingPoint:
    """Where a run stops for a utility target: ``epoch``, the first whose validation utility reaches it
    (``reached``), else the full run's last; the full run's ``final_epoch`` and ``final_utility``."""

    epoch: int
    reached: bool
    final_epoch: int
    final_utility: float | None

    def to_dict(self) -> dict[str, Any]:
        """Its block in ``compare --match-utility``'s JSON (each architecture's entry of a repeat)."""
        return {"epoch": self.epoch, "reached": self.reached, "final_epoch": self.final_epoch,
                "final_utility": self.final_utility}


def stopping_point(summary: RunSummary, target: float) -> StoppingPoint:
    """Where the run ``summary`` stops for ``target``."""
    epoch = first_epoch_reaching(summary, target)
    final_epoch = summary.epochs  # the config's epochs
    return StoppingPoint(epoch if epoch is not None else final_epoch, epoch is not None, final_epoch,
                         summary.utility.val)


def run_matched(configs: dict[str, ExperimentConfig], progress: ProgressCallback | None = None,
                cache: ArtifactCache | None = None, executor: "Executor | None" = None) -> dict[str, Any]:
    """FFNN and RNN at matched utility (``configs[a].match_utility``), repeat by repeat.

    Returns ``{"match_utility", "metric", "repeats": [{"repeat" (1 … N), "seed", "target", arch: {epoch,
    reached, final_epoch, final_utility, utility_at_stop, config_hash}}], "comparison"}`` where
    ``comparison`` is :func:`core.analyses.repeats.comparison_json` of the stopped runs.
    """
    cache = cache or ArtifactCache()
    mode = configs["ffnn"].match_utility
    if mode == "off" or configs["rnn"].match_utility != mode:
        raise ConfigError("match_utility must be set (a number or lower), the same for both architectures")
    per = {a: repeat_configs(c) for a, c in configs.items()}
    n = len(per["ffnn"])
    bar = _RepeatProgress(4 * n, progress, lambda i: f"repeat {i // 4 + 1}/{n} "
                                                     f"{('FFNN full', 'RNN full', 'FFNN stopped', 'RNN stopped')[i % 4]}")
    rows: list[dict[str, Any]] = []
    stopped: dict[str, list[RunSummary]] = {"ffnn": [], "rnn": []}
    for r in range(n):
        full = {}
        for j, arch in enumerate(("ffnn", "rnn")):
            full[arch] = run_experiment(per[arch][r], bar.for_run(4 * r + j), cache, executor).run
            bar.done(full[arch])
        target = resolve_target(mode, {a: final_utility(s) for a, s in full.items()})
        # numbered for people, as every page, the CLI's progress and the report number repeats: 1 … N
        row: dict[str, Any] = {"repeat": r + 1, "seed": per["ffnn"][r].seed, "target": target}
        for j, arch in enumerate(("ffnn", "rnn")):
            point = stopping_point(full[arch], target)
            summary = run_experiment(stopped_config(per[arch][r], point.epoch), bar.for_run(4 * r + 2 + j), cache,
                                     executor).run
            bar.done(summary)
            row[arch] = {**point.to_dict(), "utility_at_stop": summary.utility.val, "config_hash": summary.config_hash}
            stopped[arch].append(summary)
        rows.append(row)
    return {"match_utility": mode, "metric": stopped["ffnn"][0].utility.metric, "repeats": rows,
            "comparison": comparison_json(stopped["ffnn"], stopped["rnn"])}


@dataclass(frozen=True)
class PlannedStop:
    """One architecture's stop in :func:`matched_plan`: its :class:`StoppingPoint` and the ``config`` of the run
    stopped there (:func:`stopped_config`; a page trains it on request). Not written to JSON."""

    point: StoppingPoint
    config: ExperimentConfig


@dataclass(frozen=True)
class PlannedRepeat:
    """One repeat of :func:`matched_plan`: its index, the utility ``target`` and each architecture's stop."""

    repeat: int
    target: float
    stops: dict[str, PlannedStop]


def matched_plan(full: dict[str, Sequence[RunSummary]], configs: dict[str, ExperimentConfig]
                 ) -> list[PlannedRepeat]:
    """For pages: per repeat, the target and each architecture's stopping point and stopped config,
    from the full runs' summaries ``full[arch][r]`` (nothing is trained here)."""
    mode = configs["ffnn"].match_utility
    per = {a: repeat_configs(c) for a, c in configs.items()}
    plan = []
    for r in range(len(full["ffnn"])):
        target = resolve_target(mode, {a: final_utility(full[a][r]) for a in ("ffnn", "rnn")})
        stops = {}
        for arch in ("ffnn", "rnn"):
            point = stopping_point(full[arch][r], target)
            stops[arch] = PlannedStop(point, stopped_config(per[arch][r], point.epoch))
        plan.append(PlannedRepeat(r, target, stops))
    return plan

"""Honest comparisons: do the shadows track the victim, and do the two architectures compare fairly?

The shadow attacks assume a shadow trained like the victim behaves like it; when their losses differ, rules
fitted on shadows misfire, and an attack at chance says nothing about privacy. An FFNN-vs-RNN comparison is
confounded when one model learned and the other did not. This module measures both from the JSON summaries
(pure functions) and, for the ``shadow_fidelity`` block, from the trained models' cached Responses::

    {"loss_tolerance": 0.25, "loss_floor": 0.05,
     "checkpoints": [{"epoch", "victim": Stats, "shadows": Stats (mean), "shadow_each": [Stats],
                      "member_loss_gap", "nonmember_loss_gap"}],
     "utility": {"metric", "victim": {"train", "val"}, "shadows": [{"train", "val"}],
                 "shadow_mean": {"train", "val"}},
     "warnings": [str]}

Stats = ``{"member_loss", "nonmember_loss", "member_top1", "nonmember_top1"}``: mean per-record cross-entropy
to the reference and mean share of steps whose reference is the model's top choice, on members / non-members.
A loss gap is |shadows − victim| / max(victim, ``loss_floor``) (the floor keeps two near-zero losses from
reading as "100 % apart"); above ``loss_tolerance`` the block warns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from core.experiment.fidelity_results import FidelityCheckpoint, FidelityUtility, ShadowFidelity, UtilityPair
from core.experiment.results import AttackResult, EpochRecord, RunSummary
from core.experiment.roles import TrainedModels
from core.measurement.responses import Responses
from core.measurement.studies import arch_finding

#: relative loss gap above which shadows are said not to track the victim
LOSS_TOLERANCE = 0.25
#: losses below this are compared as if they were this large
LOSS_FLOOR = 0.05
#: validation-utility gap above which an FFNN-vs-RNN comparison is confounded, per utility metric
#: (10 points: accuracy and return are fractions, BLEU is 0–100)
UTILITY_GAP = {"accuracy": 0.10, "bleu": 10.0, "return": 0.10}
#: a training utility this close to chance means the model did not learn (accuracy: above 1/classes)
NEAR_CHANCE = {"accuracy": 0.10, "bleu": 5.0, "return": 0.05}


# ---------------------------------------------------------------------------- from Responses
def response_stats(responses: Responses, membership: np.ndarray) -> dict[str, float | None]:
    """Mean loss and top-1 agreement of members and non-members (see the module docstring)."""
    y = np.asarray(membership, bool)
    loss = responses.mean_cross_entropy.astype(np.float64)
    top1 = responses.record_mean((responses.ref_rank == 0).astype(np.float32)).astype(np.float64)

    def mean(a: np.ndarray, sel: np.ndarray) -> float | None:
        return float(a[sel].mean()) if sel.any() else None

    return {"member_loss": mean(loss, y), "nonmember_loss": mean(loss, ~y),
            "member_top1": mean(top1, y), "nonmember_top1": mean(top1, ~y)}


def _gap(shadow: float | None, victim: float | None) -> float | None:
    if shadow is None or victim is None:
        return None
    return abs(shadow - victim) / max(abs(victim), LOSS_FLOOR)


def _mean_stats(rows: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k in rows[0] if rows else ():
        vals = [v for r in rows if (v := r[k]) is not None]
        out[k] = float(np.mean(vals)) if vals else None
    return out


def shadow_fidelity(
    victim: Mapping[int, Mapping[str, float | None]],
    shadows: Mapping[int, Sequence[Mapping[str, float | None]]],
    metric: str,
    victim_utility: Mapping[str, float | None],
    shadow_utility: Sequence[Mapping[str, float | None]],
) -> ShadowFidelity:
    """The ``shadow_fidelity`` block from per-checkpoint :func:`response_stats` of the victim and of
    each shadow, and the final utilities (train = members / in records, val = non-members / out): typed as it is
    born, from the layout's dict (so its ``to_dict`` is that dict, then ``warnings``)."""
    checkpoints = []
    for epoch in sorted(victim):
        v, each = victim[epoch], shadows.get(epoch, [])
        s = _mean_stats(each)
        checkpoints.append({
            "epoch": int(epoch), "victim": v, "shadows": s, "shadow_each": each,
            "member_loss_gap": _gap(s.get("member_loss"), v["member_loss"]),
            "nonmember_loss_gap": _gap(s.get("nonmember_loss"), v["nonmember_loss"]),
        })
    block = {
        "loss_tolerance": LOSS_TOLERANCE, "loss_floor": LOSS_FLOOR, "checkpoints": checkpoints,
        "utility": {"metric": metric, "victim": victim_utility, "shadows": shadow_utility,
                    "shadow_mean": _mean_stats(shadow_utility) if shadow_utility else {}},
    }
    typed = ShadowFidelity.from_dict(block)
    return typed.with_json({"warnings": fidelity_warnings(typed)})


def measure_shadow_fidelity(models: TrainedModels) -> ShadowFidelity:
    """The ``shadow_fidelity`` block of trained (or cached) models: losses from the Responses kept at
    every checkpoint; the shadows' final utility measured on their in / out query records like the
    victim's (the first n_eval members / the non-members), from the final weights."""
    cfg, splits = models.cfg, models.splits
    victim = {e: response_stats(models.victim.responses[e], models.eval_membership) for e in cfg.checkpoint_epochs}
    one = np.r_[np.ones(cfg.n_eval, bool), np.zeros(cfg.n_eval, bool)]
    shadows = {e: [response_stats(s.responses[e], one) for s in models.shadows] for e in cfg.checkpoint_epochs}
    last = models.victim.per_epoch[-1] if models.victim.per_epoch else EpochRecord(epoch=0)
    victim_utility = {"train": last.utility_train, "val": last.utility_val}
    shadow_utility = []
    for i in range(len(models.shadows)):
        model = models.model(f"shadow_{i}")
        shadow_utility.append({
            "train": float(models.task.utility(cfg, model, models.data, splits.shadow_in[i][: cfg.n_eval])),
            "val": float(models.task.utility(cfg, model, models.data, splits.shadow_out[i])),
        })
    return shadow_fidelity(victim, shadows, models.task.utility_metric, victim_utility, shadow_utility)


# ---------------------------------------------------------------------------- warnings (pure)
def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _tolerance(block: ShadowFidelity) -> float:
    return LOSS_TOLERANCE if block.loss_tolerance is None else block.loss_tolerance


def _off(block: ShadowFidelity, loss: str) -> list[FidelityCheckpoint]:
    """The checkpoints whose shadows' mean ``loss`` is off the victim's by more than the block's tolerance."""
    tol = _tolerance(block)
    return [c for c in block.checkpoints or () if (gap := c.gap(loss)) is not None and gap > tol]


def _flagged(block: ShadowFidelity) -> Iterator[tuple[str, str, list[FidelityCheckpoint], FidelityCheckpoint, str]]:
    """(which, loss, off checkpoints, the worst of them, their epochs as text) per loss that is off somewhere."""
    for which, loss in (("member", "member_loss"), ("non-member", "nonmember_loss")):
        off = _off(block, loss)
        if off:
            yield which, loss, off, max(off, key=lambda c: c.gap(loss) or 0.0), ", ".join(str(c.epoch) for c in off)


def fidelity_warnings(block: ShadowFidelity | None) -> list[str]:
    """One line per loss (member, non-member) whose shadows' mean is off the victim's by more than the
    tolerance at some checkpoint (the worst gap and every such epoch), plus one when the shadows'
    final validation utility is off by more than the comparison's utility gap."""
    if block is None:
        return []
    tol = _tolerance(block)
    out = []
    for which, loss, off, worst, epochs in _flagged(block):
        out.append(
            f"the shadows' mean {which} loss is off the victim's by more than {tol:.0%} at epoch{'s' * (len(off) > 1)} "
            f"{epochs} (worst: epoch {worst.epoch}, {_fmt(worst.shadows.loss(loss))} vs "
            f"{_fmt(worst.victim.loss(loss))}, {worst.gap(loss):.0%} off): the shadows do not track the victim, so "
            f"attacks fitted on them may transfer badly")
    util = block.utility or FidelityUtility()
    metric = util.metric or "accuracy"
    v, s = (util.victim or UtilityPair()).val, (util.shadow_mean or UtilityPair()).val
    if v is not None and s is not None and abs(v - s) > UTILITY_GAP.get(metric, 0.1):
        out.append(f"the shadows' validation {metric} {_fmt(s)} differs from the victim's {_fmt(v)} by more than "
                   f"{_fmt(UTILITY_GAP.get(metric, 0.1))}")
    return out


def _outside_spread(row: FidelityCheckpoint, loss: str) -> bool | None:
    """Whether the victim's mean ``loss`` at a checkpoint lies outside every shadow's (None: no shadow's known)."""
    each = [x for e in row.shadow_each or () if (x := e.loss(loss)) is not None]
    v = row.victim.loss(loss)
    if not each or v is None:
        return None
    return v < min(each) or v > max(each)


def shadow_tracking_warning(summaries: Sequence[RunSummary]) -> str | None:
    """``fidelity_warnings``' loss lines of every architecture merged into one warning, with advice chosen from
    where the victim lies against the individual shadows (``shadow_each``):

    * inside their spread: the gap is the shadows' own scatter — more shadows (``n_shadows``) steady their mean;
    * outside every shadow: no number of such shadows averages it away — the victim's records differ from the
      attacker's (its ``n_eval`` non-members are one sample: more of them tell luck from a real difference);
    * flagged only before the last checkpoint: the runs train at different speeds mid-way; the headline
      numbers are read at the last epoch, where they agree.
    None when nothing is off."""
    parts, inside, outside, settings = [], 0, 0, {}
    flagged_last: dict[str, bool] = {}  # per architecture: is any flag at its last checkpoint?
    for s in summaries:
        block = s.shadow_fidelity or ShadowFidelity()
        last = block.last_epoch
        for which, loss, off, worst, epochs in _flagged(block):
            parts.append(f"{s.arch.upper()} {which} loss at epoch{'s' * (len(off) > 1)} {epochs} (worst "
                         f"{worst.gap(loss):.0%} off: shadows {_fmt(worst.shadows.loss(loss))} vs victim "
                         f"{_fmt(worst.victim.loss(loss))})")
            for r in off:
                where = _outside_spread(r, loss)
                inside += where is False
                outside += where is True
            flagged_last[s.arch.upper()] = flagged_last.get(s.arch.upper(), False) or any(r.epoch == last for r in off)
            settings[s.arch.upper()] = (s.settings.n_shadows, s.settings.n_eval)
    if not parts:
        return None
    shadows = "; ".join(f"{a}: {n} shadows, n_eval {e}" for a, (n, e) in settings.items())
    advice = []
    if outside:
        advice.append(f"at {outside} of {inside + outside} flagged points the victim lies outside every shadow, so more "
                      "shadows alone will not close the gap: raise n_eval (more non-member records per mean) to tell a "
                      "lucky sample from a real difference between the victim's records and the attacker's")
    if inside:
        advice.append(f"at {inside} of {inside + outside} the victim lies within the shadows' own spread: raise n_shadows "
                      "for a steadier shadow mean")
    early = [a for a, at_last in flagged_last.items() if not at_last]
    if early:
        advice.append(f"{' and '.join(early)} {'is' if len(early) == 1 else 'are'} flagged only before the last epoch, "
                      "where the headline numbers are read (mid-training the runs move at different speeds)")
    tol = max(_tolerance(s.shadow_fidelity or ShadowFidelity()) for s in summaries)
    return (f"The shadows do not track the victim (gap above {tol:.0%}): " + "; ".join(parts) + ". Attacks fitted on the "
            "shadows may transfer badly. What to do — " + "; ".join(advice) + f" ({shadows}; Train & attack's "
            "settings). Every checkpoint: the table \"Do the shadows track the victim?\".")


def chance_utility(summary: RunSummary) -> float:
    """The utility of a model that learned nothing: 1/classes for accuracy, else 0."""
    if summary.utility.metric == "accuracy":
        n_classes = summary.data.n_classes if summary.data is not None else None
        return 1.0 / max(int(n_classes or 10), 1)
    return 0.0


def confounding_warnings(summaries: Sequence[RunSummary]) -> list[str]:
    """Why an FFNN-vs-RNN comparison of these summaries (one per architecture) may be confounded:
    a model whose training utility is near chance, validation utilities further apart than
    :data:`UTILITY_GAP`, and each summary's shadow-fidelity warnings."""
    out = []
    for s in summaries:
        metric, train = s.utility.metric, s.utility.train
        if train is not None and train < chance_utility(s) + NEAR_CHANCE.get(metric, 0.1):
            out.append(f"{s.arch.upper()}: training {metric} {train:.3g} is near chance ({chance_utility(s):.3g}): "
                       f"this model did not learn, so its attack numbers say little about its architecture")
        # the loss lines of every architecture make one warning, with advice (below); the utility line stays
        for w in fidelity_warnings(s.shadow_fidelity):
            if not w.startswith("the shadows' mean "):
                out.append(f"{s.arch.upper()}: {w}")
    if (tracking := shadow_tracking_warning(summaries)) is not None:
        out.append(tracking)
    if len(summaries) == 2:
        a, b = summaries
        metric = a.utility.metric
        va, vb = a.utility.val, b.utility.val
        if va is not None and vb is not None and abs(va - vb) > UTILITY_GAP.get(metric, 0.1):
            out.append(f"validation {metric} differs by {abs(va - vb):.3g} ({a.arch.upper()} {va:.3g} vs "
                       f"{b.arch.upper()} {vb:.3g}; more than {UTILITY_GAP.get(metric, 0.1):g}): the comparison is "
                       f"confounded by utility — see the matched-utility view")
    return out


def utility_gap(summaries: Sequence[RunSummary]) -> dict[str, Any] | None:
    """Train and validation utility gaps (first − second summary) of a two-architecture comparison."""
    if len(summaries) != 2:
        return None
    a, b = summaries

    def diff(k: str) -> float | None:
        x, y = getattr(a.utility, k), getattr(b.utility, k)
        return None if x is None or y is None else float(x - y)

    return {"metric": a.utility.metric, "archs": [a.arch, b.arch], "train": diff("train"), "val": diff("val")}


# ---------------------------------------------------------------------------- matched utility (pure)
def _val_by_epoch(run: RunSummary) -> dict[int, float]:
    return {r.epoch: r.utility_val for r in run.per_epoch if r.utility_val is not None}


@dataclass(frozen=True)
class MatchedSide:
    """One side of a matched-utility pair: an architecture at one epoch, its validation utility there and the
    attacks fitted at that epoch (:class:`core.experiment.results.AttackResult`, by name)."""

    arch: str
    epoch: int
    utility_val: float
    attacks: dict[str, AttackResult]


@dataclass(frozen=True)
class MatchedPair:
    """A's checkpoint closest to B's final validation utility (``matched``) beside B at its final epoch
    (``reference``): the utility gap, whether it is within :data:`UTILITY_GAP`, and per attack run on both sides
    which architecture has the higher AUC (or ``"tie"``)."""

    matched: MatchedSide
    reference: MatchedSide
    utility_gap: float
    within_tolerance: bool
    more_leaky: dict[str, str]


@dataclass(frozen=True)
class MatchedUtility:
    """The matched-utility view (:func:`matched_utility`): one pair per direction; in memory only, no JSON form."""

    metric: str
    pairs: tuple[MatchedPair, ...]


def closest_checkpoint(summary: RunSummary, target_val: float) -> int | None:
    """The checkpoint epoch (one with attack results) whose validation utility is closest to
    ``target_val`` (ties: the later epoch)."""
    vals = _val_by_epoch(summary)
    epochs = [int(e) for e in summary.attacks_by_epoch or {} if int(e) in vals]
    if not epochs:
        return None
    return min(sorted(epochs, reverse=True), key=lambda e: abs(vals[e] - target_val))


def matched_utility(summaries: Sequence[RunSummary]) -> MatchedUtility | None:
    """The matched-utility view of a two-architecture comparison (None without two summaries).

    For each architecture A (the other B): A's checkpoint whose validation utility is closest to B's final one,
    beside B at its final epoch (:class:`MatchedPair`). Attacks run only at the final epoch (LiRA, RMIA) appear
    only when the matched epoch is the final one.
    """
    if len(summaries) != 2:
        return None
    pairs = []
    for a, b in (summaries, summaries[::-1]):
        b_final = int(b.settings.epochs) if b.settings.epochs is not None else max(_val_by_epoch(b))
        b_val = _val_by_epoch(b).get(b_final, b.utility.val)
        if b_val is None:
            continue
        epoch = closest_checkpoint(a, b_val)
        if epoch is None:
            continue
        a_val = _val_by_epoch(a)[epoch]
        matched = MatchedSide(a.arch, epoch, a_val, a.attacks_at(epoch))
        reference = MatchedSide(b.arch, b_final, b_val, b.attacks_at(b_final))
        more = {}
        for name in sorted(set(matched.attacks) & set(reference.attacks)):
            x, y = matched.attacks[name].auc, reference.attacks[name].auc
            more[name] = a.arch if x > y else (b.arch if y > x else "tie")
        gap = float(a_val - b_val)
        pairs.append(MatchedPair(matched, reference, gap, abs(gap) <= UTILITY_GAP.get(a.utility.metric, 0.1), more))
    return MatchedUtility(summaries[0].utility.metric, tuple(pairs))


# ---------------------------------------------------------------------------- the studies vs this run (pure)
@dataclass(frozen=True)
class StudyComparison:
    """The studies' FFNN-vs-RNN ``finding`` for a ``task`` beside two runs (:func:`study_comparison`); in memory
    only, no JSON form."""

    task: str
    finding: str
    holds: bool
    fair: bool | None
    attack: str
    attack_accuracy: dict[str, float]
    utility_val: dict[str, float | None]
    generalization_gap: dict[str, float | None]
    text: str


def study_comparison(summaries: Sequence[RunSummary]) -> StudyComparison | None:
    """Whether "the attack is more accurate against the RNN" holds for these runs, and whether the comparison is
    fair (validation utilities within :data:`UTILITY_GAP`). None unless one FFNN and one RNN run of one task."""
    by_arch = {s.arch: s for s in summaries}
    if set(by_arch) != {"ffnn", "rnn"} or len(summaries) != 2 or by_arch["ffnn"].task != by_arch["rnn"].task:
        return None
    f, r = by_arch["ffnn"], by_arch["rnn"]
    metric = f.utility.metric

    def gap(s: RunSummary) -> float | None:
        u = s.utility
        return None if u.train is None or u.val is None else float(u.train - u.val)

    acc = {a: float(s.attack.accuracy) for a, s in by_arch.items()}
    vals = {a: s.utility.val for a, s in by_arch.items()}
    val_f, val_r = vals["ffnn"], vals["rnn"]
    fair = None if val_f is None or val_r is None else abs(val_f - val_r) <= UTILITY_GAP.get(metric, 0.1)
    holds = acc["rnn"] > acc["ffnn"]
    attack = f.attack.name
    # FFNN first and the difference as FFNN − RNN: the one sign convention of every page, report and CLI
    text = (f"attack ({attack}) accuracy FFNN {acc['ffnn']:.3f} vs RNN {acc['rnn']:.3f}, FFNN − RNN "
            f"{acc['ffnn'] - acc['rnn']:+.3f}; validation {metric} "
            f"FFNN {_fmt(vals['ffnn'])} vs RNN {_fmt(vals['rnn'])}, generalization gap FFNN {_fmt(gap(f))} vs "
            f"RNN {_fmt(gap(r))}")
    if fair is False:
        text += " — the utilities differ by more than " + _fmt(UTILITY_GAP.get(metric, 0.1)) + \
                ", so compare at matched utility before reading the architectures"
    return StudyComparison(f.task, arch_finding(f.task), holds, fair, attack, acc, vals,
                           {"ffnn": gap(f), "rnn": gap(r)}, text)

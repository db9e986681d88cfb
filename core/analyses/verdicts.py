"""The verdicts of the analyses (:mod:`core.analyses.analysis`), computed from their data only.

* one run: :func:`verdict` turns two curves into a computed sentence ("RNN higher than FFNN at 4 of 5
  epochs, by 0.06 on average", always :data:`ONE_REPEAT`: one run gives no interval); one
  ``*_verdict`` per analysis reads that analysis' data (its registration's ``verdict_of``) and
  :func:`verdicts` computes them all, so a tab never shows a verdict another analysis' runs decided;
* over repeats: the ``*_pair`` functions (a registration's ``repeat`` pairing) give one FFNN/RNN pair
  per repeat and :func:`repeated_verdicts` the paired comparison with the three-valued verdict of
  :func:`core.measurement.stats.compare`; :func:`repeated_verdict_sentence` is its one line.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, cast

import numpy as np

from core.analyses.analysis_results import AuditView, EpochRow, Scatter, Vulnerability
from core.analyses.own_models import Memorization, Mismatch
from core.analyses.registry import Analysis, Repeat, registered
from core.analyses.repeats import answer_of
from core.experiment.results import RunSummary
from core.foundations.names import ARCH_NAMES
from core.measurement.stats import Comparison, Estimate
from core.measurement.stats import compare as paired_compare

# ---------------------------------------------------------------------------- verdicts
#: what a single run can say about a comparison: one pair of numbers has no interval, so no
#: verdict (the same words as Train & attack and the run report)
ONE_REPEAT = "inconclusive (one repeat)"


@dataclass
class RunVerdict:
    """A computed finding of one run: its value in the one vocabulary of
    :data:`core.measurement.stats.VERDICTS` (holds / reversed / inconclusive), the sentence that
    says so, and the FFNN − RNN difference it rests on (None where there is no single one).

    A comparison of FFNN with RNN from one run is always ``inconclusive`` (:data:`ONE_REPEAT`):
    the difference is reported, the verdict needs repeats (:func:`repeated_verdicts`)."""

    value: str
    text: str
    difference: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunVerdict":
        difference = d.get("difference")
        return cls(str(d["value"]), str(d["text"]), None if difference is None else float(difference))


def verdict(rnn: list[float | None], ffnn: list[float | None], what: str = "attack accuracy") -> RunVerdict:
    """"RNN higher than FFNN" over paired points of one run (epochs, blocks …): the FFNN − RNN
    difference (its mean over the points) and :data:`ONE_REPEAT` — points of one run share its
    split and initialisation, so they are not repeats and give no interval."""
    pairs = [(r, f) for r, f in zip(rnn, ffnn) if r is not None and f is not None]
    if not pairs:
        return RunVerdict("inconclusive", f"no paired {what} values to compare")
    if len(pairs) == 1:
        r, f = pairs[0]
        return RunVerdict("inconclusive", f"{what}: FFNN {f:.3f}, RNN {r:.3f}, FFNN − RNN {f - r:+.3f} — {ONE_REPEAT}",
                       f - r)
    diff = np.array([f - r for r, f in pairs])
    higher = int((diff < 0).sum())
    return RunVerdict("inconclusive", f"{what}: RNN higher at {higher} of {len(pairs)} points, mean FFNN − RNN "
                                   f"{diff.mean():+.3f} — {ONE_REPEAT}", float(diff.mean()))


# ---------------------------------------------------------------------------- verdicts of one run
def runs_verdict(summaries: dict[str, RunSummary]) -> RunVerdict:
    """RNN's final attack accuracy above the FFNN's (the runs' summaries)."""
    return verdict([summaries["rnn"].attack.accuracy], [summaries["ffnn"].attack.accuracy], "final attack accuracy")


def scatter_verdict(scatter: dict[str, Scatter]) -> RunVerdict:
    """The study's two halves (:func:`core.analyses.analysis.entropy_scatter` data): members' mean APE below
    non-members' (the gap non-members − members above 0) for each architecture, *and* the RNN separating them
    more (FFNN − RNN gap below 0); :data:`ONE_REPEAT`. Where the scatter holds its records, each gap and the
    difference carry a paired 95 % stratified bootstrap interval over the records, and a direction is stated
    only where that interval excludes 0 (a gap in a stored APE's last digit is no direction)."""
    gaps = {a: scatter_gap(scatter[a]) for a in ("ffnn", "rnn")}
    d = gaps["ffnn"] - gaps["rnn"]
    intervals = _gap_intervals(scatter)
    if intervals is None:
        lower = [ARCH_NAMES[a] for a, g in gaps.items() if g > 0]
        return RunVerdict("inconclusive", "(1) members' mean APE below non-members' for "
                          + (" and ".join(lower) if lower else "neither architecture")
                          + f" (gap FFNN {gaps['ffnn']:+.3g}, RNN {gaps['rnn']:+.3g} nats); (2) the RNN separates them "
                          + ("more" if d < 0 else "less") + f": FFNN − RNN gap {d:+.3g} nats — {ONE_REPEAT}", d)

    def ci(interval: tuple[float, float]) -> str:
        lo, hi = interval
        return f"[{lo:+.3g}, {hi:+.3g}]"

    lower = [ARCH_NAMES[a] for a in ("ffnn", "rnn") if intervals.gap[a][0] > 0]
    lo, hi = intervals.difference
    half2 = ("the RNN separates them more" if hi < 0 else "the RNN separates them less" if lo > 0
             else "no difference between the architectures shown")
    return RunVerdict("inconclusive", "(1) members' mean APE below non-members' (95 % interval over records above 0) for "
                      + (" and ".join(lower) if lower else "neither architecture")
                      + f" (gap FFNN {gaps['ffnn']:+.3g} {ci(intervals.gap['ffnn'])}, RNN {gaps['rnn']:+.3g} "
                      + f"{ci(intervals.gap['rnn'])} nats); (2) "
                      + f"{half2}: FFNN − RNN gap {d:+.3g} {ci(intervals.difference)} nats — {ONE_REPEAT}", d)


#: resamples of the records behind a one-run scatter gap's interval
GAP_BOOTSTRAP = 1000


@dataclass(frozen=True)
class GapIntervals:
    """The intervals of :func:`_gap_intervals`: each architecture's gap, and the FFNN − RNN difference."""

    gap: dict[str, tuple[float, float]]
    difference: tuple[float, float]


def _gap_intervals(scatter: dict[str, Scatter], confidence: float = 0.95,
                   seed: int = 0) -> GapIntervals | None:
    """95 % percentile intervals of each architecture's gap (non-members' − members' mean APE) and of the
    FFNN − RNN difference, over stratified resamples of the records (the same resampled records for both:
    one split), from the scatter's per-record ``log10_ape`` (records clipped at its floor count as the floor);
    None where the scatter holds no records or the two do not describe the same records."""
    records = {a: (scatter[a].log10_ape, scatter[a].membership) for a in ("ffnn", "rnn")}
    if any(x is None or m is None for x, m in records.values()):
        return None
    ape = {a: 10.0 ** np.asarray(x, np.float64) for a, (x, _) in records.items()}
    member = {a: np.asarray(m, bool) for a, (_, m) in records.items()}
    m = member["ffnn"]
    if len(m) != len(member["rnn"]) or not np.array_equal(m, member["rnn"]) or m.all() or not m.any():
        return None
    if any(len(v) != len(m) for v in ape.values()):
        return None
    rng = np.random.default_rng(seed)
    mem, non = np.nonzero(m)[0], np.nonzero(~m)[0]
    im = mem[rng.integers(0, len(mem), (GAP_BOOTSTRAP, len(mem)))]
    inn = non[rng.integers(0, len(non), (GAP_BOOTSTRAP, len(non)))]
    boot = {a: v[inn].mean(1) - v[im].mean(1) for a, v in ape.items()}
    q = [(1 - confidence) / 2, (1 + confidence) / 2]

    def interval(v: np.ndarray) -> tuple[float, float]:
        lo, hi = (float(x) for x in np.quantile(v, q))
        return lo, hi

    return GapIntervals({a: interval(v) for a, v in boot.items()}, interval(boot["ffnn"] - boot["rnn"]))


def scatter_gap(sc: Scatter) -> float:
    """Non-members' minus members' mean APE (nats) of one :func:`core.analyses.analysis.entropy_scatter`: above 0 when members
    get the lower entropy, the larger the better the two are separated."""
    return float(sc.mean_ape.non_members - sc.mean_ape.members)


def _checkpoint_accuracy(rows: Sequence[EpochRow] | None) -> dict[int, float]:
    """Attack accuracy by checkpoint epoch of a vulnerability's rows."""
    return {r.epoch: r.attack_accuracy for r in rows or () if r.attack_accuracy is not None}


def vulnerability_verdict(vuln: dict[str, Vulnerability]) -> RunVerdict:
    """RNN's attack accuracy above the FFNN's at the shared checkpoint epochs (:func:`core.analyses.analysis.vulnerability` data)."""
    f, r = _checkpoint_accuracy(vuln["ffnn"].rows), _checkpoint_accuracy(vuln["rnn"].rows)
    epochs = sorted(set(f) & set(r))
    return verdict([r[e] for e in epochs], [f[e] for e in epochs], "attack accuracy per checkpoint epoch")


def overtraining_rise(result: Vulnerability) -> tuple[int, int, float] | None:
    """(from epoch, to epoch, rise) of one architecture's :func:`core.analyses.analysis.overtraining` data: the attack
    accuracy at the last checkpoint minus that at the last checkpoint not after the best
    validation epoch (the first checkpoint when none is). None when the best validation epoch is
    the last one (no overtraining happened) or fewer than two checkpoints were attacked."""
    acc = _checkpoint_accuracy(result.rows)
    best, last = result.best_val_epoch, max(acc, default=None)
    if best is None or last is None or len(acc) < 2 or best >= last:
        return None
    start = max((e for e in acc if e <= best), default=min(acc))
    return start, last, acc[last] - acc[start]


def overtraining_verdict(over: dict[str, Vulnerability]) -> RunVerdict:
    """Paper 001 §5.2: past the best validation epoch the FFNN's attack accuracy keeps rising
    (≈70 % → ≈90 %, its Fig. 1) while the RNN's rises by a small margin only (its Fig. 3). One
    run gives each rise (:func:`overtraining_rise`, from the :func:`core.analyses.analysis.overtraining` runs only) and
    their difference, :data:`ONE_REPEAT`."""
    f_rise, r_rise = overtraining_rise(over["ffnn"]), overtraining_rise(over["rnn"])
    if f_rise is None or r_rise is None:
        missing = [ARCH_NAMES[a] for a, v in (("ffnn", f_rise), ("rnn", r_rise)) if v is None]
        return RunVerdict("inconclusive", f"no overtraining to compare for {' and '.join(missing)}: its best validation "
                                       "epoch is not before its last attacked checkpoint (or fewer than two checkpoints "
                                       "were attacked)")
    (f0, f1, fr), (r0, r1, rr) = f_rise, r_rise
    return RunVerdict("inconclusive", f"past the best validation epoch the attack accuracy rose by {fr:+.3f} for the FFNN "
                                   f"(epoch {f0} → {f1}) and {rr:+.3f} for the RNN (epoch {r0} → {r1}); FFNN − RNN "
                                   f"{fr - rr:+.3f} — {ONE_REPEAT}", fr - rr)


def memorization_verdict(m: dict[str, Memorization]) -> RunVerdict:
    """The FFNN forgets the first block and the RNN keeps more of it (:func:`core.analyses.own_models.memorization` data):
    the first block's attack accuracy of each and their difference, :data:`ONE_REPEAT` (no paper
    gives a threshold for "forgotten", so none is applied)."""
    first = {a: m[a].blocks[0].attack_accuracy for a in ("ffnn", "rnn")}
    return RunVerdict("inconclusive", f"first block attacked at {first['ffnn']:.3f} (FFNN) vs {first['rnn']:.3f} (RNN); "
                                   f"FFNN − RNN {first['ffnn'] - first['rnn']:+.3f} — {ONE_REPEAT}",
                   first["ffnn"] - first["rnn"])


def mismatch_verdict(mm: dict[str, Mismatch]) -> RunVerdict:
    """How much mismatched shadows cost the attack, per architecture (:func:`core.analyses.own_models.mismatch` data): the
    largest accuracy drop of each, :data:`ONE_REPEAT` (no paper gives a "small" threshold, so none
    is applied)."""
    drops = {}
    for a in ("ffnn", "rnn"):
        m = mm[a]
        base = m.rows[0].accuracy[m.attack]
        drops[a] = max(base - r.accuracy[m.attack] for r in m.rows[1:])
    return RunVerdict("inconclusive", f"largest accuracy drop with mismatched shadows: FFNN {drops['ffnn']:+.3f}, "
                                   f"RNN {drops['rnn']:+.3f} — {ONE_REPEAT}", drops["ffnn"] - drops["rnn"])


def audit_verdict(aud: dict[str, AuditView]) -> RunVerdict:
    """An audited ε is a lower bound (95 %): on DP-SGD runs it must not exceed the accountant's
    upper bound (RDP and PRV) — ``holds`` when it stays within, ``reversed`` when it exceeds —
    provided both bound ε on the same unit (``comparable``: a navigation canary is a whole map,
    DP-SGD protects one window, :func:`core.measurement.audit.audit_comparability`); else
    ``inconclusive`` (not comparable, or non-private runs with nothing to check against; a
    saturated bound — every guess right — is m's ceiling, not the model's;
    :mod:`core.analyses.record_views`)."""
    def g(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3g}"

    views = {a: aud[a] for a in ("ffnn", "rnn")}

    def line(a: str) -> str:
        v = views[a]
        acc = v.accountant_epsilon if v.accountant_epsilon is not None and v.accountant_epsilon.keys else None
        text = f"{ARCH_NAMES[a]} audited ε {g(v.audited_epsilon)}"
        if acc:
            text += f" vs accountant ε RDP {g(acc.rdp)}, PRV {g(acc.prv)}"
        return text + (" (saturated: the ceiling of m canaries)" if v.audit.saturated else "")

    # an empty accountant block ({}) counts as none
    private = {a: accountant for a, v in views.items()
               if (accountant := v.accountant_epsilon) is not None and accountant.keys}
    text = "; ".join(line(a) for a in ("ffnn", "rnn"))
    if not private:
        return RunVerdict("inconclusive", f"no accountant to check against (non-private runs): {text}; each a 95 % lower "
                                       "bound")
    apart = [c for a in private if (c := views[a].comparability) is not None and c.comparable is False]
    if apart:
        return RunVerdict("inconclusive", f"{text} — not comparable: {apart[0].reason}")
    # every ε the accountant reported (RDP, PRV and any other it adds)
    within = all(views[a].audited_epsilon <= min(
        (e for e in accountant.to_dict().values() if e is not None), default=float("inf"))
        for a, accountant in private.items())
    return RunVerdict("holds" if within else "reversed",
                   f"{text} — the audit {'stays within' if within else 'EXCEEDS'} the accountant")


# ---------------------------------------------------------------------------- verdicts over repeats
def runs_pair(summaries: dict[str, RunSummary]) -> tuple[float, float] | None:
    return summaries["ffnn"].attack.accuracy, summaries["rnn"].attack.accuracy


def scatter_pair(scatter: dict[str, Scatter]) -> tuple[float, float] | None:
    return scatter_gap(scatter["ffnn"]), scatter_gap(scatter["rnn"])


def vulnerability_pair(vuln: dict[str, Vulnerability]) -> tuple[float, float] | None:
    """Each architecture's attack accuracy averaged over the checkpoint epochs both attacked."""
    f, r = _checkpoint_accuracy(vuln["ffnn"].rows), _checkpoint_accuracy(vuln["rnn"].rows)
    epochs = sorted(set(f) & set(r))
    if not epochs:
        return None
    return float(np.mean([f[e] for e in epochs])), float(np.mean([r[e] for e in epochs]))


def overtraining_pair(over: dict[str, Vulnerability]) -> tuple[float, float] | None:
    f_rise, r_rise = overtraining_rise(over["ffnn"]), overtraining_rise(over["rnn"])
    if f_rise is None or r_rise is None:
        return None
    return f_rise[2], r_rise[2]


def memorization_pair(m: dict[str, Memorization]) -> tuple[float, float] | None:
    return m["ffnn"].blocks[0].attack_accuracy, m["rnn"].blocks[0].attack_accuracy


@dataclass(frozen=True)
class RepeatedVerdict:
    """One comparing analysis' verdict over N paired repeats (an entry of :func:`repeated_verdicts`' ``verdicts``):
    the analysis, what its number is, N and the paired comparison (:class:`core.measurement.stats.Comparison`:
    each architecture's estimate, FFNN − RNN with its interval and p-values, the three-valued verdict)."""

    analysis: str
    what: str
    n: int
    paired: Comparison

    def to_dict(self) -> dict[str, Any]:
        return {"analysis": self.analysis, "what": self.what, "n": self.n, **self.paired.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RepeatedVerdict":
        return cls(str(d["analysis"]), str(d["what"]), int(d["n"]), Comparison.from_dict(d))


@dataclass(frozen=True)
class RepeatedVerdicts:
    """:func:`repeated_verdicts`' result typed: N, the repeats' seeds, the verdicts by key and the analyses some
    repeat has no number for (``missing``: key → why)."""

    n: int
    seeds: tuple[int, ...] | None
    verdicts: dict[str, RepeatedVerdict]
    missing: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "seeds": list(self.seeds) if self.seeds is not None else None,
                "verdicts": {k: v.to_dict() for k, v in self.verdicts.items()}, "missing": dict(self.missing)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RepeatedVerdicts":
        seeds = d.get("seeds")
        return cls(int(d["n"]), tuple(int(x) for x in seeds) if seeds is not None else None,
                   {k: RepeatedVerdict.from_dict(v) for k, v in d["verdicts"].items()}, dict(d.get("missing") or {}))


def repeated_verdicts(per_repeat: list[dict[str, dict[str, Any]]], seeds: list[int] | None = None) -> RepeatedVerdicts:
    """The comparing analyses' verdicts over N repeats: ``per_repeat[r]`` holds repeat r's data, typed (``runs``: both
    architectures' :class:`RunSummary`; and any analysis registered with a ``repeat`` pairing, ``{arch: typed}`` as
    its ``reads`` gives it). Per analysis with a number in
    every repeat: the paired comparison FFNN − RNN (:func:`core.measurement.stats.compare`) and its three-valued
    verdict, keyed by the analysis' registered ``verdict``. An analysis some repeat lacks a number for is listed
    under ``missing``. Its ``to_dict()`` is the ``repeats`` block of ``analyses.json``."""
    n = len(per_repeat)
    found: dict[str, RepeatedVerdict] = {}
    missing: dict[str, str] = {}
    for entry in repeated_analyses():
        name, rep = entry.name, cast(Repeat, entry.repeat)  # repeated_analyses: repeat is set
        if not all(name in r for r in per_repeat):
            continue
        if name == "runs":  # the one answer over these repeats (core.analyses.arch_answer), as every page gives it
            answer = answer_of([r[name]["ffnn"] for r in per_repeat], [r[name]["rnn"] for r in per_repeat])
            if answer is not None:
                c = paired_compare(name, [answer.ffnn.values[i] for i in range(n)],
                                   [answer.rnn.values[i] for i in range(n)], rep.expected)
                found[cast(str, entry.verdict)] = RepeatedVerdict(name, f"{answer.label} (the answer: Holm over "
                                                             f"{len(answer.family)})", n,
                                                       dataclasses.replace(c, verdict=answer.as_verdict()))
                continue
        pairs = [rep.pair(r[name]) for r in per_repeat]
        if any(p is None for p in pairs):
            missing[cast(str, entry.verdict)] = f"{sum(p is None for p in pairs)} of {n} repeats have no {rep.what}"
            continue
        found[cast(str, entry.verdict)] = RepeatedVerdict(name, rep.what, n, paired_compare(
            name, [p[0] for p in cast("list[tuple[float, float]]", pairs)],
            [p[1] for p in cast("list[tuple[float, float]]", pairs)], rep.expected))
    return RepeatedVerdicts(n, tuple(seeds) if seeds else None, found, missing)


def repeated_analyses() -> list[Analysis]:
    """The registered analyses that compare FFNN with RNN over repeats (the runs' entry first)."""
    return [a for a in registered(every=True) if a.repeat is not None]


def repeated_verdict_sentence(v: RepeatedVerdict) -> str:
    """One line for a verdict of :func:`repeated_verdicts`: the value, FFNN − RNN with its 95 % interval, N and the
    p-values (what the pages and reports print)."""
    d = v.paired.difference
    diff = d.diff

    def ci_of(e: Estimate) -> str:
        return f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]" if e.ci_low is not None else "(no interval)"

    p = f"; p = {d.p_t:.3f} (paired t), {d.p_permutation:.3f} (sign flip)" if d.p_t is not None else ""
    value = v.paired.verdict.value if v.paired.verdict is not None else "no hypothesis"
    line = f"**{value}** — {v.what}: FFNN − RNN {diff.mean:+.3f} 95 % CI {ci_of(diff)}, N = {v.n} repeats{p}"
    if v.analysis == "scatter" and v.paired.labels == ("ffnn", "rnn"):
        # the claim's first half, per architecture: members below non-members is a gap above 0; its interval over
        # the repeats says whether it does (no paired test here, so no verdict word: the interval and where 0 is)
        def half(a: str, e: Estimate) -> str:
            where = ("above 0" if e.ci_low is not None and e.ci_low > 0 else
                     "below 0" if e.ci_high is not None and e.ci_high < 0 else "contains 0")
            return f"{ARCH_NAMES[a]} {e.mean:+.3f} {ci_of(e)} ({where})"
        line = (f"(1) members' entropy below non-members', gap per architecture over {v.n} repeats: "
                f"{half('ffnn', d.a)}, {half('rnn', d.b)}; (2) " + line)
    return line


def verdicts(results: Mapping[str, Any], summaries: dict[str, RunSummary]) -> dict[str, RunVerdict]:
    """The studies' findings, each checked on the data of its own analysis (its registered
    ``verdict_of``): ``results[name]`` (``{arch: typed}`` where the analysis registers ``reads``) feeds the
    verdict of ``name`` and nothing else (needs both architectures); the runs' verdict reads ``summaries``.
    By verdict key (``analyses.json``'s ``verdicts``: each one's ``to_dict()``)."""
    if not {"ffnn", "rnn"} <= set(summaries):
        return {}
    data_of = {**results, "runs": summaries}
    out: dict[str, RunVerdict] = {}
    for entry in registered(every=True):
        data = data_of.get(entry.name)
        if entry.verdict_of is not None and data and {"ffnn", "rnn"} <= set(data):
            out[cast(str, entry.verdict)] = entry.verdict_of(data)
    return out

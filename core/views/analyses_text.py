"""What the Analyses page writes beside its figures (pages only draw): the verdict lines, the
scatter's captions, the exposure quadrants' table and flips, the budget's plateaus, the audit's tables and
the slices' rows — computed from the analyses' results read typed (:mod:`core.analyses.analysis_results`),
so the page gathers inputs, calls core and draws. Each function takes the typed result (a worker job's JSON is read
typed once, where the page takes it: :func:`core.analyses.registry.read_result`)."""
from __future__ import annotations

from typing import Any, Mapping, cast

import numpy as np

from core.analyses.analysis_results import (
    AuditView,
    BudgetView,
    ExposedMember,
    ExposureView,
    Scatter,
    SlicesView,
    Vulnerability,
)
from core.analyses.verdicts import RepeatedVerdicts, RunVerdict, repeated_verdict_sentence
from core.foundations.names import ARCH_NAMES
from core.views.run_text import slice_tpr_cell


# ---------------------------------------------------------------------------- verdicts
def run_verdict_line(v: RunVerdict | None) -> str | None:
    """"**This run:** <value> — <text>" (the verdict's own word: one run reads "inconclusive (one repeat)")."""
    if v is None:
        return None
    return f"**This run:** {v.value} — {v.text}"


def repeated_line(repeated: RepeatedVerdicts | None, key: str) -> str | None:
    """The verdict ``key`` over the cached repeats (None where there is none), as the tab under its analysis
    prints it."""
    v = repeated.verdicts.get(key) if repeated is not None else None
    if v is None:
        return None
    return f"**Over {v.n} paired repeats:** {repeated_verdict_sentence(v)}"


def repeated_summary(r: RepeatedVerdicts, n_rep: int) -> tuple[str, str | None]:
    """Every verdict over the ``n_rep`` cached repeats (one Markdown block) and the note of the analyses that
    some repeat lacks a number for (None when none)."""
    lines = [f"* {key.replace('_', ' ')} ({v.analysis}): {repeated_verdict_sentence(v)}" for key, v in r.verdicts.items()]
    text = (f"**Over {n_rep} paired repeats** (the cached repeats of both runs; repeat r of FFNN and RNN on one "
            "split; 95 % t interval of the paired difference; *inconclusive* where it contains 0):\n" + "\n".join(lines))
    return text, ("; ".join(r.missing.values()) if r.missing else None)


# ---------------------------------------------------------------------------- entropy scatter
def _number(x: float | None) -> str:
    return "∞" if x is None else f"{x:.3g}"


def scatter_attacks(undefended: Mapping[str, Scatter], shown: Mapping[str, Scatter]) -> tuple[list[str], int]:
    """The attacks both the undefended scatter and the shown one (perhaps behind a defense) hold, and the
    index of the one to pick first (the shadow attack where present)."""
    first, now = next(iter(undefended.values())), next(iter(shown.values()))
    attacks = [a for a in first.attacks if a in now.attacks]
    return attacks, attacks.index("shadow") if "shadow" in attacks else 0


def scatter_notes(arch: str, sc: Scatter, attack: str) -> tuple[str, list[str]]:
    """One architecture's heading (its attack accuracy) and captions: how the attack decides in this plane (the
    real threshold, or its surrogate's agreement), the best quadrant and the mean APE of members and non-members."""
    entry = sc.attacks[attack]
    notes = []
    if entry.surrogate is not None:
        notes.append(f"Surrogate on (entropy, cross-entropy) agrees with the attack on {entry.surrogate.agreement:.1%} "
                     "of the records: the rest of its decisions use more than these two signals.")
    elif entry.boundary is not None:
        notes.append(f"Threshold: member iff {entry.boundary.signal} ≤ {_number(entry.boundary.threshold)}.")
    q = sc.quadrant
    rule = (f" (CE ≤ {q.cross_entropy_max:.3g} and H ≤ {q.entropy_max:.3g})"
            if q.cross_entropy_max is not None and q.entropy_max is not None else "")
    if q.n_scored is not None:
        notes.append(f"Best quadrant{rule}, chosen on half the records: accuracy {q.accuracy:.3f} on the other "
                     f"{q.n_scored} (held out, comparable with the attack's).")
    else:  # a result written before the split: the best of every rule on the records it scores
        notes.append(f"Best quadrant{rule}: accuracy {q.accuracy:.3f}, chosen on these records (it overstates).")
    notes.append(f"Mean APE: members {sc.mean_ape.members:.3g}, non-members {sc.mean_ape.non_members:.3g}.")
    return f"**{ARCH_NAMES[arch]}** · attack accuracy {entry.accuracy:.3f}", notes


def scatter_separation(scatters: Mapping[str, Scatter], scale: str, n_boot: int = 1000,
                       seed: int = 0) -> str:
    """One sentence on how far apart members and non-members sit in the scatter *as it is drawn*: on the log view
    the gap between the populations' median log₁₀ APE (decades: where the clouds' centres lie), on the linear view
    the gap between their mean APE (nats: what the verdict reads); per architecture with a 95 % stratified bootstrap
    interval over the records (the same resampled records for both), and which architecture the figure shows
    separating them more — stated only where the interval of the difference excludes 0."""
    archs = [a for a in ("ffnn", "rnn") if a in scatters]
    member = {a: np.asarray(scatters[a].membership, bool) for a in archs}
    log = scale == "log"
    values = {a: (np.asarray(scatters[a].log10_ape, np.float64) if log
                  else 10.0 ** np.asarray(scatters[a].log10_ape, np.float64)) for a in archs}
    stat = np.median if log else np.mean
    gap = {a: float(stat(values[a][~member[a]]) - stat(values[a][member[a]])) for a in archs}
    unit, what = ("decades", "median log₁₀ APE") if log else ("nats", "mean APE")
    same = len(archs) == 2 and np.array_equal(member["ffnn"], member["rnn"])
    rng = np.random.default_rng(seed)
    ci: dict[str, tuple[float, float]] = {}
    diff_ci = None
    if all(member[a].any() and (~member[a]).any() for a in archs):
        boots = {}
        for a in archs:
            mem, non = np.flatnonzero(member[a]), np.flatnonzero(~member[a])
            r = np.random.default_rng(seed) if same else rng  # paired: the same resampled records
            im = mem[r.integers(0, len(mem), (n_boot, len(mem)))]
            inn = non[r.integers(0, len(non), (n_boot, len(non)))]
            v = values[a]
            boots[a] = (np.median(v[inn], 1) - np.median(v[im], 1)) if log else (v[inn].mean(1) - v[im].mean(1))
            ci[a] = cast("tuple[float, float]", tuple(float(x) for x in np.quantile(boots[a], [0.025, 0.975])))
        if same:
            diff_ci = tuple(float(x) for x in np.quantile(boots["ffnn"] - boots["rnn"], [0.025, 0.975]))
    parts = [f"{ARCH_NAMES[a]} {gap[a]:+.3g}" + (f" [{ci[a][0]:+.3g}, {ci[a][1]:+.3g}]" if a in ci else "")
             for a in archs]
    head = (f"**In this {'log' if log else 'linear'} view**, non-members' minus members' {what}: "
            + ", ".join(parts) + f" {unit} (95 % over records)")
    if len(archs) < 2:
        return head + "."
    if diff_ci is None:
        return head + "; the two panels do not show the same records, so no comparison is drawn."
    lo, hi = diff_ci
    if hi < 0:
        tail = "the RNN separates members from non-members more"
    elif lo > 0:
        tail = "the FFNN separates members from non-members more"
    else:
        tail = "neither architecture separates them more (the interval of the difference holds 0)"
    return (head + f": {tail} — FFNN − RNN {gap['ffnn'] - gap['rnn']:+.3g} [{lo:+.3g}, {hi:+.3g}] {unit}"
            + ". One run: a description of these records, not a verdict.")


def exposed_members(rows: list[ExposedMember], top: int) -> list[tuple[int, str]]:
    """The first ``top`` most exposed members as (data index, label: score, APE, CE)."""
    out = []
    for r in rows[:top]:
        if r.index is None:  # the page's rows carry it (core.analyses.analyses_view.cached_analyses)
            raise ValueError(f"the most exposed member at position {r.position} has no data index to show")
        out.append((r.index, f"score {r.score:.3f} · APE {r.ape:.3g} · CE {r.cross_entropy:.3g}"))
    return out


def vulnerability_notes(vulnerability: Mapping[str, Vulnerability]) -> list[str]:
    """Per architecture: its best validation epoch and its generalization gap at the end (none without a gap)."""
    notes = []
    for arch, v in vulnerability.items():
        if v.gap_final is not None:
            notes.append(f"{ARCH_NAMES[arch]}: best validation epoch {v.best_val_epoch}; generalization gap "
                         f"(train − validation utility) at the end {v.gap_final:.3g}")
    return notes


# ---------------------------------------------------------------------------- exposure per record
def quadrant_rows(view: ExposureView, fpr: str, names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The quadrants at ``fpr`` as table rows (``names``: quadrant → its label): members with their share and
    Clopper–Pearson interval, the mean over repeats where there are several, and the non-members (false alarms)."""
    q = view.quadrants[fpr]
    rows = []
    for c in q.members:
        row: dict[str, Any] = {"quadrant": names[c.name], "members": c.count, "of": c.n,
                               "share": f"{c.share:.1%} [{c.share_low:.1%}, {c.share_high:.1%}]"}
        if (c.repeats or 1) > 1:
            row[f"mean over {c.repeats} repeats [95 %]"] = f"{c.mean_count:.1f} [{c.count_low:.1f}, {c.count_high:.1f}]"
        row["non-members (false alarms)"] = q.non_member_count(c.name)
        rows.append(row)
    return rows


def exposure_caption(v: ExposureView, fpr: str) -> str:
    """The realised FPRs, N and whether the counts have an interval over cached repeats."""
    q = v.quadrants[fpr]
    seeds = v.repeat_seeds or ()
    over = (f"counts also over {1 + len(seeds)} cached repeats (mean, 95 % t interval)" if seeds else
            "one repeat cached, so no interval over repeats (run the preset with repeats on Train & attack, or compare "
            "--repeats N, to get one)")
    return (f"Realised FPR: FFNN {q.a.fpr_realised:.2%}, RNN {q.b.fpr_realised:.2%} (N = {q.members[0].n} members; "
            f"shares with Clopper–Pearson 95 % intervals; {over}).")


def flip_lines(v: ExposureView, fpr: str, behind: str, value: float) -> list[str]:
    """Per architecture, the members that stop / start being exposed behind ``behind`` = ``value`` (none without)."""
    return [f"**{ARCH_NAMES[arch]}** behind {behind} = {value:g}: {by[fpr].n_stopped} members stop being exposed, "
            f"{by[fpr].n_started} start, {by[fpr].kept} stay exposed (of {by[fpr].n_members})."
            for arch, by in (v.flips or {}).items()]


def first_record(v: ExposureView, fpr: str) -> int:
    """The record to show first: the first member only the RNN exposes at ``fpr`` (else the first record)."""
    return next((i for i, qn in enumerate(v.quadrants[fpr].quadrant) if qn == "only_b" and v.membership[i]), 0)


def record_notes(v: ExposureView, position: int) -> tuple[int, bool, str, dict[str, str]]:
    """The record at ``position``: its data index, membership, heading, and per architecture its score, loss
    and entropy."""
    index, member = int(v.records[position]), bool(v.membership[position])
    title = f"**Record {position}** (data index {index}, {'member' if member else 'non-member'})"
    notes = {arch: f"{ARCH_NAMES[arch]}: {v.attack} score {_g(v.scores[arch][position])} · loss "
                   f"{_g(v.cross_entropy[arch][position])} · entropy {_g(v.ape[arch][position])}" for arch in v.archs}
    return index, member, title, notes


def _g(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


# ---------------------------------------------------------------------------- reference budget
def budget_notes(budgets: Mapping[str, BudgetView]) -> list[str]:
    """Per architecture: where each attack's curve flattens (within 0.01 AUC of all references), or that no
    plateau was seen."""
    out = []
    for arch, b in budgets.items():
        parts = []
        for n, c in b.curves.items():
            if c.flattens_at is not None:
                parts.append(f"{n} flattens at {c.flattens_at} of {c.n_available} references (within 0.01 AUC of "
                             "all of them)")
            else:
                k = len(c.points)
                parts.append(f"{n}: no plateau seen over {k} budget{'s' * (k != 1)} (up to {c.n_available} "
                             "references; a plateau needs at least three, one beyond it)")
        out.append(f"{ARCH_NAMES[arch]}: {', '.join(parts)}.")
    return out


# ---------------------------------------------------------------------------- audited ε
def audit_rows(audits: Mapping[str, AuditView]) -> list[dict[str, Any]]:
    """Per architecture: the audited ε, best k, the accountant's ε, the attack's ε̂, the canary run's utility
    and whether every guess was right (the bound then set by m)."""
    rows = []
    for a, v in audits.items():
        acc = v.accountant_epsilon
        rows.append({"arch": ARCH_NAMES[a], "audited ε": round(v.audited_epsilon, 3), "best k": v.audit.best_k,
                     "accountant ε (RDP / PRV)": "—" if acc is None else f"{_g(acc.rdp)} / {_g(acc.prv)}",
                     f"attack ε̂ ({v.attack})": round(v.attack_epsilon_lower_bound, 3),
                     "canary-run validation utility": round(v.utility_val, 3),
                     "every guess right": "yes: m's ceiling" if v.audit.saturated else ""})
    return rows


def audit_saturated(audits: Mapping[str, AuditView]) -> bool:
    """Whether any architecture's every guess at the best k was right."""
    return any(v.audit.saturated for v in audits.values())


def estimator_rows(audits: Mapping[str, AuditView]) -> list[dict[str, str]]:
    """Per architecture: the f-DP bound (μ, its ε, best k) and the Gaussian-DP estimate with its interval."""
    rows = []
    for a, v in audits.items():
        f, g = v.estimators.fdp_bound, v.estimators.gdp_estimate
        rows.append({"arch": ARCH_NAMES[a],
                     "f-DP bound μ ≥ (ε at δ ≥), best k": f"{_number(f.mu)} ({_number(f.epsilon)}), k = {f.best_k}",
                     "Gaussian-DP estimate μ̂ [95 %] (ε̂ [95 %])": "perfect split: no finite estimate" if g.saturated
                     else f"{_number(g.mu)} [{_number(g.mu_low)}, {_number(g.mu_high)}] ({_number(g.epsilon)} "
                          f"[{_number(g.epsilon_low)}, {_number(g.epsilon_high)}])"})
    return rows


# ---------------------------------------------------------------------------- slices
def slice_rows(s: SlicesView, slicing: str) -> list[dict[str, Any]]:
    """Per architecture and slice of ``slicing``: members, non-members, AUC and TPR at 1 % FPR with their
    intervals, and whether the slice is too small to read."""
    return [{"arch": ARCH_NAMES[a], "slice": r.slice, "members": r.n_members, "non-members": r.n_non_members,
             "AUC [95 %]": "—" if r.auc is None else f"{r.auc:.3f} [{r.auc_low:.3f}, {r.auc_high:.3f}]",
             "TPR@1 % FPR": "—" if r.tpr_at_1pct is None else slice_tpr_cell(r),
             "too small": "yes" if r.too_small else ""}
            for a, by in s.archs.items() for r in by[slicing]]


def slices_caption(s: SlicesView) -> str:
    return (f"{s.attack} per slice; a slice with fewer than {s.min_records} members or non-members is marked too "
            "small (its interval is wide or degenerate: read it as inconclusive); with fewer than 100 non-members a "
            "slice cannot resolve 1 % FPR, so its TPR is the TPR at 0 false positives (FPR < 1/n), and says so.")

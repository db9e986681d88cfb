"""The words and tables of a run's sections, shared by the one view of a run (:mod:`core.views.run_view`),
which the Train & attack page and the HTML run report both render, and by the pages that quote them
(the verdict lines, the notes, the reproduce commands, the per-record views' tables). Text only, built
from the typed summaries: nothing here draws, with Streamlit or in HTML pages."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.analyses.analysis_results import BudgetView, ExposureView, SliceRow, SlicesView
from core.analyses.comparison_results import ComparisonResult, MetricComparison
from core.experiment.fidelity import matched_utility
from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES
from core.measurement.budget import BudgetCurve, BudgetPoint
from core.measurement.exposure import fpr_label
from core.measurement.stats import Estimate, Verdict
from core.tasks.examples import MemberUnseen, NavigationExamples, TranslationExamples
from core.views.comparison_tables import matched_utility_table, shadow_fidelity_table, strongest_attacks_table
from core.views.record_view_figures import quadrant_names
from core.views.repeat_figures import METRIC_LABELS, VERDICT_MARKS, p_text
from core.views.run_figures import (
    attack_accuracy_curve,
    entropy_comparison,
    metrics_table,
    overview_table,
    roc_curves,
    roc_loglog,
    steps_curves,
    utility_curves,
)
from core.views.style import ci_text, with_ci


@dataclass(frozen=True)
class RunFigures:
    """Every figure and table of a run's results (:func:`run_figures`); ``steps`` is None for a task
    that reports no steps (only navigation does)."""
    overview: pd.DataFrame
    utility: go.Figure
    attack_by_epoch: go.Figure
    steps: go.Figure | None
    metrics: pd.DataFrame
    roc: go.Figure
    roc_loglog: go.Figure
    strongest: pd.DataFrame
    fidelity: pd.DataFrame
    matched: pd.DataFrame
    entropy: go.Figure


def run_figures(summaries: list[RunSummary]) -> RunFigures:
    """Every figure and table of a run's results, from the summaries alone (the Train & attack page
    draws these; the run report writes them)."""
    return RunFigures(
        overview=overview_table(summaries),
        utility=utility_curves(summaries),
        attack_by_epoch=attack_accuracy_curve(summaries),
        steps=steps_curves(summaries),
        metrics=metrics_table(summaries),
        roc=roc_curves(summaries),
        roc_loglog=roc_loglog(summaries),
        strongest=strongest_attacks_table(summaries),
        fidelity=shadow_fidelity_table(summaries),
        matched=matched_utility_table(matched_utility(summaries)),
        entropy=entropy_comparison(summaries),
    )


def reproduce_commands(configs: list[ExperimentConfig], overrides: dict[str, dict[str, Any]]) -> list[str]:
    """The CLI commands that produce each run (``overrides``: arch → the ``--set`` fields)."""
    cmds = []
    for c in configs:
        sets = " ".join(f"--set {k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
                        for k, v in overrides.get(c.arch, {}).items())
        cmds.append(f"python -m core run --task {c.task} --arch {c.arch} --preset {c.preset} {sets} --out {c.arch}.json"
                    .replace("  ", " "))
    return cmds


def _verdict_line(m: MetricComparison, v: Verdict, title: str) -> str:
    """One judged metric's line: ``v`` is its verdict (``m.verdict``, which the callers have checked is there)."""
    d = m.difference
    dz = f", d_z = {d.effect_size:.2f}" if d.effect_size is not None else ""
    return (f"**{title}**: {VERDICT_MARKS[v.value]} — FFNN − RNN {with_ci(Estimate.from_dict(d.diff))}{dz}, "
            f"p (paired t) {p_text(d.p_t)}, p (sign flip) {p_text(d.p_permutation)}, N = {v.n}")


def verdict_lines(comp: ComparisonResult,
                  metrics: tuple[str, ...] = ("attack_accuracy", "attack_auc", "lira_auc")) -> list[str]:
    """The headline of a comparison in markdown: the one answer (where the comparison carries it), the **primary**
    metric's verdict and why it is primary, the secondary metrics' verdicts with Holm-adjusted p-values, then what
    gets no verdict. A comparison without roles (no ``primary`` key) gets one line per metric of ``metrics``."""
    metrics_ = comp.metrics
    verdicts = {n: v for n, m in metrics_.items() if (v := m.verdict) is not None}  # the judged metrics

    def judged(n: str) -> bool:
        return n in verdicts

    if not comp.has_roles:
        return [_verdict_line(metrics_[n], verdicts[n], METRIC_LABELS.get(n, n)) for n in metrics if judged(n)]
    lines = []
    if (ans := comp.answer) is not None:  # the one answer every page gives (core.analyses.arch_answer)
        lines.append(f"**The answer** (the studies' claim on their metric; the same on every page): {ans.sentence()}")
    primary = comp.primary
    if primary and judged(primary.metric):
        lines.append(_verdict_line(metrics_[primary.metric], verdicts[primary.metric], f"Primary — {primary.label}")
                     + f" — primary: {primary.why}")
    secondary = [n for n in ((comp.secondary.metrics or ()) if comp.secondary else ()) if judged(n)]
    if secondary:
        parts = [f"{metrics_[n].label} {verdicts[n].value} (Holm p {p_text(metrics_[n].p_holm_permutation)})"
                 for n in secondary]
        lines.append(f"Secondary, sign-flip p Holm-adjusted over {len(secondary)}: " + "; ".join(parts))
    no = comp.no_verdict or {}
    dup = [f"{metrics_[n].label} ({why})" for n, why in no.items() if metrics_[n].role == "duplicate"]
    fine = [n for n in no if metrics_[n].role == "unresolved"]
    if fine:  # the same number under each name: said once
        dup.append(" and ".join(METRIC_LABELS.get(n, n) for n in fine) + f": {metrics_[fine[0]].label}, a "
                   "rate finer than the data")
    dup += [f"{metrics_[n].label}: each repeat's own 95 % lower bound, side by side (no interval over bounds)"
            for n in no if metrics_[n].role == "bound"]
    if dup:
        lines.append("No verdict: " + "; ".join(dup))
    return lines


SMALL_N_NOTE = ("Intervals are 95 % Student-t intervals over repeats (seeds: split, initialisation, batch order); "
                "the difference is paired by repeat (same seed, same split for both architectures). **holds**: the "
                "interval of FFNN − RNN lies below 0 (the RNN leaks more, as in the studies) and the exact sign-flip "
                "test agrees; **reversed**: both say above 0; **inconclusive**: otherwise. With N = 3 the t interval "
                "is wide (t₂ = 4.30) and the sign-flip test cannot go below p = 0.25; N ≥ 6 reaches 0.031. One "
                "**primary** metric, declared before any number is read (LiRA AUC where LiRA ran, else RMIA AUC, else "
                "the shadow attack's AUC), carries the headline verdict; the other leakage metrics are secondary, "
                "their p-values Holm-adjusted over that family. Advantage (= 2·accuracy − 1 on a balanced set) and a "
                "TPR at an FPR below 1/non-members (the TPR at 0 false positives) are shown without a verdict.")

MATCHED_NOTE = ("Each architecture's victim and shadows train until the victim's validation utility first reaches the "
                "target, then stop (the shadows stop at the victim's epoch: the attacker copies its recipe). The full "
                "runs above are kept; the post-hoc matched view compares checkpoints of them.")


def _token_html(tokens: list[str], probs: list[float]) -> str:
    """Reference tokens shaded by the probability the model gave them (green = confident)."""
    spans = []
    for tok, p in zip(tokens, probs):
        alpha = 0.15 + 0.75 * float(p)
        spans.append(f'<span title="p={p:.3f}" style="background: rgba(46,160,67,{alpha:.2f}); padding:1px 3px; '
                     f'border-radius:3px; margin-right:2px">{html.escape(tok)}</span>')
    return " ".join(spans)


def translation_html(examples: TranslationExamples, arch_name: str) -> str:
    """The translation examples of one architecture as HTML (the page and the report use it)."""
    parts = []
    for group, title in ((True, "Members (in the victim's training set)"), (False, "Non-members")):
        parts.append(f"<p><b>{html.escape(arch_name)} — {title}</b></p>")
        for ex in [e for e in examples.sentences if e.member == group]:
            tokens = ex.tokens
            mean_p = sum(t.prob for t in tokens) / max(len(tokens), 1)
            parts.append(
                f"<p><small>source:</small> {html.escape(ex.source)}<br>"
                f"<small>victim's translation (sentence BLEU {ex.sentence_bleu:.0f}):</small> "
                f"{html.escape(ex.translation)}<br>"
                f"<small>reference, each token shaded by the probability the victim gives it "
                f"(mean {mean_p:.2f}):</small> "
                f"{_token_html([t.token for t in tokens], [t.prob for t in tokens])}</p>")
    return "\n".join(parts)


def _side(s: MemberUnseen | None, default: Any) -> tuple[Any, Any]:
    """A statistic's (member, unseen) values, ``default`` for what the block lacks."""
    if s is None:
        return default, default
    return (default if s.member is None else s.member), (default if s.unseen is None else s.unseen)


def navigation_stats(examples: NavigationExamples, arch_name: str) -> str:
    """One Markdown line: steps, return and success on member vs unseen maps."""
    steps = _side(examples.steps_to_goal, float("nan"))
    ret = _side(examples.episode_return, 0)
    success = _side(examples.success_rate, 0)
    n = examples.n_maps
    maps = f" ({_side(n, '?')[0]} vs {_side(n, '?')[1]} maps)" if n is not None else ""
    return (f"**{arch_name}**{maps} — mean steps to goal: member maps **{steps[0]:.1f}**, "
            f"unseen maps **{steps[1]:.1f}** · mean return {ret[0]:.3f} vs "
            f"{ret[1]:.3f} · goal reached {success[0]:.0%} vs {success[1]:.0%}")


def exposure_table(ex: ExposureView) -> pd.DataFrame:
    """Per FPR and quadrant of :func:`core.analyses.record_views.exposure_view`: members (share with its 95 %
    Clopper–Pearson interval, and the mean count over repeats where repeats are cached) and the
    non-members in the same quadrant (false alarms)."""
    names = quadrant_names(list(ex.archs))
    rows = []
    n0 = len(ex.membership) - sum(ex.membership)
    labels = ex.extra.get("fpr_labels", {})
    for fpr, q in ex.quadrants.items():
        label = labels.get(fpr) or fpr_label(float(fpr), n0)
        for c in q.members:
            repeats = c.repeats or 1
            rows.append({"FPR": label, "exposed by": names[c.name], "members": c.count, "of": c.n,
                         "share [95 % CI]": f"{c.share:.1%} [{c.share_low:.1%}, {c.share_high:.1%}]",
                         "repeats": repeats,
                         "mean count over repeats [95 % CI]": (ci_text(c.mean_count, c.count_low, c.count_high, 1)
                                                               if repeats > 1 else "—"),
                         "non-members (false alarms)": q.non_member_count(c.name)})
    return pd.DataFrame(rows)


def _budget_row(arch: str, name: str, c: BudgetCurve, p: BudgetPoint) -> dict[str, Any]:
    spread = p.draws > 1  # one subset (all references): no spread to show, not a zero-width interval
    tpr = ci_text(p.tpr_at_fpr["0.01"], *((p.tpr_low["0.01"], p.tpr_high["0.01"]) if spread else (None, None)))
    n0 = c.n_non_members
    # fewer than 100 non-members cannot resolve 1 %: the number is the TPR at 0 false positives, named so
    if n0 is not None and math.floor(0.01 * n0 + 1e-9) < 1:
        tpr += f" — TPR at 0 false positives (FPR < 1/{n0})"
    return {"architecture": ARCH_NAMES.get(arch, arch), "attack": ATTACK_NAMES.get(name, name),
            "references": p.n_references, "of": c.n_available, "subsets": p.draws,
            "AUC [spread]": ci_text(p.auc, *((p.auc_low, p.auc_high) if spread else (None, None))),
            "TPR @ 1% FPR [spread]": tpr,
            "flattens at": c.flattens_at if c.flattens_at is not None else "—"}


def budget_table(budgets: dict[str, BudgetView]) -> pd.DataFrame:
    """Per architecture, attack and number of references: AUC and TPR at 1 % FPR with their
    2.5–97.5 % spread over which references were used (:func:`core.analyses.record_views.budget_view`)."""
    return pd.DataFrame([_budget_row(arch, name, c, p) for arch, view in budgets.items()
                         for name, c in view.curves.items() for p in c.points])


def slice_tpr_cell(r: SliceRow) -> str:
    """A slice's TPR at 1 % FPR with its interval, or, where its n non-members cannot resolve 1 %
    (``tpr_resolved`` false), the same number named for what it is: the TPR at 0 false positives."""
    cell = ci_text(r.tpr_at_1pct, r.tpr_low, r.tpr_high)
    if r.tpr_resolved is not False or r.tpr_at_1pct is None:
        return cell
    return f"{cell} — TPR at 0 false positives (FPR < 1/{r.n_non_members})"


def slices_table(view: SlicesView) -> pd.DataFrame:
    """Per architecture, slicing and slice of :func:`core.analyses.record_views.slices_view`: records, AUC and
    TPR at 1 % FPR with their bootstrap 95 % intervals, and whether the slice is too small to read; a
    slice whose non-members cannot resolve 1 % FPR says that its TPR is the TPR at 0 false positives."""
    return pd.DataFrame([
        {"architecture": ARCH_NAMES.get(arch, arch), "slicing": name, "slice": r.slice, "members": r.n_members,
         "non-members": r.n_non_members, "AUC [95 % CI]": ci_text(r.auc, r.auc_low, r.auc_high),
         "TPR @ 1% FPR [95 % CI]": slice_tpr_cell(r),
         "too small": "yes" if r.too_small else ""}
        for arch, by in view.archs.items() for name, rows in by.items() for r in rows])

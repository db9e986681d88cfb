"""Does the same ε (λ, clip ε) cost the RNN more utility? The Training defenses page's question.

At every swept value where both architectures have a point, the utility loss L = 1 − M(defended)/M(undefended)
(paper 000 Def. 4; each repeat against its own undefended run) is compared as FFNN − RNN, paired by repeat, with
:func:`core.measurement.stats.compare`. ``holds`` = the difference is below 0 = the RNN loses more utility (paper
000 Fig. 8). Each value is its own test (not corrected for the grid's other values).

What makes a value not comparable is said, not hidden:

* a model that did not learn (training utility within :data:`core.experiment.fidelity.NEAR_CHANCE` of chance):
  its L is meaningless or saturated, so the value is ``comparable: false`` with the reasons;
* DP-SGD in σ mode: the same σ gives the two architectures different ε, so each row gives both ε and
  ``same_epsilon``; the same ε needs the target-ε grid.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from core.defenses.defense_results import UtilityCost, UtilityCostRow
from core.defenses.registry import get_training
from core.defenses.sweeps import SweepCurves, SweepSummaries, collect_points
from core.experiment.fidelity import NEAR_CHANCE
from core.experiment.results import DefendedPoint, DefenseBaseline
from core.foundations.config import ExperimentConfig
from core.measurement.stats import compare

#: FFNN − RNN of the utility loss below 0 (the RNN loses more) is the study's claim (paper 000 Fig. 8)
EXPECTED = -1
ARCHS = ("ffnn", "rnn")
#: two ε within this relative distance count as "the same ε" (a target-ε grid reaches its target up to
#: the noise search's tolerance)
EPSILON_RTOL = 0.05
ONE_REPEAT = "inconclusive (one repeat)"


def question(mechanism: str, target_epsilon: bool = False) -> str:
    """The page's question for ``mechanism``: "Does the same ε cost the RNN more utility?" (λ, clip ε)."""
    defense = get_training(mechanism)
    symbol = "ε" if defense.accounted else defense.parameter_of(target_epsilon).symbol
    return f"Does the same {symbol} cost the RNN more utility?"


def _learned(block: DefenseBaseline | DefendedPoint, chance: float | None, metric: str) -> bool:
    """Whether a run learned: its training utility (else its validation utility) above chance by more
    than :data:`NEAR_CHANCE` for its metric (unknown chance or utility: assumed learned)."""
    u = block.utility_train
    u = block.utility if u is None else u
    if chance is None or u is None:
        return True
    return float(u) >= chance + NEAR_CHANCE.get(metric, 0.1)


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def utility_cost_comparison(per_repeat: Sequence[SweepCurves], mechanism: str, target_epsilon: bool = False
                            ) -> UtilityCost:
    """The block (see the module docstring) from ``per_repeat[r]`` = (baselines, points) of repeat r,
    as :func:`core.defenses.sweeps.collect_points` returns them (a point: ``value``, ``utility``,
    ``utility_train``, ``utility_loss``, ``epsilon``; a baseline: ``utility``, ``utility_train``,
    ``utility_metric``, ``utility_chance``). A value enters where some repeat has a point of both
    architectures with a utility loss; its N is the number of such repeats."""
    defense = get_training(mechanism)
    symbol = defense.parameter_of(target_epsilon).symbol
    sigma_mode = bool(defense.accounted and not target_epsilon)
    have = [a for a in ARCHS if any(pts.get(a) for _, pts in per_repeat)]
    out: dict[str, Any] = {
        "question": question(mechanism, target_epsilon), "metric": "utility_loss", "of": "ffnn - rnn",
        "expected": EXPECTED, "claim": "holds = FFNN − RNN < 0: the RNN loses more utility at the same value "
                                       "(paper 000 Fig. 8)",
        "compared_at": symbol, "values": [], "repeats": len(per_repeat),
        "note": ("σ grid: at the same σ the two architectures' ε differ (ε depends on the steps and the sampling "
                 "rate), so each value answers 'does the same σ cost the RNN more utility?'; the same ε needs the "
                 "target-ε grid" if sigma_mode else None),
        "per_value_tests": "each value is its own paired test (not corrected for the grid's other values)",
    }
    missing = [a for a in ARCHS if a not in have]
    if missing:
        out.update(summary=f"no comparison: no {' or '.join(a.upper() for a in missing)} point"
                           f"{'s' if len(missing) == 1 else ''} yet — both architectures are needed")
        return UtilityCost.from_dict(out)
    values = sorted({p.value for _, pts in per_repeat for a in ARCHS for p in pts.get(a, [])})
    rows: list[dict[str, Any]] = []
    for v in values:
        losses: dict[str, list[float]] = {a: [] for a in ARCHS}
        eps: dict[str, list[float | None]] = {a: [] for a in ARCHS}
        reasons: dict[str, list[int]] = {}  # why not comparable → the repeats (1-based) it holds in
        for r, (bases, pts) in enumerate(per_repeat):
            pair: dict[str, tuple[DefendedPoint, float]] = {}  # each architecture's point at v and its utility loss
            for a in ARCHS:
                point = next((p for p in pts.get(a, []) if p.value == v), None)
                if point is not None and point.utility_loss is not None and a in bases:
                    pair[a] = (point, point.utility_loss)
            if len(pair) < len(ARCHS):
                continue
            for a in ARCHS:
                (p, loss), base = pair[a], bases[a]
                losses[a].append(float(loss))
                eps[a].append(p.epsilon)
                metric = base.utility_metric or "accuracy"
                chance = base.utility_chance
                if not _learned(base, chance, metric):
                    reasons.setdefault(f"the undefended {a.upper()} did not learn ({metric} near chance {chance:.3g}): "
                                       f"its utility loss has no meaning", []).append(r + 1)
                if not _learned(p, chance, metric):
                    reasons.setdefault(f"the {a.upper()} at {symbol} = {v:g} did not learn ({metric} near chance "
                                       f"{chance:.3g}): its loss is saturated at 1 − chance/M(undefended), so the "
                                       f"difference reflects the undefended utilities, not the defense", []).append(r + 1)
        n = len(losses["ffnn"])
        if n == 0:
            continue
        comp = compare("utility_loss", losses["ffnn"], losses["rnn"], expected=EXPECTED)
        verdict = comp.verdict
        assert verdict is not None, "compare gives a verdict where a direction is expected"
        diff = comp.difference.diff
        reasons_shown = [f"{why} (repeat{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))})"
                         for why, rs in reasons.items()]
        row: dict[str, Any] = {
            "value": float(v), "value_name": symbol, "n": n,
            "ffnn": {"utility_loss": _mean(losses["ffnn"]), "per_repeat": losses["ffnn"]},
            "rnn": {"utility_loss": _mean(losses["rnn"]), "per_repeat": losses["rnn"]},
            "difference": {"of": "ffnn - rnn", **comp.difference.to_dict()},
            "verdict": verdict.to_dict(), "label": ONE_REPEAT if n < 2 else verdict.value,
            "sentence": (f"FFNN − RNN {diff.mean:+.3f}, no interval with N = 1" if n < 2 else
                         f"FFNN − RNN {diff.mean:+.3f}, 95 % CI [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}], N = {n}"),
            "comparable": not reasons, "not_comparable": reasons_shown, "epsilon": None, "same_epsilon": None,
        }
        if defense.accounted:
            ef, er = _mean(eps["ffnn"]), _mean(eps["rnn"])
            same = (ef is not None and er is not None and abs(ef - er) <= EPSILON_RTOL * max(abs(ef), abs(er), 1e-12))
            row.update(epsilon={"ffnn": ef, "rnn": er}, same_epsilon=same)
            if not same:
                shown = f"FFNN ε = {'∞' if ef is None else f'{ef:.3g}'}, RNN ε = {'∞' if er is None else f'{er:.3g}'}"
                if sigma_mode:
                    row.update(epsilon_note=f"same σ, not the same ε ({shown})")
                else:  # a target-ε grid that did not reach the same ε: the same-ε question is not answered here
                    row.update(comparable=False)
                    reasons_shown.append(f"the ε reached differ ({shown}): not the same ε")
        rows.append(row)
    typed = [UtilityCostRow.from_dict(r) for r in rows]
    out.update(values=rows, summary=summary_sentence(typed, symbol))
    return UtilityCost.from_dict(out)


def summary_sentence(rows: Sequence[UtilityCostRow], symbol: str) -> str:
    """One line over the values: how many hold / reverse / are inconclusive, and how many are not comparable."""
    if not rows:
        return "no comparison yet: no value has a point of both architectures"
    comparable = [r for r in rows if r.comparable]
    words = {w: sum(1 for r in comparable if r.verdict.value == w) for w in ("holds", "reversed", "inconclusive")}
    n_max = max(r.n for r in rows)
    head = (f"over {len(comparable)} comparable {symbol} value{'s' if len(comparable) != 1 else ''}: "
            + ", ".join(f"{w} {k}" for w, k in words.items()))
    if n_max < 2:
        head += " (one repeat: no interval, no verdict)"
    off = len(rows) - len(comparable)
    return head + (f"; not comparable at {off} value{'s' if off != 1 else ''}" if off else "")


def sweep_utility_cost(runs: dict[str, list[tuple[float | None, ExperimentConfig]]],
                       summaries: Sequence[SweepSummaries], mechanism: str,
                       target_epsilon: bool = False) -> UtilityCost:
    """:func:`utility_cost_comparison` of a sweep's runs (:func:`core.defenses.sweeps.sweep_runs`) from
    ``summaries[r]`` = repeat r's summaries (None where not run yet), as
    :func:`core.defenses.sweeps.collect_points_repeats` reads them."""
    return utility_cost_comparison([collect_points(runs, s, mechanism, target_epsilon) for s in summaries],
                                   mechanism, target_epsilon)


def table_rows(block: UtilityCost) -> list[dict[str, Any]]:
    """The block's values as table rows (the page's table; FFNN − RNN throughout).

    Raises:
        ValueError: the block has values but no ``compared_at`` (the values' column).
    """
    if not block.values:
        return []
    column = block.compared_at
    if column is None:
        raise ValueError("utility_cost_comparison has values but no compared_at: the values' name (σ, ε, …) "
                         "the table's first column is headed with")
    rows: list[dict[str, Any]] = []
    for r in block.values:
        d = r.difference.diff
        row = {column: r.value, "L FFNN": r.ffnn.utility_loss, "L RNN": r.rnn.utility_loss,
               "FFNN − RNN": d.mean, "95 % CI": (f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
                                                 if d.ci_low is not None and d.ci_high is not None else "—"),
               "N": r.n, "verdict": r.label if r.comparable else f"not comparable ({r.label})"}
        if r.epsilon is not None:
            row.update({"ε FFNN": r.epsilon.ffnn, "ε RNN": r.epsilon.rnn})
        row.update(note="; ".join(list(r.not_comparable or ()) + ([r.epsilon_note] if r.epsilon_note else [])))
        rows.append(row)
    return rows

"""The Defenses page's cards as data (core.views.defense_cards): names that say what a low-FPR TPR is, and
intervals that are what they claim."""
from __future__ import annotations

import numpy as np
import pytest

from core.views.defense_cards import accuracy_interval, record_intervals, tpr_label


def test_a_tpr_finer_than_one_non_member_is_named_the_tpr_at_zero_false_positives():
    assert tpr_label(0.001, 200)[0] == "TPR at 0 false positives"
    assert tpr_label(0.001, 200, "LiRA")[0] == "LiRA TPR at 0 false positives"
    label, flag = tpr_label(0.01, 200)  # 2 false positives allowed: flagged, biased up
    assert label == "TPR @ 1 % FPR (≤ 2 FP)" and "biased up" in flag
    assert tpr_label(0.01, 1000) == ("TPR @ 1 % FPR", None)  # 10 false positives: an estimate


def test_accuracy_interval_is_clopper_pearson():
    lo, hi = accuracy_interval(0.6, 200)
    assert 0.52 < lo < 0.6 < hi < 0.67
    assert accuracy_interval(1.0, 50)[1] == 1.0 and accuracy_interval(0.0, 50)[0] == 0.0


def test_record_intervals_read_the_stored_scores():
    class P:  # the two attributes record_intervals reads
        rng = np.random.default_rng(0)
        y = np.r_[np.ones(100, bool), np.zeros(100, bool)]
        records = {"membership": y.tolist(), "scores": {"lira": (rng.normal(size=200) + y).tolist()}}

    out = record_intervals(P, ["lira", "rmia"])
    assert set(out) == {"lira"}  # no stored scores: no interval invented
    e = out["lira"]
    assert e.ci_low < e.mean < e.ci_high and e.n == 200 and e.mean == pytest.approx(0.76, abs=0.08)
    # the same AUC as the bootstrap's, and an interval of about its width
    from core.measurement.bootstrap import bootstrap_metric
    b = bootstrap_metric(np.asarray(P.records["scores"]["lira"]), P.y, "auc", n_boot=2000)
    assert e.mean == pytest.approx(b.mean) and e.ci_high - e.ci_low == pytest.approx(b.ci_high - b.ci_low, rel=0.2)


def test_a_stored_point_gets_each_attack_its_own_cards_and_the_guarantee_as_a_caption():
    import json
    from pathlib import Path

    from core.experiment.results import DefendedPoint, DefenseBaseline
    from core.views.defense_cards import point_cards

    run = json.loads((Path(__file__).parent / "data/defense_layouts/defend_dirichlet.json").read_text())
    point, base = DefendedPoint.from_dict(run["points"][0]), DefenseBaseline.from_dict(run["baseline"])
    n0 = int(sum(not m for m in point.records["membership"]))
    cards, intervals, guarantee = point_cards(point, base, n0)
    labels = [c.label for c in cards]
    assert labels[:3] == ["attack accuracy", "AUC", "ε̂ lower bound"]
    low = "TPR at 0 false positives" if n0 < 1000 else "TPR @ 0.1 % FPR"
    assert [c.label for c in cards if c.row in ("lira", "rmia")] == ["LiRA AUC", f"LiRA {low}", "RMIA AUC", f"RMIA {low}"]
    lira_tpr = next(c for c in cards if c.label == f"LiRA {low}")
    assert lira_tpr.value == f"{point.attacks['lira'].tpr_at_01pct_fpr:.3f}"  # LiRA's own, not the larger of two
    assert not any(c.label.startswith(("δ", "ε (theory)")) for c in cards)
    assert guarantee.startswith("Guarantee at this value: ") and (point.privacy_note or "") in guarantee
    assert intervals.startswith("95 % intervals — accuracy [") and "LiRA AUC [" in intervals

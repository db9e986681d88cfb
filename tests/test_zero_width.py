"""No number is shown with a zero-width interval, and none is a finding.

A bootstrap over records cannot leave the observed value when it lies at the metric's bound: every
resample of 12 members that all outrank 12 non-members has AUC 1, so the interval was [1.000, 1.000]
and `python -m core score` called it a leak "(95 % CI [1.000, 1.000], N = 24 records)". The same for a
TPR of 0 at low FPR and for a slice of a few records. At a bound the count is a binomial one (all K of
K), whose exact Clopper–Pearson interval is used instead. Repeats that all give the same value keep
their (zero-width) t interval in the JSON with a note, and are shown as "no spread", never as x [x, x].
"""
import numpy as np
import pytest
from scipy import stats as sps

from core.analyses.scores import advantage_interval, finding_of
from core.measurement.bootstrap import NO_SPREAD, at_bound_interval, bootstrap_metric
from core.measurement.slices import slice_metrics
from core.measurement.stats import ALL_EQUAL, mean_interval
from core.views.style import ci_text as _ci
from core.views.style import with_ci


def _separated(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores where every one of ``m`` members outranks every one of ``n`` non-members."""
    return np.r_[1 + np.arange(m), -np.arange(n)].astype(float), np.r_[np.ones(m, bool), np.zeros(n, bool)]


def test_an_auc_of_one_from_12_plus_12_records_is_not_certain():
    s, y = _separated(12, 12)
    auc = bootstrap_metric(s, y, "auc", n_boot=200)
    assert auc.mean == 1.0 and auc.ci_high == 1.0
    assert auc.ci_low == pytest.approx(0.025 ** (1 / 12)) and auc.ci_low < 0.74  # all 12 of 12 disjoint pairs
    assert auc.method.startswith("Clopper–Pearson at the bound")
    assert finding_of(auc)[0] == "leak"  # 0.735 > 0.5: still a leak, now on an interval that can say no
    s5, y5 = _separated(5, 5)
    small = bootstrap_metric(s5, y5, "auc", n_boot=200)
    assert small.ci_low == pytest.approx(0.025 ** (1 / 5)) and small.ci_low < 0.5  # 5 + 5 cannot show a leak
    assert finding_of(small)[0] == "inconclusive"  # was "leak" on [1.000, 1.000]
    below = bootstrap_metric(-s, y, "auc", n_boot=200)
    assert (below.ci_low, below.ci_high) == (0.0, pytest.approx(1 - 0.025 ** (1 / 12)))


def test_the_exact_interval_at_the_bound_covers_the_true_auc():
    """Simulated: members ~ N(d, 1), non-members ~ N(0, 1) with true AUC Φ(d/√2) = 0.97, 12 + 12 records,
    20,000 trials. Over all trials, the interval given at the bound may lie above the true AUC in at most
    α/2 = 2.5 % of them (plus Monte-Carlo error). Treating the m·n = 144 pairs as independent (the mistake
    the exact bound avoids) would put it above the true AUC in every trial that reaches the bound."""
    rng = np.random.default_rng(0)
    m = n = 12
    true_auc = 0.97
    d = np.sqrt(2) * sps.norm.ppf(true_auc)
    trials = 20_000
    mem = rng.normal(d, 1, (trials, m))
    non = rng.normal(0, 1, (trials, n))
    at_one = mem.min(1) > non.max(1)  # every pair ordered rightly: AUC 1
    low, high, _ = at_bound_interval("auc", 1.0, m, n)
    missed = at_one.mean() if low > true_auc else 0.0
    se = np.sqrt(0.025 * 0.975 / trials)
    assert at_one.mean() > 0.05  # the bound is reached often enough here for the check to bite
    assert missed <= 0.025 + 3 * se
    wrong_low = 0.025 ** (1 / (m * n))  # K = 144 "independent" pairs
    assert wrong_low > true_auc and at_one.mean() > 0.025 + 3 * se  # that rule would fail this test


def test_a_tpr_of_zero_and_an_advantage_of_one_get_exact_intervals():
    s, y = _separated(20, 20)
    tpr = bootstrap_metric(-s, y, "tpr@0.01", n_boot=100)
    assert tpr.mean == 0 and tpr.ci_low == 0 and tpr.ci_high == pytest.approx(1 - 0.025 ** (1 / 20))
    adv = advantage_interval(y.copy(), y, n_boot=200)  # every member flagged, no non-member
    assert adv.mean == 1.0 and adv.ci_high == 1.0
    assert adv.ci_low == pytest.approx(0.0125 ** (1 / 20) - (1 - 0.0125 ** (1 / 20)))
    assert at_bound_interval("advantage", 0.5, 20, 20) is None and at_bound_interval("auc", 0.7, 9, 9) is None


def test_scores_that_do_not_vary_say_so():
    y = np.r_[np.ones(10, bool), np.zeros(10, bool)]
    e = bootstrap_metric(np.zeros(20), y, "auc", n_boot=100)
    assert e.mean == 0.5 and e.ci_low == e.ci_high == 0.5 and NO_SPREAD in e.note
    assert _ci(e.mean, e.ci_low, e.ci_high) == "0.500 (no spread)"


def test_a_slice_of_few_records_at_the_bound_has_a_wide_interval():
    s, y = _separated(3, 3)
    (r,) = slice_metrics("class", ["a"] * 6, s, y)
    assert r.too_small and r.auc == 1.0 and r.tpr_at_1pct == 1.0
    assert r.auc_low == pytest.approx(0.025 ** (1 / 3)) and r.auc_high == 1.0  # 0.292: 3 + 3 records say little
    assert r.tpr_low == pytest.approx(0.025 ** (1 / 3)) and r.tpr_high == 1.0


def test_equal_repeats_are_shown_as_no_spread_not_as_an_interval():
    e = mean_interval([0.5, 0.5, 0.5], bounds=(0.0, 1.0))
    assert (e.ci_low, e.ci_high) == (0.5, 0.5) and ALL_EQUAL in e.note  # the JSON says why it has zero width
    assert with_ci(e) == "0.500 (no spread in N = 3)"
    assert _ci(e.mean, e.ci_low, e.ci_high) == "0.500 (no spread)"
    varied = mean_interval([0.5, 0.5625, 0.5], bounds=(0.0, 1.0))
    assert ALL_EQUAL not in varied.note and with_ci(varied).startswith("0.521 [")


def test_f3_gives_no_verdict_from_repeats_that_all_gave_the_same_accuracy():
    from core.analyses.findings_base import TARGET_REPEATS
    from core.analyses.findings_defenses import f3_verdict

    n = TARGET_REPEATS
    loss = [0.02 + 0.001 * i for i in range(n)]
    constant = [0.5] * n  # an attack that flags everyone: 0.5 on a balanced set
    value, reason = f3_verdict(constant, loss, "translation")
    assert value == "inconclusive" and "zero-width" in reason and "attack accuracy" in reason  # was "holds"
    varied = [0.5 + 0.004 * (-1) ** i for i in range(n)]
    assert f3_verdict(varied, loss, "translation")[0] == "holds"  # TOST with a spread still concludes
    assert f3_verdict(varied, [0.03] * n, "translation")[0] == "inconclusive"


def test_an_exposure_fpr_finer_than_the_non_members_is_named_zero_false_positives():
    """With 12 non-members the exposure thresholds at FPR 1 % and 0.1 % are both the highest non-member
    score: the report's table and the figure said "1.0%" and "0.1%" for the same operating point."""
    from core.analyses.analysis_results import ExposureView
    from core.measurement.exposure import fpr_label, quadrants
    from core.views.record_view_figures import exposure_figure
    from core.views.run_text import exposure_table

    assert fpr_label(0.01, 200) == "FPR 1.0%" and fpr_label(0.001, 200).startswith("0 false positives (FPR < 1/200")
    assert fpr_label(0.01, 12) == "0 false positives (FPR < 1/12; 1.0% asked)"
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(12, bool), np.zeros(12, bool)]
    a, b = rng.normal(size=24) + member, rng.normal(size=24) + member
    view = {"attack": "lira", "archs": ["ffnn", "rnn"], "records": list(range(24)), "membership": member.tolist(),
            "scores": {"ffnn": a.tolist(), "rnn": b.tolist()}, "cross_entropy": {"ffnn": [], "rnn": []},
            "ape": {"ffnn": [], "rnn": []},
            "quadrants": {str(f): quadrants(a, b, member, f).to_dict() for f in (0.01, 0.001)}}
    assert view["quadrants"]["0.01"]["quadrant"] == view["quadrants"]["0.001"]["quadrant"]  # one operating point
    table = exposure_table(ExposureView.from_dict(view))
    assert set(table["FPR"]) == {"0 false positives (FPR < 1/12; 1.0% asked)",
                                 "0 false positives (FPR < 1/12; 0.1% asked)"}
    assert "0 false positives (FPR < 1/12" in exposure_figure(ExposureView.from_dict(view), "0.001").layout.title.text


def test_the_budget_names_its_tpr_at_zero_false_positives_below_100_non_members():
    from core.analyses.analysis_results import BudgetView
    from core.views.record_view_figures import budget_figure
    from core.views.run_text import budget_table

    def budgets(n0: int) -> dict:
        point = {"n_references": 2, "draws": 1, "auc": 0.6, "auc_low": 0.6, "auc_high": 0.6,
                 "tpr_at_fpr": {"0.01": 0.25, "0.001": 0.25}, "tpr_low": {"0.01": 0.25, "0.001": 0.25},
                 "tpr_high": {"0.01": 0.25, "0.001": 0.25}}
        curve = {"attack": "lira", "n_available": 2, "points": [point], "flattens_at": None, "n_members": n0,
                 "n_non_members": n0}
        return {"ffnn": {"curves": {"lira": curve}}}

    small, large = budgets(12), budgets(200)
    def typed(budgets: dict) -> dict[str, BudgetView]:
        return {a: BudgetView.from_dict(v) for a, v in budgets.items()}

    assert budget_table(typed(small))["TPR @ 1% FPR [spread]"][0] == "0.250 — TPR at 0 false positives (FPR < 1/12)"
    assert budget_table(typed(large))["TPR @ 1% FPR [spread]"][0] == "0.250"
    titles = [a.text for a in budget_figure(typed(small)).layout.annotations]
    assert "lira TPR at 0 false positives (FPR < 1/12)" in titles and "lira TPR at 1 % FPR" not in titles
    assert "lira TPR at 1 % FPR" in [a.text for a in budget_figure(typed(large)).layout.annotations]


def test_the_budget_csv_leaves_the_spread_of_one_subset_empty():
    from core.analyses.analysis_results import BudgetView
    from core.views.analysis_tables import budget_points_table

    def point(draws: int, low: float, high: float) -> dict:
        return {"n_references": 2, "draws": draws, "auc": 0.6, "auc_low": low, "auc_high": high,
                "tpr_at_fpr": {"0.01": 0.2}, "tpr_low": {"0.01": low - 0.4}, "tpr_high": {"0.01": high - 0.4}}

    budget = {"ffnn": {"curves": {"lira": {"n_available": 4, "points": [point(1, 0.6, 0.6), point(4, 0.55, 0.65)],
                                           "flattens_at": None}}}}
    t = budget_points_table({arch: BudgetView.from_dict(v) for arch, v in budget.items()})
    assert t["auc_low"].isna().tolist() == [True, False] and t["tpr_high_0.01"].isna().tolist() == [True, False]
    assert t["auc_low"][1] == 0.55 and t["tpr_high_0.01"][1] == pytest.approx(0.25)

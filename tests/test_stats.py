"""core.measurement.stats: intervals cover at their stated rate, the paired difference finds a planted effect
and calls a null one inconclusive, the verdict's three values, bootstrap and ROC bands."""
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from core.measurement.bootstrap import (
    RocBand,
    _jackknife,
    _metric_rows,
    bootstrap_metric,
    low_fpr_note,
    roc_band_bootstrap,
    roc_band_repeats,
)
from core.measurement.metrics import roc_auc, roc_curve, tpr_at_fpr
from core.measurement.stats import (
    Comparison,
    Estimate,
    PairedDifference,
    Verdict,
    compare,
    interval_from_moments,
    mean_interval,
    min_repeats_for,
    paired_difference,
    sign_flip_pvalue,
    verdict,
)


def test_t_interval_covers_the_true_mean_at_the_stated_rate():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        e = mean_interval(rng.normal(0.7, 0.03, size=5))
        hits += e.ci_low <= 0.7 <= e.ci_high
    assert 0.91 <= hits / 400 <= 0.98


def test_t_interval_by_hand_and_single_repeat():
    e = mean_interval([1.0, 2.0, 3.0])
    half = sps.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)
    assert e.mean == 2.0 and e.ci_low == pytest.approx(2 - half) and e.ci_high == pytest.approx(2 + half)
    assert e.n == 3 and e.values == (1.0, 2.0, 3.0) and e.method == "t"
    one = mean_interval([0.8])
    assert one.ci_low is None and one.ci_high is None and one.n == 1 and "one repeat" in one.note
    with pytest.raises(ValueError):
        mean_interval([1.0, float("nan")])


def test_t_interval_is_clipped_to_the_metrics_range_and_says_so():
    # three AUCs near 1 (the multi30k_cpu repeats): the raw t interval runs past 1.0
    raw = mean_interval([0.9975, 1.0, 0.995])
    assert raw.ci_high > 1.0
    e = mean_interval([0.9975, 1.0, 0.995], bounds=(0.0, 1.0))
    assert e.ci_high == 1.0 and e.ci_low == pytest.approx(raw.ci_low) and e.mean == raw.mean and "clipped" in e.note
    low = mean_interval([0.0, 0.01, 0.05], bounds=(0.0, 1.0))
    assert low.ci_low == 0.0 and low.ci_high < 1.0 and "at 0" in low.note
    inside = mean_interval([0.5, 0.6, 0.7], bounds=(0.0, 1.0))
    assert inside == mean_interval([0.5, 0.6, 0.7]) and inside.note == ""
    eps = mean_interval([0.0, 0.1, 0.9], bounds=(0.0, None))  # ε̂: no upper end
    assert eps.ci_low == 0.0 and eps.ci_high == pytest.approx(mean_interval([0.0, 0.1, 0.9]).ci_high)
    # the paired comparison clips each architecture's interval, never the difference
    c = compare("attack_auc", [0.9975, 1.0, 0.995], [0.99, 0.99, 0.97], expected=-1, bounds=(0.0, 1.0))
    assert c.difference.a.ci_high == 1.0 and c.difference.b.ci_high == 1.0
    d = mean_interval(np.array([0.9975, 1.0, 0.995]) - np.array([0.99, 0.99, 0.97]))
    assert c.difference.diff == d and d.ci_low < 0  # unclipped: a difference of AUCs may be negative


def test_moments_interval_is_clipped_too():
    raw = interval_from_moments(0.99, 0.05, 8)
    e = interval_from_moments(0.99, 0.05, 8, note="one repeat: draw noise only", bounds=(0.0, 1.0))
    assert raw.ci_high > 1.0 and e.ci_high == 1.0 and e.ci_low == pytest.approx(raw.ci_low)
    assert e.note.startswith("one repeat: draw noise only; interval clipped")


def test_estimate_json_round_trip_has_no_nan():
    for e in (mean_interval([0.1, 0.2, 0.4]), mean_interval([0.5])):
        text = json.dumps(e.to_dict(), allow_nan=False)
        d = json.loads(text)
        assert {"mean", "ci_low", "ci_high", "n", "values"} <= set(d)
        assert Estimate.from_dict(d) == e


def _synthetic(rng, n, mu):
    """n members ~ N(mu, 1), n non-members ~ N(0, 1): AUC = Φ(mu/√2)."""
    return np.r_[rng.normal(mu, 1, n), rng.normal(0, 1, n)], np.r_[np.ones(n, bool), np.zeros(n, bool)]


def test_fast_metrics_equal_the_reference_metrics():
    rng = np.random.default_rng(1)
    for n in (7, 50):
        s, y = _synthetic(rng, n, 0.8)
        s = np.round(s, 1)  # ties
        pos, neg = s[y][None], s[~y][None]
        assert _metric_rows("auc", pos, neg)[0] == pytest.approx(roc_auc(s, y))
        for f in (0.0, 0.01, 0.1, 0.3):
            assert _metric_rows(f"tpr@{f}", pos, neg)[0] == pytest.approx(tpr_at_fpr(s, y, f))


@pytest.mark.parametrize("metric", ["auc", "tpr@0.1", "tpr@0.05"])
def test_jackknife_closed_form_equals_leaving_each_record_out(metric):
    rng = np.random.default_rng(2)
    s, y = _synthetic(rng, 30, 1.0)
    s = np.round(s, 1)
    pos, neg = s[y], s[~y]
    brute = [_metric_rows(metric, np.delete(pos, i)[None], neg[None])[0] for i in range(len(pos))]
    brute += [_metric_rows(metric, pos[None], np.delete(neg, j)[None])[0] for j in range(len(neg))]
    np.testing.assert_allclose(_jackknife(metric, pos, neg), brute)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_auc_interval_covers_the_true_auc(method):
    rng = np.random.default_rng(3)
    mu = 1.0
    truth = sps.norm.cdf(mu / math.sqrt(2))
    hits, sims = 0, 200
    for i in range(sims):
        s, y = _synthetic(rng, 60, mu)
        e = bootstrap_metric(s, y, "auc", n_boot=400, method=method, seed=i)
        hits += e.ci_low <= truth <= e.ci_high
        assert e.method.startswith("bootstrap-")
    assert 0.89 <= hits / sims <= 0.985


def test_bootstrap_tpr_at_low_fpr_is_wide_with_few_non_members_and_says_so():
    rng = np.random.default_rng(4)
    s, y = _synthetic(rng, 200, 1.5)
    low = bootstrap_metric(s, y, "tpr@0.001", n_boot=300)
    assert "no false positive" in low.note and low.n == 400
    auc = bootstrap_metric(s, y, "auc", n_boot=300)
    assert low.half_width > auc.half_width  # the low-FPR number is the less certain one
    assert "1000 non-members" in low_fpr_note(200, 0.001)
    assert "2 highest" in low_fpr_note(200, 0.01)


def test_a_rate_at_its_bound_gets_an_exact_interval_not_a_zero_width_bootstrap():
    s = np.r_[np.zeros(20), np.ones(20)]  # members score below every non-member: TPR at low FPR is 0 everywhere
    y = np.r_[np.ones(20, bool), np.zeros(20, bool)]
    e = bootstrap_metric(s, y, "tpr@0.01", n_boot=100)
    # every resample gives 0 (BCa undefined, the percentile interval [0, 0]): 0 of 20 members is a binomial
    # count, whose exact (Clopper–Pearson) 95 % interval is [0, 1 − 0.025^(1/20)] = [0, 0.168]
    assert e.mean == 0 and e.ci_low == 0 and e.ci_high == pytest.approx(1 - 0.025 ** (1 / 20))
    assert e.method.startswith("Clopper–Pearson at the bound")


def test_paired_difference_detects_a_planted_effect():
    rng = np.random.default_rng(5)
    split = rng.normal(0, 0.03, 8)  # shared by both architectures of a repeat (same seed → same split)
    ffnn = 0.62 + split + rng.normal(0, 0.01, 8)
    rnn = 0.70 + split + rng.normal(0, 0.01, 8)
    d = paired_difference(ffnn, rnn)
    assert d.diff.ci_high < 0 and d.p_t < 1e-4 and d.p_permutation == pytest.approx(2 / 2 ** 8)
    assert d.permutation_exact and d.effect_size < -2
    assert verdict(d, expected=-1).value == "holds"
    assert verdict(d, expected=+1).value == "reversed"


def test_null_difference_is_inconclusive_at_about_the_stated_rate():
    rng = np.random.default_rng(6)
    calls = [verdict(paired_difference(rng.normal(0.7, 0.03, 8), rng.normal(0.7, 0.03, 8))).value for _ in range(400)]
    false = sum(c != "inconclusive" for c in calls) / 400
    # at most the nominal 5 % (+ 3 Monte-Carlo standard errors); t and sign test must both reject, so a
    # little below it, but not never (a rule that never concludes would pass an upper bound alone)
    assert 0.005 <= false <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_verdict_three_values_and_n_one():
    ffnn, rnn = [0.6, 0.61, 0.62, 0.6, 0.61, 0.6], [0.7, 0.72, 0.71, 0.7, 0.71, 0.73]
    assert verdict(paired_difference(ffnn, rnn)).value == "holds"
    assert verdict(paired_difference(rnn, ffnn)).value == "reversed"
    assert verdict(paired_difference([0.7, 0.75, 0.65], [0.7, 0.69, 0.71])).value == "inconclusive"
    one = verdict(paired_difference([0.6], [0.7]))
    assert one.value == "inconclusive" and one.n == 1 and "no interval" in one.reason


def test_sign_flip_test_exact_and_monte_carlo():
    assert sign_flip_pvalue([1.0, 1.0, 1.0])[0] == pytest.approx(0.25)  # N = 3 never goes below 2/8
    assert sign_flip_pvalue([0.0, 0.0])[0] == 1.0
    p, exact = sign_flip_pvalue(np.full(20, 0.1) + np.random.default_rng(0).normal(0, 0.01, 20))
    assert not exact and p < 1e-3


def test_a_degenerate_interval_gives_no_verdict():
    # every repeat 1/16 apart (a coarse metric) used to give "holds" with CI [-0.062, -0.062], p_t = 0
    c = compare("attack_accuracy", [0.5, 0.5, 0.5], [0.5625] * 3, -1)
    assert c.verdict.value == "inconclusive"
    assert "zero-width" in c.verdict.reason and "N = 3 cannot reach 95 % with a sign test; 6 can" in c.verdict.reason
    assert c.difference.p_permutation == pytest.approx(0.25)
    # equal differences up to float rounding are the same degenerate case
    assert compare("a", [0.7, 0.8, 0.9, 0.6, 0.7, 0.8], [0.6, 0.7, 0.8, 0.5, 0.6, 0.7], -1).verdict.value == "inconclusive"


def test_a_verdict_needs_the_sign_flip_test_to_reach_the_level():
    assert min_repeats_for(0.95) == 6 and min_repeats_for(0.99) == 8 and min_repeats_for(0.9) == 5
    # N = 5, t interval well clear of 0, but the sign test's p is at least 2/32 > 0.05
    five = compare("attack_auc", [0.6, 0.62, 0.61, 0.6, 0.63], [0.7, 0.73, 0.69, 0.72, 0.7], expected=-1)
    assert five.difference.diff.ci_high < 0 and five.difference.p_t < 0.001
    assert five.verdict.value == "inconclusive" and "N = 5 cannot reach 95 % with a sign test; 6 can" in five.verdict.reason
    # N = 6 with one repeat on the other side: t interval excludes 0, sign test p = 0.094 does not agree
    d = compare("a", [0.60, 0.60, 0.60, 0.60, 0.60, 0.71], [0.70, 0.71, 0.72, 0.73, 0.69, 0.70], -1)
    assert d.difference.diff.ci_high < 0 and d.difference.p_permutation > 0.05
    assert d.verdict.value == "inconclusive" and "sign-flip test does not agree" in d.verdict.reason


def test_comparison_json_round_trip():
    c = compare("attack_auc", [0.6, 0.62, 0.61, 0.6, 0.61, 0.6], [0.7, 0.73, 0.69, 0.7, 0.71, 0.73], expected=-1)
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert d["verdict"]["value"] == "holds" and d["difference"]["of"] == "ffnn - rnn"
    assert set(d["ffnn"]) >= {"mean", "ci_low", "ci_high", "n", "values"}
    back = Comparison.from_dict(d)
    assert back.verdict == c.verdict and back.difference.diff == c.difference.diff
    assert PairedDifference.from_dict(d["difference"]).n == 6 and Verdict.from_dict(d["verdict"]).value == "holds"
    assert compare("utility_val", [0.9, 0.91], [0.85, 0.86]).verdict is None  # no hypothesis, no verdict


def test_a_verdict_is_one_layout_written_and_read_back_as_it_was():
    from core.analyses.comparison_results import MetricComparison
    from core.foundations.errors import ResultFormatError

    c = compare("attack_auc", [0.6, 0.62, 0.61, 0.6, 0.61, 0.6], [0.7, 0.73, 0.69, 0.7, 0.71, 0.73], expected=-1)
    written = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    v = written["verdict"]
    assert list(v) == ["value", "expected", "effect", "ci_low", "ci_high", "effect_size", "n", "reason"]
    assert Verdict.from_dict(v).to_dict() == v and list(Verdict.from_dict(v).to_dict()) == list(v)
    # the comparison's reader holds the same class
    assert MetricComparison.from_dict({"difference": written["difference"], "verdict": v}).verdict == Verdict.from_dict(v)
    undefined = Verdict(value="inconclusive", expected=-1, effect=math.nan, n=1, reason="no interval")
    assert undefined.to_dict() == {"value": "inconclusive", "expected": -1, "effect": None, "ci_low": None,
                                   "ci_high": None, "effect_size": None, "n": 1, "reason": "no interval"}
    with pytest.raises(ResultFormatError, match="verdict.value must be one of holds"):
        Verdict.from_dict({**v, "value": "probably"})
    with pytest.raises(ResultFormatError, match="verdict lacks 'expected'"):
        Verdict.from_dict({"value": "holds", "n": 6})


def test_roc_band_from_bootstrap_contains_the_curve_and_the_truth():
    rng = np.random.default_rng(7)
    s, y = _synthetic(rng, 300, 1.0)
    band = roc_band_bootstrap(s, y, n_boot=300)
    tpr, lo, hi = map(np.asarray, (band.tpr, band.lo, band.hi))
    assert (lo <= tpr + 1e-12).all() and (tpr <= hi + 1e-12).all()
    fpr = np.asarray(band.fpr)
    truth = sps.norm.sf(sps.norm.isf(np.clip(fpr, 1e-9, 1)) - 1.0)  # binormal ROC
    inside = ((lo <= truth) & (truth <= hi))[(fpr >= 0.05) & (fpr < 1)]
    assert inside.mean() >= 0.8
    assert (hi - lo)[fpr >= 0.2].max() < 0.2
    assert RocBand.from_dict(json.loads(json.dumps(band.to_dict()))) == band


def test_roc_band_over_repeats():
    rng = np.random.default_rng(8)
    curves = []
    for _ in range(4):
        s, y = _synthetic(rng, 100, 1.0)
        f, t, _ = roc_curve(s, y)
        curves.append((f, t))
    band = roc_band_repeats(curves)
    assert band.n == 4 and band.method == "t"
    assert all(lo <= m <= hi for lo, m, hi in zip(band.lo, band.tpr, band.hi))
    assert band.tpr[-1] == 1.0
    assert roc_band_repeats(curves[:1]).method == "single"


def test_holm_adjusts_step_down_and_keeps_missing_tests_out_of_the_family():
    from core.measurement.stats import holm

    # sorted 0.01, 0.03, 0.04 → 3·0.01, max(0.03, 2·0.03), max(0.06, 1·0.04)
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []

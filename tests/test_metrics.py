import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from core.measurement.metrics import (
    EpsilonBound,
    best_threshold,
    clopper_pearson,
    empirical_epsilon,
    empirical_epsilon_rows,
    evaluate_attack,
    roc_auc,
    roc_curve,
    tpr_at_fpr,
)

CASES = [
    (np.array([0.9, 0.8, 0.7, 0.6, 0.55, 0.4, 0.3, 0.2]), np.array([1, 1, 0, 1, 0, 1, 0, 0])),
    (np.array([0.5, 0.5, 0.5, 0.2, 0.2, 0.9]), np.array([1, 0, 1, 0, 1, 0])),  # ties
    (np.random.default_rng(0).normal(size=500), np.random.default_rng(1).integers(0, 2, 500)),
]


@pytest.mark.parametrize("scores,y", CASES)
def test_roc_and_auc_match_sklearn(scores, y):
    fpr, tpr, thr = roc_curve(scores, y)
    sk_fpr, sk_tpr, sk_thr = sk_roc_curve(y, scores, drop_intermediate=False)
    np.testing.assert_allclose(fpr, sk_fpr)
    np.testing.assert_allclose(tpr, sk_tpr)
    np.testing.assert_allclose(thr[1:], sk_thr[1:])
    assert roc_auc(scores, y) == pytest.approx(roc_auc_score(y, scores))


def test_tpr_at_low_fpr_by_hand():
    # members score 10..19, non-members 0..9 except one non-member at 100: at FPR 0 nothing is caught
    scores = np.r_[np.arange(10, 20), np.arange(0, 9), 100.0]
    y = np.r_[np.ones(10), np.zeros(10)]
    assert tpr_at_fpr(scores, y, 0.0) == 0.0
    assert tpr_at_fpr(scores, y, 0.1) == 1.0


def test_evaluate_attack_accuracy_and_advantage():
    scores = np.array([0.9, 0.8, 0.2, 0.7, 0.1, 0.3])
    y = np.array([1, 1, 1, 0, 0, 0])
    r = evaluate_attack("x", scores, y, threshold=0.5)
    # decisions: 1 1 0 | 1 0 0 -> TPR 2/3, FPR 1/3
    assert r.accuracy == pytest.approx(4 / 6)
    assert r.advantage == pytest.approx(1 / 3)
    assert r.auc == pytest.approx(roc_auc_score(y, scores))
    assert r.n_members == 3 and r.n_nonmembers == 3
    assert r.roc_fpr[0] == 0.0 and r.roc_tpr[-1] == 1.0


def test_best_threshold_maximises_accuracy():
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    y = np.array([1, 1, 1, 0, 0])
    t = best_threshold(scores, y)
    assert 2.0 < t <= 3.0
    assert ((scores >= t) == y).all()


def test_chance_scores_give_chance_metrics():
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(2000), np.zeros(2000)]
    r = evaluate_attack("random", rng.random(4000), y, 0.5)
    assert abs(r.auc - 0.5) < 0.03 and abs(r.accuracy - 0.5) < 0.03 and abs(r.advantage) < 0.06


def test_empirical_epsilon_is_a_95_percent_lower_bound_on_an_exactly_dp_mechanism():
    """Scores from an exactly ε-DP mechanism (the Laplace mechanism on the membership bit,
    score = b + Lap(1/ε): every tail threshold has TPR/FPR = e^ε exactly). A 95 % lower bound may
    exceed the true ε in at most 5 % of trials (+ Monte-Carlo error). Choosing the threshold on the
    same records it bounds exceeded it in about 7 % (1,000 trials, 1,000 + 1,000 records)."""
    eps, n, trials = 1.0, 1000, 1000
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    rng = np.random.default_rng(1)
    scores = y.astype(float) + rng.laplace(0, 1 / eps, (trials, 2 * n))
    bounds = np.array([r.lower_bound for r in empirical_epsilon_rows(scores, y)])
    exceed = (bounds > eps).mean()
    assert exceed <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / trials)
    assert bounds.mean() > 0.3 * eps  # and it still finds most of the leak (not a bound stuck at 0)
    # one row through the single-run function is the same computation
    assert empirical_epsilon(scores[0], y).lower_bound == pytest.approx(bounds[0])


def test_empirical_epsilon_says_what_it_is_and_bounds_on_the_held_out_half():
    y = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    separated = empirical_epsilon(y.astype(float), y)
    # 100 of 100 held-out members above the threshold, 0 of 100 non-members: ln(CP-lo(1) / CP-hi(0)) at n = 100
    lo, hi = clopper_pearson(100, 100)[0], clopper_pearson(0, 100)[1]
    assert separated.lower_bound == pytest.approx(np.log(lo / hi)) and separated.n_bound == 200
    assert separated.direction == "members above" and separated.estimate is None  # no false positive: ∞
    assert "random half" in separated.method


def test_empirical_epsilon_block_is_the_layout_it_always_wrote():
    """The typed result writes the dict empirical_epsilon returned before it was typed (every key, null ones too,
    in this order), reads it back equal, and a block written before n_bound/method existed reads and writes back as
    it was."""
    y = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    for bound in (empirical_epsilon(y.astype(float), y), empirical_epsilon(np.zeros(400), y)):
        d = bound.to_dict()
        assert list(d) == ["lower_bound", "estimate", "tpr", "fpr", "threshold", "direction", "n_bound", "method"]
        assert EpsilonBound.from_dict(d) == bound and EpsilonBound.from_dict(d).to_dict() == d
    assert empirical_epsilon(np.zeros(400), y).to_dict()["threshold"] is None  # nothing chosen: null, not absent
    old = {"lower_bound": 0.5, "estimate": None, "tpr": 0.25, "fpr": 0.0}
    assert EpsilonBound.from_dict(old).to_dict() == old and list(EpsilonBound.from_dict(old).to_dict()) == list(old)
    with pytest.raises(ValueError):
        empirical_epsilon_rows(np.zeros(5), y)


def test_stored_roc_keeps_the_low_fpr_tpr_of_the_full_curve():
    """A 2,000-record curve thinned evenly to 400 points dropped the corners that the
    low-FPR band reads, understating TPR there; the stored curve now reads the same at every FPR ≤ 0.1."""
    from core.measurement.bootstrap import ROC_GRID, _tpr_on_grid

    rng = np.random.default_rng(3)
    y = np.r_[np.ones(1000, bool), np.zeros(1000, bool)]
    scores = y + rng.normal(0, 1, 2000)
    stored = evaluate_attack("x", scores, y, 0.5)
    full_fpr, full_tpr, _ = roc_curve(scores, y)
    grid = np.array([g for g in ROC_GRID if g <= 0.1])
    assert np.array_equal(_tpr_on_grid(np.array(stored.roc_fpr), np.array(stored.roc_tpr), grid),
                          _tpr_on_grid(full_fpr, full_tpr, grid))
    assert len(stored.roc_fpr) < len(full_fpr) / 2  # still thinned above the low-FPR region


def test_rounded_list_is_pythons_round_float_for_float():
    """The ROC's stored points are rounded vectorised: every float the same as ``round(v, 6)``,
    ties and their neighbourhood (decided by ``round`` itself), signed zeros and non-finite values included."""
    import math

    from core.measurement.metrics import rounded_list
    rng = np.random.default_rng(0)
    values = [rng.random(50_000), rng.random(2000) * 1e-5, (np.arange(1, 50_000) + 0.5) / 1e6,
              np.array([5e-7, 1.5e-6, 0.1234565, 2.5e-7, 0.5, 1.0, 0.0, -0.0, -3e-7, np.inf, -np.inf, np.nan, 1e300])]
    values += [np.arange(n + 1) / n for n in (3, 7, 99, 997, 4096, 30_000)]  # a ROC's fractions
    for v in values:
        got, want = rounded_list(v), [round(float(x), 6) for x in v]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert (g == w and math.copysign(1, g) == math.copysign(1, w)) or (g != g and w != w), (g, w)
    assert rounded_list(np.array([0.123456789]), 3) == [0.123]


def test_clopper_pearson_table_is_the_function_and_read_only():
    from core.measurement.metrics import _clopper_pearson_table, clopper_pearson
    lo, hi = _clopper_pearson_table(40, 0.975)
    want = clopper_pearson(np.arange(41), 40, 0.975)
    assert np.array_equal(lo, want[0]) and np.array_equal(hi, want[1])
    with pytest.raises(ValueError):
        lo[0] = 1.0  # shared between calls: nobody may change it

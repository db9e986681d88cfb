"""The scores file's stored ROC keeps every low-FPR corner (on the `score` path): thinned
to 400 evenly spaced points, a curve of 4,000 records lost the corners below FPR 0.1 that the report's log-log
ROC draws, and read a lower TPR there than the scores give."""
import numpy as np

from core.analyses.scores import _thin
from core.measurement.metrics import roc_curve, tpr_at_fpr


def _tpr_from_points(fpr: tuple, tpr: tuple, at: float) -> float:
    f, t = np.asarray(fpr), np.asarray(tpr)
    return float(t[f <= at + 1e-12].max())


def test_the_kept_points_give_the_curves_own_tpr_at_every_low_fpr():
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(2000, bool), np.zeros(2000, bool)]
    scores = rng.normal(size=4000) + 0.8 * member
    fpr, tpr, _ = roc_curve(scores, member)
    assert len(fpr) > 3000  # far more points than are kept
    kept_fpr, kept_tpr = _thin(fpr, tpr)
    assert len(kept_fpr) < len(fpr)
    for at in (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1):
        assert abs(_tpr_from_points(kept_fpr, kept_tpr, at) - tpr_at_fpr(scores, member, at)) <= 1e-6, at
    evenly = np.unique(np.r_[np.linspace(0, len(fpr) - 1, 400).astype(int), len(fpr) - 1])  # the old thinning
    lost = [at for at in (0.001, 0.002, 0.005, 0.01) if tpr[evenly][fpr[evenly] <= at].max() < tpr_at_fpr(scores, member, at) - 1e-9]
    assert lost  # what it read lower: this test would have failed on it

"""Per-record scores stored in a result give back the numbers computed in memory.

Every number a page, the report or an analysis computes later (an AUC of a repeat, a TPR at low FPR, ε̂, a
slice, the exposure quadrants) is computed from ``records.scores`` as stored. Rounded to 6 decimals, the
scores of a confident model's members (losses below 5e-7) all became 0.0: tied with each other and with any
non-member as confident, which changes the AUC and the TPR at low FPR read back from the result.
"""
import json

import numpy as np
import pytest

from core.attacks.shadow_attacks import AttackOutcome
from core.defenses.defense_results import per_record_for_json as _for_json
from core.defenses.spec import DEFENSE_SCHEMA, DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import record_signals
from core.measurement.metrics import LOW_FPRS, empirical_epsilon, evaluate_attack, roc_auc, scores_for_json, tpr_at_fpr
from core.measurement.responses import Responses


def _tiny_losses() -> tuple[np.ndarray, np.ndarray]:
    """(loss, membership): 50 members with losses 1e-9 … 1e-7; 25 non-members nearly as confident (2e-7 …
    4e-7) and 25 not (0.1 … 1). Every member's loss is below every non-member's: AUC 1, TPR 1 at FPR 0."""
    loss = np.r_[np.geomspace(1e-9, 1e-7, 50), np.geomspace(2e-7, 4e-7, 25), np.linspace(0.1, 1.0, 25)]
    return loss, np.r_[np.ones(50, bool), np.zeros(50, bool)]


def _stored(values) -> np.ndarray:
    """What a reader gets back: the values through the JSON the cache and ``--out`` write."""
    return np.asarray(json.loads(json.dumps(values, allow_nan=False)), np.float64)


def test_the_auc_and_tpr_at_low_fpr_of_stored_scores_are_the_ones_computed_in_memory():
    loss, member = _tiny_losses()
    score = -loss  # the loss threshold attack: higher = member
    outcome = AttackOutcome(evaluate_attack("loss_threshold", score, member, threshold=-1.5e-7), score)
    probs = np.c_[np.full(100, 0.9), np.full(100, 0.1)]
    responses = Responses.from_probs(probs, [1] * 100, np.zeros(100, int))
    records = record_signals(responses, member, {"loss_threshold": outcome})
    stored = _stored(records["scores"]["loss_threshold"])
    assert roc_auc(score, member) == 1.0 and tpr_at_fpr(score, member, 0.0) == 1.0  # the planted answer
    assert roc_auc(stored, member) == roc_auc(score, member)  # rounded to 6 decimals: 0.75
    for fpr in (0.0, *LOW_FPRS):
        assert tpr_at_fpr(stored, member, fpr) == tpr_at_fpr(score, member, fpr)  # rounded: 0.0
    assert np.array_equal(stored, score)  # every score exactly: no order, tie or threshold can move
    assert empirical_epsilon(stored, member) == empirical_epsilon(score, member)


def test_a_defended_points_scores_are_stored_exactly_and_non_finite_ones_as_none():
    loss, member = _tiny_losses()
    values = np.r_[-loss, np.inf, np.nan]
    kept = _for_json(values)
    assert kept[-2:] == [None, None]
    assert np.array_equal(_stored(kept[:-2]), -loss)
    assert roc_auc(_stored(kept[:-2]), member) == 1.0
    raw = scores_for_json(values)  # a run's scores keep a NaN / inf: put_json(allow_nan=False) refuses them
    assert raw[:-2] == kept[:-2] and raw[-2] == np.inf and np.isnan(raw[-1])
    with pytest.raises(ValueError):
        json.dumps(raw, allow_nan=False)


def test_scores_for_json_keeps_every_float64_and_its_order():
    rng = np.random.default_rng(0)
    values = np.r_[rng.normal(size=1000), rng.normal(scale=1e-9, size=1000), 1 - np.geomspace(1e-15, 1e-7, 50),
                   np.float32(0.1), -0.0, 0.0]
    back = _stored(scores_for_json(values))
    assert np.array_equal(back, values.astype(np.float64))
    assert np.array_equal(np.argsort(back, kind="stable"), np.argsort(values, kind="stable"))
    assert all(type(v) is float for v in scores_for_json(np.float32([0.5, 1e-9])))


def test_results_stored_before_full_precision_are_not_served_as_new():
    """The result key carries the results' revision (a summary with 6-decimal scores is another
    entry, never read as one with exact scores), the defended point's key the defense schema's."""
    assert ArtifactCache.key("result", "abc").split("/")[0] != ArtifactCache.key("model", "abc").split("/")[0]
    assert ArtifactCache.key("result", "") == ArtifactCache.key("result", "abc")[:-3]
    assert DEFENSE_SCHEMA >= 4
    assert DefenseSpec("dirichlet", 1.0).key != _spec_key_at_schema(3)


def _spec_key_at_schema(schema: int) -> str:
    import hashlib
    from dataclasses import asdict

    payload = json.dumps({"schema": schema, **asdict(DefenseSpec("dirichlet", 1.0))}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@pytest.mark.parametrize("scores", [[0.25, 0.5], np.array([0.25, 0.5], np.float32)])
def test_scores_for_json_is_plain_json(scores):
    assert json.dumps(scores_for_json(scores)) == "[0.25, 0.5]"

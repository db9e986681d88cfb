"""A result's attack numbers recomputed from the per-record scores stored beside them.

A summary (or a defended point) keeps each attack's AUC, accuracy and threshold and, in
``records``, the attack's per-record scores (each float exactly: ``core.measurement.metrics.scores_for_json``)
and the membership. The reported numbers must be exactly what those scores give: an AUC of the wrong
records, of swapped membership or of another attack, an accuracy at another threshold, or scores stored
rounded (which tie confident records), fails here.
"""
import numpy as np

from core.measurement.metrics import roc_auc

EXACT = 1e-12  # the stored scores are the scores: only the summation order of the AUC may differ


def recomputed(attack: dict, scores: list[float], membership: list[bool]) -> tuple[float, float | None]:
    """(AUC, accuracy) of ``attack`` recomputed from its stored scores; asserts they are the reported
    ones (accuracy: None, and not checked, where the attack keeps no threshold)."""
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership, bool)
    assert len(s) == len(y)
    if "n_members" in attack:  # a run's attack (a defended point's mean over draws keeps no counts)
        assert attack["n_members"] == y.sum() and attack["n_nonmembers"] == (~y).sum()
    auc = roc_auc(s, y)
    assert abs(attack["auc"] - auc) <= EXACT, (attack["name"], attack["auc"], auc)
    if "threshold" not in attack:  # a defended point's mean over draws: no single threshold
        return auc, None
    threshold = np.inf if attack["threshold"] is None else attack["threshold"]
    accuracy = float(((s >= threshold) == y).mean())
    assert abs(attack["accuracy"] - accuracy) <= EXACT, (attack["name"], attack["accuracy"], accuracy)
    return auc, accuracy


def assert_attacks_match_records(attacks: dict, records: dict) -> None:
    """Every attack with stored scores reports the AUC and accuracy its scores give (and every
    reported attack has its scores stored)."""
    assert set(attacks) == set(records["scores"]), (set(attacks), set(records["scores"]))
    for name, attack in attacks.items():
        recomputed({"name": name, **attack}, records["scores"][name], records["membership"])

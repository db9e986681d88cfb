"""A result's attack numbers recomputed from the per-record scores stored beside them.

A summary (or a defended point) keeps each attack's AUC, accuracy and threshold and, in
``records``, the attack's per-record scores (rounded to 6 decimals) and the membership. The
reported numbers must be what those scores give: an AUC of the wrong records, of swapped
membership or of another attack, or an accuracy at another threshold, fails here.
"""
import numpy as np

from core.measurement.metrics import roc_auc

ROUNDING = 1e-6  # the stored scores are rounded to 6 decimals


def recomputed(attack: dict, scores: list[float], membership: list[bool]) -> tuple[float, float | None]:
    """(AUC, accuracy) of ``attack`` recomputed from its stored scores; asserts they match the
    reported ones up to what the rounding of the stored scores can move (accuracy: None, and not
    checked, where the attack keeps no threshold)."""
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership, bool)
    assert len(s) == len(y)
    if "n_members" in attack:  # a run's attack (a defended point's mean over draws keeps no counts)
        assert attack["n_members"] == y.sum() and attack["n_nonmembers"] == (~y).sum()
    auc = roc_auc(s, y)
    # pairs (member, non-member) whose order the rounding may have changed: each moves the AUC by 1/(m·n)
    close = (np.abs(s[y][:, None] - s[~y][None, :]) <= ROUNDING).sum()
    assert abs(attack["auc"] - auc) <= close / (y.sum() * (~y).sum()) + 1e-9, (attack["name"], attack["auc"], auc)
    if "threshold" not in attack:  # a defended point's mean over draws: no single threshold
        return auc, None
    threshold = np.inf if attack["threshold"] is None else attack["threshold"]
    accuracy = float(((s >= threshold) == y).mean())
    near = (np.abs(s - threshold) <= ROUNDING).sum()  # records the rounding may have moved across it
    assert abs(attack["accuracy"] - accuracy) <= near / len(s) + 1e-9, (attack["name"], attack["accuracy"], accuracy)
    return auc, accuracy


def assert_attacks_match_records(attacks: dict, records: dict) -> None:
    """Every attack with stored scores reports the AUC and accuracy its scores give (and every
    reported attack has its scores stored)."""
    assert set(attacks) == set(records["scores"]), (set(attacks), set(records["scores"]))
    for name, attack in attacks.items():
        recomputed({"name": name, **attack}, records["scores"][name], records["membership"])

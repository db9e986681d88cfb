"""Label-only membership inference (Choquette-Choo, Tramèr, Carlini & Papernot, ICML 2021,
"Label-only membership inference attacks"): the attacker sees only the predicted label.

The target is queried on n augmentations a₀ = identity, a₁, …, a_{n−1} of a record (x, y)
(images: a horizontal flip and one-pixel shifts, §4 "data augmentation attack"); the record's
score is the number of queries answered correctly,

    score(x, y) = Σᵢ 1[f(aᵢ(x)) = y] ∈ {0, …, n},

since a model that trained on x tends to stay correct on x's neighbourhood more than on a
non-member's. The threshold on the count is fitted on the shadows (each shadow queried the same
way on its own in and out records; the one maximising accuracy there).

The **gap attack** (Yeom et al. 2018; the paper's baseline) reads the un-augmented query alone:
member iff f(x) = y, score ∈ {0, 1}, threshold ½ — its accuracy is ½ + (train − test accuracy)/2
on a balanced set, the floor any label-only attack must beat.

Queries come from the task (:meth:`core.tasks.base.Task.label_queries`): this module only counts.
"""
from __future__ import annotations

import numpy as np

from core.measurement.metrics import best_threshold

#: queries per record: the identity, a flip, four one-pixel shifts, the flip with four shifts (image task)
LABEL_QUERIES = 10


def correct_counts(correct: np.ndarray) -> np.ndarray:
    """(N,) number of correct answers of an (N, n) boolean matrix of the n queries per record."""
    return np.asarray(correct, bool).sum(1).astype(np.float64)


def gap_scores(correct: np.ndarray) -> np.ndarray:
    """(N,) 1.0 where the un-augmented query (column 0) is answered correctly, else 0.0."""
    return np.asarray(correct, bool)[:, 0].astype(np.float64)


#: the gap attack's fixed threshold: correct (1) ⇒ member, wrong (0) ⇒ non-member
GAP_THRESHOLD = 0.5


def fit_count_threshold(shadow_correct: np.ndarray, shadow_membership: np.ndarray) -> float:
    """The threshold on the count that maximises accuracy on the shadows' own records."""
    return best_threshold(correct_counts(shadow_correct), np.asarray(shadow_membership, bool))

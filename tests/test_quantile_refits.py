"""The quantile attack's regressor: its fit's level and a refit's tracking of new scores
(:class:`core.attacks.quantile.QuantileRegressor`)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core.attacks.quantile import QuantileRegressor, QuantileTraining, pinball_loss


def _planted(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, 6) and non-member scores s | x ~ N(μ(x), σ(x)²) with μ, σ depending on two of them."""
    x = rng.uniform(-1, 1, size=(n, 6))
    mu, sigma = 1.5 * x[:, 0] - x[:, 1], 0.3 + 0.2 * (x[:, 0] + 1)
    return x, mu + sigma * rng.standard_normal(n)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    x, s = _planted(700, rng)
    reg = QuantileRegressor(0.1).fit(x, s)
    x_new, _ = _planted(500, rng)
    return reg, x, x_new


def test_a_refit_tracks_its_scores_quantile(fitted):
    """A refit moves with its scores: a shift of the scores by c shifts the fitted quantile by about c."""
    reg, x, x_new = fitted
    rng = np.random.default_rng(11)
    _, s = _planted(700, rng)
    base = reg.refit(x, s, 150).predict(x_new)
    shifted = reg.refit(x, s + 2.0, 150).predict(x_new)
    assert abs(float(np.median(shifted - base)) - 2.0) < 0.3


def test_fit_minimises_the_pinball_loss_at_its_level():
    """On held-out planted data about α of the scores exceed the fitted (1 − α) quantile."""
    rng = np.random.default_rng(5)
    x, s = _planted(2000, rng)
    reg = QuantileRegressor(0.1, QuantileTraining(seed=1)).fit(x, s)
    x_test, s_test = _planted(4000, rng)
    assert 0.05 < float(np.mean(s_test > reg.predict(x_test))) < 0.17
    assert float(pinball_loss(torch.zeros(3), 0.9)) == 0.0

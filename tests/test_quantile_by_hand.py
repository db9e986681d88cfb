"""The quantile regressor's hand-written descent (QuantileRegressor._descend_by_hand, the batched path's,
issue 34) must give autograd's weights bit for bit: cached results of either path stay the same numbers.
A torch whose autograd or Adam computes otherwise fails here, not silently in the findings."""
import numpy as np
import pytest
import torch

from core.attacks.quantile import QuantileRegressor, QuantileTraining, pinball_backward, pinball_loss


def _data(seed: int, n: int, d: int, rounded: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    s = 2.0 * x[:, 0] + rng.normal(size=n)
    if rounded:  # many equal scores
        s = np.round(s)
    s[::17] = np.inf  # left out of the fit as non-finite, as a defended victim's 0/1 answers are
    return x, s


@pytest.mark.parametrize("tau", [0.95, 0.5, 0.1])
def test_pinball_backward_is_autograds_at_ties_too(tau):
    """The loss's gradient, residuals of exactly 0 (the kink, where torch.maximum splits the gradient) included:
    a regressor's output rarely lands on a score exactly, so the descents below seldom meet one."""
    residual = torch.tensor([0.0, -0.0, 1.5, -2.25, 0.0, 3e-8, -7.0], requires_grad=True)
    pinball_loss(residual, tau).backward()
    probe = torch.zeros(len(residual), requires_grad=True)
    probe.mean().backward()
    assert torch.equal(pinball_backward(residual.detach(), tau, probe.grad, probe.grad / 2), residual.grad)


@pytest.mark.parametrize("seed,n,d,rounded,alpha", [(0, 300, 12, False, 0.05), (1, 120, 1, True, 0.1),
                                                 (2, 257, 33, True, 0.5)])
def test_descent_by_hand_gives_autograds_weights_bit_for_bit(seed, n, d, rounded, alpha):
    x, s = _data(seed, n, d, rounded)
    training = QuantileTraining(steps=150, seed=seed)
    auto = QuantileRegressor(alpha, training).fit(x, s)
    hand = QuantileRegressor(alpha, training).fit(x, s, by_hand=True)
    for (name, a), b in zip(auto.model.state_dict().items(), hand.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert hand.offset == auto.offset
    np.testing.assert_array_equal(hand.predict(x), auto.predict(x))
    assert not hand.model.training  # returned in eval mode, as _descend's


def test_the_batched_path_descends_by_hand_and_the_old_one_with_autograd(monkeypatch):
    """QuantileAttack's fit picks the descent by MIA_ATTACK_BATCHED (0: the path before issue 34, unchanged)."""
    from core.experiment.model_attacks import QuantileAttack

    x, s = _data(3, 80, 4, False)
    used = []
    for name in ("_descend", "_descend_by_hand"):
        original = getattr(QuantileRegressor, name)
        monkeypatch.setattr(QuantileRegressor, name,
                            lambda self, *a, _name=name, _f=original: used.append(_name) or _f(self, *a))
    attack = QuantileAttack()
    attack.seed, attack.pool_features = 0, x
    for path, expected in (("0", "_descend"), ("1", "_descend_by_hand")):
        monkeypatch.setenv("MIA_ATTACK_BATCHED", path)
        used.clear()
        monkeypatch.setattr("core.experiment.model_attacks.record_score", lambda r: s)
        attack._fit_on(None)
        assert used == [expected], path

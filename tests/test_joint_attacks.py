"""Attack classifiers fitted together (core.models.attack.JointAttack, core.attacks.shadow_attacks.fit_attack_sets)."""
import numpy as np
import pytest
import torch

from core.attacks.shadow_attacks import (
    AttackTraining,
    ShadowModelAttack,
    _fit_classifier,
    entropy_threshold_attack,
    fit_attack_sets,
    loss_threshold_attack,
)
from core.measurement.metrics import roc_auc
from core.measurement.responses import Responses
from core.models.attack import AttackLSTM, AttackMLP, JointAttack
from core.models.joint import block_places, member_index, place_members


def _members(kind, e_n=3, in_dim=5, hidden=7):
    out = []
    for e in range(e_n):
        torch.manual_seed(e)
        out.append(kind(in_dim, hidden))
    return out


def test_block_places_keep_the_gate_layout():
    """An LSTM's 4 gates stay gate-major in the joint layer: gate g of member e at rows
    g·E·H + e·H …, its columns e·in …; nothing else of the joint holds member entries."""
    members = [torch.nn.LSTM(2, 3) for _ in range(3)]
    joint = torch.nn.LSTM(6, 9)
    places = block_places(joint, 3, lambda name: 4)
    masks = place_members(joint, members, places)
    w = joint.weight_ih_l0.detach()
    assert torch.equal(w[1 * 9 + 2 * 3: 1 * 9 + 3 * 3, 4:6], members[2].weight_ih_l0.detach()[3:6])
    assert torch.count_nonzero(masks["weight_ih_l0"]) == 3 * 12 * 2
    assert torch.count_nonzero(w[~masks["weight_ih_l0"].bool()]) == 0
    for e, m in enumerate(members):
        assert torch.equal(w[member_index(*places["weight_ih_l0"][e])], m.weight_ih_l0.detach())


@pytest.mark.parametrize("kind", [AttackMLP, AttackLSTM])
def test_joint_network_computes_each_member_on_its_own_features(kind):
    members = _members(kind)
    joint = JointAttack(members)
    x = [torch.randn(6, 4, 5) for _ in members]
    lengths = torch.tensor([4, 1, 3, 2, 4, 1])
    out = joint(torch.cat(x, -1), lengths)
    assert out.shape == (6, 3)
    for e, m in enumerate(members):
        torch.testing.assert_close(out[:, e], m(x[e], lengths), atol=1e-6, rtol=1e-5)
    for m, back in zip(members, joint.members()):  # the members come back exactly
        for (name, a), b in zip(m.state_dict().items(), back.state_dict().values()):
            assert torch.equal(a, b), name


def test_joint_network_rejects_mixed_kinds():
    with pytest.raises(ValueError, match="one attack kind"):
        JointAttack([AttackMLP(3, 4), AttackLSTM(3, 4)])


@pytest.mark.parametrize("kind", [AttackMLP, AttackLSTM])
def test_joint_fit_keeps_off_blocks_zero_and_equals_fitting_one_by_one(kind):
    """Training the joint network is training each member alone (up to float rounding)."""
    g = torch.Generator().manual_seed(0)
    n, steps, in_dim = 64, 3, 5
    xs = [torch.randn(n, steps, in_dim, generator=g) for _ in range(3)]
    lengths = torch.randint(1, steps + 1, (n,), generator=g)
    y = (torch.rand(n, generator=g) < 0.5).numpy()
    train = AttackTraining(hidden=7, epochs=3, lr=1e-2, batch_size=16, seed=0)
    alone = [_fit_classifier(m, x, lengths, y, train) for m, x in zip(_members(kind), xs)]
    joint = _fit_classifier(JointAttack(_members(kind)), torch.cat(xs, -1), lengths, y, train)
    for name, p in joint.named_parameters():
        if p.ndim == 2:  # everything off the member blocks is still exactly zero
            on_blocks = torch.zeros_like(p, dtype=torch.bool)
            for rows, cols in joint.places[name]:
                on_blocks[member_index(rows, cols)] = True
            assert torch.count_nonzero(p.detach()[~on_blocks]) == 0, name
    for m, back, x in zip(alone, joint.members(), xs):
        with torch.no_grad():
            torch.testing.assert_close(back(x, lengths), m(x, lengths), atol=1e-4, rtol=1e-4)


def _responses(seed: int, n: int = 120, classes: int = 4) -> tuple[Responses, np.ndarray]:
    """One-step answers where members (first half) are more confident on their label."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    logits = torch.randn(n, classes, generator=g)
    member = torch.arange(n) < n // 2
    logits[torch.arange(n), labels] += torch.where(member, 3.0, 1.0)
    return Responses.from_logits(logits, np.ones(n, np.int64), labels), member.numpy()


def test_fit_attack_sets_equals_fitting_each_set_alone():
    training = AttackTraining(hidden=16, epochs=5, lr=1e-2, batch_size=32, seed=3)
    data = [_responses(s) for s in range(3)]
    membership = data[0][1]

    def fresh():
        return [ShadowModelAttack(training), loss_threshold_attack(), entropy_threshold_attack()]

    alone = [fresh() for _ in data]
    for attacks, (r, _) in zip(alone, data):
        for a in attacks:
            a.fit(r, membership)
    together = [fresh() for _ in data]
    progress: list[float] = []
    fit_attack_sets(together, [r for r, _ in data], membership, on_progress=progress.append)
    assert progress and all(0 < f < 1 for f in progress)
    for a_set, t_set, (r, _) in zip(alone, together, data):
        for a, t in zip(a_set, t_set):
            np.testing.assert_allclose(t.score(r), a.score(r), atol=1e-4)
        assert roc_auc(t_set[0].score(r), membership) > 0.7  # the fitted attack really separates


def test_fit_attack_sets_falls_back_when_records_differ():
    """Sequences of other lengths cannot share a packed batch: each set is fitted alone."""
    training = AttackTraining(hidden=8, epochs=2, lr=1e-2, batch_size=16, seed=0)
    g = torch.Generator().manual_seed(1)
    sets, answers = [], []
    for lengths in ([2, 3, 1, 2] * 8, [3, 1, 2, 2] * 8):
        t = sum(lengths)
        answers.append(Responses.from_logits(torch.randn(t, 6, generator=g), lengths, torch.randint(0, 6, (t,), generator=g)))
        sets.append([ShadowModelAttack(training)])
    membership = np.arange(32) % 2 == 0
    fit_attack_sets(sets, answers, membership)
    for s, r in zip(sets, answers):
        alone = ShadowModelAttack(training).fit(r, membership)
        np.testing.assert_allclose(s[0].score(r), alone.score(r), atol=1e-6)


def test_fit_attack_sets_rejects_mismatched_sets():
    r, m = _responses(0)
    with pytest.raises(ValueError, match="different attacks"):
        fit_attack_sets([[loss_threshold_attack()], [entropy_threshold_attack()]], [r, r], m)
    with pytest.raises(ValueError, match="attack sets"):
        fit_attack_sets([[loss_threshold_attack()]], [r, r], m)

"""Every learned attack classifier fitted as one batched ensemble (core.attacks.attack_ensemble).

The reference is the one-by-one fit (core.attacks.shadow_attacks._fit_classifier) of each classifier
from the same seeded initialisation. Tolerance: float32 rounding only — the batched products add in
another order and the LSTM runs unpacked — at most 9e-8 on the weights of these sizes on the CPU
(2026-11-27, torch 2.13); 1e-5 leaves room for other BLAS builds, while a real mix-up moves weights
by ~1e-2: Adam stepping a member at steps where it has no batch (zero gradients, not None) failed
the different-sizes test by 0.087.
"""
import copy

import numpy as np
import pytest
import torch

from core.attacks.attack_ensemble import FitMember, fit_members
from core.attacks.shadow_attacks import (
    AttackTraining,
    RankHistogramAttack,
    RecordFeatureAttack,
    ShadowModelAttack,
    _fit_classifier,
    attack_to_bytes,
    fit_attack_sets,
    loss_threshold_attack,
)
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import (
    ATTACK_FIT_VERSION,
    AttackVariant,
    fitted_attack_variants,
    fitted_attacks,
    trained_models,
)
from core.measurement.metrics import roc_auc
from core.measurement.responses import Responses
from core.models.attack import AttackLSTM, AttackMLP, StackedAttackMLP
from core.tasks import get_task

TOL = 1e-5


def _member(kind, in_dim, n, seed, *, epochs=3, batch_size=16, lr=1e-2, steps=4, data_seed=0, hidden=8):
    """A seeded classifier and its data: features where the first half (members) are shifted."""
    g = torch.Generator().manual_seed(data_seed)
    y = (torch.arange(n) % 2 == 0).numpy()
    if kind is AttackMLP:
        x = torch.randn(n, in_dim, generator=g) + torch.as_tensor(y, dtype=torch.float32)[:, None]
        lengths = torch.ones(n, dtype=torch.long)
    else:
        lengths = torch.randint(1, steps + 1, (n,), generator=g)
        x = torch.randn(n, steps, in_dim, generator=g) + torch.as_tensor(y, dtype=torch.float32)[:, None, None]
        x = x * (torch.arange(steps)[None, :] < lengths[:, None])[..., None]  # zero padding, as the attacks pad
    torch.manual_seed(seed)
    return FitMember(kind(in_dim, hidden), x, lengths, y, epochs, batch_size, lr, seed)


def _alone(m: FitMember) -> torch.nn.Module:
    train = AttackTraining(hidden=8, epochs=m.epochs, lr=m.lr, batch_size=m.batch_size, seed=m.seed)
    return _fit_classifier(copy.deepcopy(m.model), m.x, m.lengths, m.y, train)


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(p, q, atol=TOL, rtol=TOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("lstm_size", [1, 2])
def test_batched_fit_gives_each_classifier_its_one_by_one_fit(lstm_size):
    """MLPs of different input widths and LSTMs whose records differ in length, one schedule:
    each fitted classifier is the one fitted alone (lstm_size 2: two LSTMs in one block-diagonal net)."""
    members = [_member(AttackMLP, 3, 64, 1, data_seed=1), _member(AttackMLP, 7, 64, 1, data_seed=2),
               _member(AttackLSTM, 2, 64, 1, data_seed=3), _member(AttackLSTM, 2, 64, 1, data_seed=4, steps=6)]
    alone = [_alone(m) for m in members]
    fitted = fit_members(members, device=torch.device("cpu"), lstm_size=lstm_size)
    assert [type(f) for f in fitted] == [AttackMLP, AttackMLP, AttackLSTM, AttackLSTM]
    for a, f, m in zip(alone, fitted, members):
        _assert_same_weights(f, a)
        assert not f.training and next(f.parameters()).device.type == "cpu"
        with torch.no_grad():
            torch.testing.assert_close(f(m.x, m.lengths), a(m.x, m.lengths), atol=TOL, rtol=TOL)
    # the members did learn (a fit that never stepped would also "agree" with nothing)
    for f, m in zip(fitted, members):
        with torch.no_grad():
            assert roc_auc(f(m.x, m.lengths).numpy(), m.y) > 0.8


def test_schedules_of_different_sizes_do_not_leak_into_each_other():
    """Members with other record counts, batch sizes and epochs (so other steps per epoch: at
    some steps a schedule has no batch) fitted together are each the one-by-one fit; one member
    gives the same weights whichever others share its loop."""
    members = [_member(AttackMLP, 4, 40, 2, batch_size=16, epochs=4),     # 3 steps per epoch
               _member(AttackMLP, 4, 100, 2, batch_size=16, epochs=4),    # 7 steps per epoch
               _member(AttackMLP, 5, 64, 3, batch_size=32, epochs=2),     # 2 steps, 2 epochs only
               _member(AttackLSTM, 3, 24, 2, batch_size=16, epochs=5)]    # 2 steps, 5 epochs
    alone = [_alone(m) for m in members]
    fitted = fit_members(members, device=torch.device("cpu"))
    for a, f in zip(alone, fitted):
        _assert_same_weights(f, a)
    solo = fit_members([members[0]], device=torch.device("cpu"))[0]
    for (name, p), q in zip(solo.state_dict().items(), fitted[0].state_dict().values()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-6, msg=lambda m: f"{name}: {m}")


def test_stacked_mlp_padding_stays_zero_and_members_come_back():
    members = [_member(AttackMLP, 2, 32, 0), _member(AttackMLP, 6, 32, 0, data_seed=5)]
    stacked = StackedAttackMLP([m.model for m in members])
    x = torch.zeros(2, 32, 6)
    x[0, :, :2], x[1] = members[0].x, members[1].x
    out = stacked(x)
    for e, m in enumerate(members):
        torch.testing.assert_close(out[e], m.model(m.x), atol=1e-6, rtol=1e-6)
    for m, back in zip(members, stacked.members()):
        for (name, a), b in zip(m.model.state_dict().items(), back.state_dict().values()):
            assert torch.equal(a, b), name
    fitted = fit_members(members, device=torch.device("cpu"))
    assert fitted[0].net[0].weight.shape == (8, 2)


def _sequences(seed: int, n: int = 48) -> tuple[Responses, np.ndarray]:
    """Translation-like answers: members (first half) give their reference more probability."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 6, (n,), generator=g).numpy()
    member = np.arange(n) < n // 2
    steps = int(lengths.sum())
    logits = torch.randn(steps, 12, generator=g)
    ref = torch.randint(0, 12, (steps,), generator=g)
    logits[torch.arange(steps), ref] += torch.as_tensor(np.repeat(np.where(member, 2.5, 0.5), lengths), dtype=torch.float32)
    r = Responses.from_logits(logits, lengths, ref)
    r.record_features["bleu_features"] = np.stack([np.where(member, 0.8, 0.3) + 0.3 * torch.rand(n, generator=g).numpy(),
                                                   lengths / 5.0], axis=1).astype(np.float32)
    return r, member


def test_fit_attack_sets_batched_equals_each_attack_fitted_alone():
    """The pipeline's entry: PVMIA's LSTM, PRMIA, the BLEU-feature MLP and a threshold, over two
    checkpoint epochs, batched vs each attack fitted on its own: the same scores (so the same AUC) on fresh
    records."""
    training = AttackTraining(hidden=8, epochs=4, lr=1e-2, batch_size=16, seed=5)
    data = [_sequences(s) for s in (0, 1)]
    membership = data[0][1]

    def fresh():
        return [ShadowModelAttack(training), RankHistogramAttack(training),
                RecordFeatureAttack("bleu_features", name="bleu_feature", training=training), loss_threshold_attack()]

    old, new = [fresh() for _ in data], [fresh() for _ in data]
    for attacks, (r, _) in zip(old, data):
        for attack in attacks:
            attack.fit(r, membership)
    progress: list[float] = []
    fit_attack_sets(new, [r for r, _ in data], membership, on_progress=progress.append)
    assert progress and all(0 < f < 1 for f in progress)
    target, target_membership = _sequences(9)
    for o_set, n_set in zip(old, new):
        assert isinstance(n_set[0].model, AttackLSTM)
        for o, n in zip(o_set, n_set):
            # 1e-4: on a GPU the two paths use other kernels (packed cuDNN and foreach Adam vs unpacked and fused)
            np.testing.assert_allclose(n.score(target), o.score(target), atol=1e-4, err_msg=n.name)
        assert roc_auc(n_set[2].score(target), target_membership) > 0.9  # the BLEU-feature MLP really separates


def test_members_must_match_their_targets():
    bad = _member(AttackMLP, 3, 10, 0)
    bad.y = bad.y[:5]
    with pytest.raises(ValueError, match="10 records and 5 targets"):
        fit_members([bad], device=torch.device("cpu"))


def test_fits_of_the_older_path_are_not_served(tmp_path):
    """Fitted attacks are keyed with the fit version: a fit stored under the key of the older path
    (no version part) is not what the pipeline loads, even where it is the only one."""
    cache = ArtifactCache(tmp_path / "c")
    cfg = get_task("image").make_config("ffnn", "quick", dict(n_train=40, n_eval=20, epochs=2, n_shadows=1,
                                                                 attack_epochs=(1,), attack_train_epochs=3))
    models = trained_models(cfg, cache=cache)
    early, final = fitted_attack_variants(models, [AttackVariant(1), AttackVariant(2)], cache)
    keys = cache.keys(cache.key("attack", cfg.config_hash))
    assert keys and all(f"/{ATTACK_FIT_VERSION}/" in k for k in keys)
    for attack in early:  # the epoch-1 fits, planted as epoch 2's under the old key; the new keys dropped
        cache.put_bytes(cache.key("attack", cfg.config_hash, 2, "undefended", attack.name), attack_to_bytes(attack))
    for k in keys:
        if "/2/" in k:
            cache.discard(k, "test: refit")
    again = fitted_attacks(models, epoch=2, cache=cache)
    target = models.victim.responses[2]
    shadow = [a for a in final if a.name == "shadow"][0]
    np.testing.assert_allclose([a for a in again if a.name == "shadow"][0].score(target), shadow.score(target), atol=1e-6)
    assert not np.allclose([a for a in early if a.name == "shadow"][0].score(target), shadow.score(target), atol=1e-6)


def test_length_buckets_are_the_cheapest_cut():
    """The dynamic programme against every cut between distinct lengths (brute force)."""
    import itertools

    from core.attacks.attack_ensemble import length_buckets

    rng = np.random.default_rng(0)
    for _ in range(40):
        lengths = np.sort(rng.integers(1, 12, rng.integers(1, 30)))
        call = float(rng.choice([0.0, 3.0, 20.0, 1e6]))
        got = length_buckets(lengths, call)
        assert got[0][0] == 0 and got[-1][1] == len(lengths)
        assert all(a[1] == b[0] for a, b in zip(got, got[1:]))

        def cost(runs):
            return sum((hi - lo) * lengths[hi - 1] + call for lo, hi in runs)

        bounds = [i for i in range(1, len(lengths)) if lengths[i] != lengths[i - 1]]
        best = min(cost(list(zip((0, *cuts), (*cuts, len(lengths)))))
                   for k in range(len(bounds) + 1) for cuts in itertools.combinations(bounds, k))
        assert cost(got) == pytest.approx(best)
        if call == 1e6:
            assert got == [(0, len(lengths))]


def test_lstms_run_in_length_buckets_are_the_one_by_one_fit(monkeypatch):
    """With calls made free every batch runs in one bucket per distinct length (sorted, cut, put back
    in the batch's order): each LSTM is still the one fitted alone (a bucket read at the wrong rows or
    put back in another order moves the weights by far more than TOL)."""
    from core.attacks import attack_ensemble

    monkeypatch.setattr(attack_ensemble, "_CALL_COST", 1e-9)
    runs = []
    real = attack_ensemble.length_buckets
    monkeypatch.setattr(attack_ensemble, "length_buckets", lambda *a: runs.append(real(*a)) or runs[-1])
    members = [_member(AttackLSTM, 2, 64, 1, data_seed=3, steps=6), _member(AttackLSTM, 3, 64, 2, data_seed=4)]
    alone = [_alone(m) for m in members]
    fitted = fit_members(members, device=torch.device("cpu"), lstm_size=1)
    assert runs and max(len(r) for r in runs) > 2  # the batches did run in several buckets
    for a, f in zip(alone, fitted):
        _assert_same_weights(f, a)

"""Defenses after training: the Dirichlet mechanism, the Gaussian privacy module, the
SensitivitySampler, the seam they plug into (fitted attacks, defended points) and their guarantees."""
import math
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy import stats

from core.attacks.shadow_attacks import attack_to_bytes, load_attack_bytes, score_attacks
from core.defenses import dirichlet, gpm
from core.defenses.defender import Defender
from core.defenses.sensitivity import parameter_distance, sensitivity_sampler
from core.defenses.spec import DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import build_attacks, fitted_attacks, trained_models
from core.experiment.roles import train_model
from core.foundations.errors import ConfigError
from core.measurement.metrics import empirical_epsilon
from core.measurement.responses import Responses
from core.tasks import get_task

OVERFIT = dict(n_train=100, n_eval=100, epochs=40, n_shadows=3, attack_epochs=(), attack_train_epochs=60)


def _build_overfit(folder):
    """Into cache ``folder``: the models of :data:`OVERFIT` and a Defender's set-up (its fitted attacks)."""
    cache = ArtifactCache(folder)
    Defender(trained_models(get_task("image").make_config("ffnn", "quick", OVERFIT), cache=cache), cache)


def _overfit_defender(built_once, folder):
    """A Defender of :data:`OVERFIT` on cache ``folder``: a copy of the cache built once per test run."""
    shutil.copytree(built_once("defenses-overfit", _build_overfit), folder)
    cache = ArtifactCache(folder)
    return Defender(trained_models(get_task("image").make_config("ffnn", "quick", OVERFIT), cache=cache), cache)


@pytest.fixture
def overfit(built_once, tmp_path):
    """An image CNN trained 40 epochs on 100 records (it overfits) with 3 shadows, and its Defender: this test's
    own, on its own copy of the models' cache (trained once per test run), so the tests that take it need not
    share a worker."""
    return _overfit_defender(built_once, tmp_path / "overfit")


# ---------------------------------------------------------------------------- Dirichlet mechanism
def test_dirichlet_sample_mean_is_p():
    rng = np.random.default_rng(0)
    p = np.array([0.7, 0.2, 0.05, 0.05])
    for k in (0.5, 5.0, 50.0):
        samples = np.exp(dirichlet.sample_probs(np.tile(p, (20000, 1)), k, 1e-6, rng))
        np.testing.assert_allclose(samples.sum(1), 1.0, atol=1e-9)
        np.testing.assert_allclose(samples.mean(0), p, atol=0.01)
    # a large k concentrates the samples around p, a small one scatters them
    near = np.exp(dirichlet.sample_probs(np.tile(p, (2000, 1)), 1e5, 1e-6, rng))
    far = np.exp(dirichlet.sample_probs(np.tile(p, (2000, 1)), 0.1, 1e-6, rng))
    assert np.abs(near - p).max() < 0.02 and np.abs(far - p).mean() > 0.2


def test_dirichlet_log_space_keeps_tiny_probabilities_finite():
    rng = np.random.default_rng(1)
    logx = dirichlet.sample_probs(np.array([[1 - 1e-9, 1e-9, 0.0]]).repeat(100, 0), 0.01, 1e-8, rng)
    assert np.isfinite(logx).all()
    with pytest.raises(ValueError, match="η"):
        dirichlet.floor_probs(np.ones((1, 10)) / 10, 0.2)


def _vocab_responses(t=600, v=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(t, v, generator=g) * 3.0
    ref = torch.randint(0, v, (t,), generator=g)
    ref[: t // 2] = logits[: t // 2].argmax(1)  # half the steps: the model's top choice is the reference
    full = Responses.from_logits(logits, np.ones(t, np.int64), ref, keep_full=True)
    top = Responses.from_logits(logits, np.ones(t, np.int64), ref, keep_full=False)
    return full, top


@pytest.mark.parametrize("k, rank_tolerance", [(100.0, 0.05), (1.0, 0.06), (0.05, 0.06), (0.01, 0.15)])
def test_aggregated_top_k_sampling_agrees_with_full_vocabulary(k, rank_tolerance):
    """Aggregation makes the reference's probability (and so the loss) exact in distribution; the
    top-K, the reference's rank and the entropy are approximations whose error stays bounded."""
    full, top = _vocab_responses()
    a = dirichlet.defend_responses(full, k, 1e-7, np.random.default_rng(2))
    b = dirichlet.defend_responses(top, k, 1e-7, np.random.default_rng(3))
    assert b.probs is None and b.top_probs.shape == top.top_probs.shape
    # exact parts: the reference's probability and cross-entropy (KS test, same distribution)
    assert stats.ks_2samp(a.ref_prob, b.ref_prob).pvalue > 0.01
    assert stats.ks_2samp(a.cross_entropy, b.cross_entropy).pvalue > 0.01
    # approximate parts: mean entropy within 8 % (or 0.01 nats), top-1 within 0.03, the rank histogram's
    # bins within the tolerance (the unseen tokens' shares are modelled as equal: coarsest at tiny k)
    assert abs(a.entropy.mean() - b.entropy.mean()) < max(0.08 * a.entropy.mean(), 0.01)
    assert abs(a.top_probs[:, 0].mean() - b.top_probs[:, 0].mean()) < 0.03
    for lo, hi in ((0, 1), (1, 10), (10, 10**9)):
        share_a = ((a.ref_rank >= lo) & (a.ref_rank < hi)).mean()
        share_b = ((b.ref_rank >= lo) & (b.ref_rank < hi)).mean()
        assert abs(share_a - share_b) < rank_tolerance, (lo, hi, share_a, share_b)


def test_defended_responses_keep_record_features_and_validate():
    full, top = _vocab_responses(t=40, v=30)
    full.record_features["bleu_features"] = np.ones((40, 5), np.float32)
    out = dirichlet.defend_responses(full, 1.0, 1e-6, np.random.default_rng(0))
    assert set(out.record_features) == {"bleu_features"}
    assert out.lengths is not None and out.validate() is out


def test_lemma1_bound():
    tight = dirichlet.lemma1_bound(1000.0, 10, 1e-2, 1e-4, 0.1)
    loose = dirichlet.lemma1_bound(0.1, 10, 1e-6, 1e-6, 0.1)
    assert tight.delta < 0.01 and not tight.vacuous
    assert loose.delta == 1.0 and loose.vacuous  # small k: δ ≈ 1, as 001 §5.3 says
    # ε grows linearly with k; a smaller τ lowers δ and raises ε
    assert dirichlet.lemma1_bound(2000.0, 10, 1e-2, 1e-4, 0.1).epsilon > tight.epsilon
    smaller_tau = dirichlet.lemma1_bound(1000.0, 10, 1e-2, 1e-6, 0.1)
    assert smaller_tau.delta <= tight.delta and smaller_tau.epsilon > tight.epsilon


def test_a_vacuous_dirichlet_guarantee_is_never_a_number():
    """At k = 1, 0.1, 0.01 the printed ε goes negative or δ = 1; the guarantee the pages and
    the CLI read carries no ε then, only the reason; where Lemma 1 holds (k large, δ < 1) the number stays."""
    mech = dirichlet.DirichletMechanism()
    for k in (1.0, 0.1, 0.01):
        g = mech.guarantee(DefenseSpec("dirichlet", k), n_classes=10, sensitivity=None)
        assert g["epsilon"] is None and g["delta"] == 1.0
        assert g["guarantee"] == "vacuous (δ ≥ 1)" and g["privacy_note"].startswith("vacuous (δ ≥ 1)")
    negative = dirichlet.DirichletPrivacy(epsilon=-0.3, delta=0.5, k=0.1, n=10, eta=1e-6, tau=1e-6, b=0.1)
    assert dirichlet.bound_status(negative) == "no bound (the printed formula goes negative)"
    g = mech.guarantee(DefenseSpec("dirichlet", 1000.0, eta=1e-2, tau=1e-4), n_classes=10, sensitivity=None)
    assert g["epsilon"] > 0 and g["delta"] < 1 and g["guarantee"] == "(ε, δ)-DP"


# ---------------------------------------------------------------------------- Gaussian privacy module
def test_random_dp_gamma_reference_values():
    assert [round(gpm.random_dp_gamma(n), 4) for n in (100, 500, 1000)] == [0.1597, 0.0774, 0.0565]


def test_delta_of_epsilon_and_its_inverse():
    # μ = 1, ε = 0: Φ(0.5) − Φ(−0.5)
    assert gpm.delta_of_epsilon(0.0, 1.0) == pytest.approx(stats.norm.cdf(0.5) - stats.norm.cdf(-0.5))
    for s, sigma in ((0.0132, 0.01), (0.1, 0.05), (1.0, 0.2)):
        eps = gpm.epsilon_at_delta(1e-4, s, sigma)
        assert gpm.delta_of_epsilon(eps, s / sigma) == pytest.approx(1e-4, rel=1e-6)
    assert gpm.epsilon_at_delta(1e-4, 0.01, 0.0) == math.inf
    # more noise, smaller ε
    assert gpm.epsilon_at_delta(1e-4, 0.01, 0.02) < gpm.epsilon_at_delta(1e-4, 0.01, 0.01)


def test_sensitivity_sampler_on_a_learner_with_known_sensitivity():
    """θ = mean of N points in {−1, +1}: replacing one point moves θ by 0 or 2/N, so S = 2/N."""
    n_records = 25
    rng = np.random.default_rng(0)

    def pair_distance(i):
        drawn = rng.choice([-1.0, 1.0], size=n_records + 1)
        d1, d2 = drawn[:n_records], np.r_[drawn[: n_records - 1], drawn[n_records]]
        return abs(d1.mean() - d2.mean())

    est = sensitivity_sampler(30, pair_distance)
    assert est.sensitivity == pytest.approx(2 / n_records)
    assert est.gamma == pytest.approx(gpm.random_dp_gamma(30))
    assert all(d in (0.0, pytest.approx(2 / n_records)) for d in est.distances)


def test_same_seed_same_data_trains_identical_models():
    """SensitivitySampler's premise: only the differing record may separate θ from θ′."""
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", dict(n_train=30, n_eval=10, epochs=2, n_shadows=1, attack_epochs=()))
    data = task.load(cfg)
    idx = data.victim_pool[:30]
    a, b = train_model(task, cfg, data, idx, 5), train_model(task, cfg, data, idx, 5)
    assert parameter_distance(a, b) == 0.0
    c = train_model(task, cfg, data, np.r_[idx[:29], data.victim_pool[40]], 5)
    assert parameter_distance(a, c) > 0.0


# ---------------------------------------------------------------------------- seam and defended points
def test_fitted_attacks_score_the_same_after_a_cache_round_trip(overfit):
    models, cache = overfit.models, overfit.cache
    first = overfit.naive_attacks
    again = fitted_attacks(models, cache=cache)  # loaded from bytes, not refitted
    target = models.victim.responses[models.cfg.epochs]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.score(target), b.score(target))
    # a blob of one attack does not load into another
    with pytest.raises(ValueError):
        load_attack_bytes(build_attacks(models.task, models.cfg)[1], attack_to_bytes(first[0]))


def test_threshold_boundary_is_in_the_signals_units(overfit):
    outcomes = score_attacks(overfit.naive_attacks, overfit.victim_responses, overfit.membership)
    loss = outcomes["loss_threshold"].result.boundary
    assert loss["signal"] == "cross_entropy" and loss["member_if"] == "below"
    decided = overfit.victim_responses.mean_cross_entropy <= loss["threshold"]
    np.testing.assert_array_equal(decided, outcomes["loss_threshold"].scores >= outcomes["loss_threshold"].result.threshold)


def _json(point):
    """A point's JSON, copied (``to_dict`` hands back its nested blocks as they are: never mutate those)."""
    import json
    return json.loads(json.dumps(point.to_dict()))


def test_dirichlet_large_k_changes_nothing_small_k_defeats_the_naive_attack(overfit):
    base = overfit.baseline
    assert base.attack.accuracy > 0.6  # the victim overfits: there is something to defend
    near = overfit.point(DefenseSpec("dirichlet", 1e8), "naive")
    assert abs(near.attack.accuracy - base.attack.accuracy) < 0.05
    assert abs(near.attack.auc - base.attack.auc) < 0.05
    assert near.utility_loss == pytest.approx(0.0, abs=0.02)
    scattered = overfit.point(DefenseSpec("dirichlet", 0.01, draws=2), "naive")
    assert abs(scattered.attack.accuracy - 0.5) < 0.08
    # answers become one-hot at class j with probability p_j: a confident model keeps most of its
    # accuracy (001 Tables 1–2: < 10 % loss), but not all of it
    assert near.utility_loss < scattered.utility_loss < 0.5
    assert scattered.epsilon_hat < near.epsilon_hat or near.epsilon_hat == 0


def test_gpm_sigma_zero_changes_nothing(overfit):
    answers = overfit._victim_answers(DefenseSpec("gpm", 0.0), 0, with_record_features=True)
    ref = overfit.victim_responses
    np.testing.assert_array_equal(answers.probs, ref.probs)
    np.testing.assert_array_equal(answers.cross_entropy, ref.cross_entropy)
    p = overfit.point(DefenseSpec("gpm", 0.0), "naive")
    assert p.attack.accuracy == overfit.baseline.attack.accuracy
    assert p.utility_loss == pytest.approx(0.0, abs=1e-9)
    noisy = overfit.point(DefenseSpec("gpm", 0.5), "naive")
    assert noisy.utility_loss > 0.2


def test_gpm_point_perturbs_each_model_once_per_draw(overfit, monkeypatch):
    """One noisy copy per (role, draw) serves the attack, RMIA's population and the utility of a
    point (the σ slider's cost); a new σ makes new copies, the same σ again none."""
    mech = type(DefenseSpec("gpm", 0.0).mechanism_class)
    calls = []
    real = mech.perturb
    monkeypatch.setattr(mech, "perturb", lambda self, model, w, z, spec: calls.append(spec.value) or real(self, model, w, z, spec))
    spec = DefenseSpec("gpm", 0.0137, draws=2)
    p = overfit.point(spec, "naive", utility=False)
    assert calls == [0.0137, 0.0137]  # the victim, draws 0 and 1 (its population answers reuse them)
    full = overfit.point(spec, "naive")  # utility: the same two noisy victims
    assert calls == [0.0137, 0.0137] and full.attack == p.attack and full.utility is not None
    overfit.point(spec.at(0.0139), "naive", utility=False)
    assert calls[2:] == [0.0139, 0.0139]
    # a copy with the same σ and direction answers as the one kept: the memo changes no number
    again = overfit.point(DefenseSpec("gpm", 0.0137, draws=2, seed=0), "naive", utility=False)
    assert again.attack == p.attack


def test_gpm_utility_from_the_attack_answers_equals_a_model_run(overfit):
    """The image task reads accuracy off the noisy victim's answers on the evaluated records: the
    same numbers as running the noisy model again; a tie at the top falls back to the model."""
    task, splits = overfit.task, overfit.models.splits
    for sigma in (0.0, 0.02, 0.3):
        spec = DefenseSpec("gpm", sigma, draws=2)
        overfit.point(spec, "naive", utility=False)  # the answers the utility reads
        for draw in range(2):
            model = overfit._noisy("victim", overfit._victim_model(), overfit.models.victim.weights, spec, draw)
            ran = (task.utility(overfit.cfg, model, overfit.models.data, splits.eval_members),
                   task.utility(overfit.cfg, model, overfit.models.data, splits.victim_nonmembers))
            assert overfit._utility(spec, draw) == ran
    tied = Responses.from_logits(torch.zeros(3, 10), np.ones(3, np.int64), torch.tensor([0, 3, 5]))
    assert task.utility_of_responses(overfit.cfg, tied) is None  # argmax picks class 0: only a model run knows
    clear = Responses.from_logits(torch.eye(10)[[0, 3, 5]], np.ones(3, np.int64), torch.tensor([0, 3, 4]))
    assert task.utility_of_responses(overfit.cfg, clear) == pytest.approx(2 / 3)


def _utility_by_model_runs(defender, spec, draw):
    """The defended utility as it was computed before the victim's logits were cached: the
    victim model re-run on members and non-members, its log-softmax through the draw's transform."""
    mech, splits = spec.mechanism_class, defender.models.splits
    transform = mech.torch_transform(spec, defender._torch_generator(spec, draw, "utility"))
    model, data = defender._victim_model(), defender.models.data
    return (defender.task.utility(defender.cfg, model, data, splits.eval_members, transform),
            defender.task.utility(defender.cfg, model, data, splits.victim_nonmembers, transform))


@pytest.fixture(scope="module")
def tabular_defender(tmp_path_factory):
    cache = ArtifactCache(tmp_path_factory.mktemp("cache"))
    cfg = get_task("tabular").make_config("ffnn", "quick", {"n_train": 60, "n_eval": 40, "epochs": 3, "n_shadows": 2,
                                                            "attack_epochs": (), "attack_train_epochs": 3})
    return Defender(trained_models(cfg, cache=cache), cache)


@pytest.mark.parametrize("which", ["image", "tabular"])
def test_dirichlet_utility_from_cached_logits_equals_model_runs(which, request, monkeypatch):
    """Under Dir_k the utility of image and tabular is read from the victim's outputs computed once per
    Defender (not one model run per draw and split): every draw's numbers, and the point's, equal the old path's."""
    defender = request.getfixturevalue("overfit" if which == "image" else "tabular_defender")
    from core.defenses.defense_results import mean_std as _mean_std
    from core.measurement.metrics import utility_loss
    for k in (0.05, 1.0, 30.0, 1e4):
        spec = DefenseSpec("dirichlet", k, draws=3, seed=7)
        old = [_utility_by_model_runs(defender, spec, d) for d in range(spec.draws)]
        assert [defender._utility(spec, d) for d in range(spec.draws)] == old
        point = defender.point(spec, "naive", utility=True)
        assert (point.utility_train, point.utility_train_std) == _mean_std([u[0] for u in old])
        assert (point.utility, point.utility_std) == _mean_std([u[1] for u in old])
        assert point.utility_loss == utility_loss(point.utility, defender.baseline.utility)
    # the victim's outputs are remembered: further draws and values run no forward pass of it
    calls = []
    victim = defender._victim_model()
    monkeypatch.setattr(victim, "forward", lambda x, f=victim.forward: calls.append(1) or f(x))
    defender.point(DefenseSpec("dirichlet", 3.3, draws=4), "naive", utility=True)
    assert calls == []


def _every_pass_runs(monkeypatch, plain: Defender) -> None:
    """``plain`` computes its points the plain way: every forward pass of its models runs (none is remembered) and
    each draw asks its own label and augmented queries — the reference that the remembered outputs must equal."""
    from core.defenses.defended_query import DefendedQuery
    monkeypatch.setattr(plain, "_remembering", lambda key, model: model)
    together = DefendedQuery.draws

    def draws(defender, spec, answers, start=0):
        if defender is not plain:
            return together(defender, spec, answers, start)
        return [DefendedQuery(defender, spec, d, r) for d, r in enumerate(answers, start)]

    monkeypatch.setattr(DefendedQuery, "draws", staticmethod(draws))


def test_dirichlet_points_equal_the_model_run_path(overfit, monkeypatch):
    """Reusing the victim's undefended outputs under Dir_k (utility, label-only and augmented-LiRA queries)
    changes no number of a defended point: the same points as one model run per draw, and
    the victim's forward passes run once per query, not once per draw."""
    assert overfit._fitted_model_attacks()  # the label-only / augmented queries are exercised
    cache = ArtifactCache(overfit.cache.directory / "../old_path_cache")
    old = Defender(overfit.models, cache)
    _every_pass_runs(monkeypatch, old)
    fresh = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../new_path_cache"))
    for k in (0.3, 4.0, 80.0):
        for utility in (False, True):
            spec = DefenseSpec("dirichlet", k, draws=3, seed=11)
            a, b = old.point(spec, "naive", utility=utility), fresh.point(spec, "naive", utility=utility)
            assert replace(a, timings=None) == replace(b, timings=None)
    assert fresh._forwards[("victim",)]
    forwards = []
    victim = fresh._victim_model()
    monkeypatch.setattr(victim, "forward", lambda x, f=victim.forward: forwards.append(1) or f(x))
    fresh.point(DefenseSpec("dirichlet", 2.2, draws=3), "naive", utility=True)
    assert forwards == []


def test_dirichlet_draws_ask_the_augmented_queries_together(overfit, monkeypatch):
    """Under Dir_k a point's draws ask the label-only and augmented-LiRA queries together: the task's
    ``*_under`` once per kind with every draw's transform, which equals each draw's own call, transform by transform
    (each draw's noise from its own generator, in the order its own call draws it)."""
    task, d = overfit.task, overfit
    model, data, index = d._victim_model(), d.models.data, d.models.splits.eval_index
    spec = DefenseSpec("dirichlet", 3.0, draws=4, seed=5)
    mech = spec.mechanism_class

    def transforms(role):
        return [mech.torch_transform(spec, d._torch_generator(spec, i, role)) for i in range(spec.draws)]

    alone = np.stack([task.augmented_confidences(d.cfg, model, data, index, 10, t) for t in transforms("a")])
    assert np.array_equal(task.augmented_confidences_under(d.cfg, model, data, index, 10, transforms("a")), alone)
    # with an undefended query among them (one transform at a time)
    together = task.augmented_confidences_under(d.cfg, model, data, index, 10, transforms("a") + [None])
    assert np.array_equal(together, np.concatenate([alone, task.augmented_confidences(d.cfg, model, data, index, 10)[None]]))
    together = task.label_queries_under(d.cfg, model, data, index, 10, transforms("l"))
    assert np.array_equal(together, np.stack([task.label_queries(d.cfg, model, data, index, 10, t)
                                              for t in transforms("l")]))
    assert d._fitted_model_attacks()  # fitted first: their fit asks the undefended shadows' queries
    calls = []
    for name in ("label_queries_under", "augmented_confidences_under"):
        monkeypatch.setattr(task, name, lambda *a, f=getattr(task, name), name=name, **k:
                            calls.append((name, len(a[-1]))) or f(*a, **k))
    for name in ("label_queries", "augmented_confidences"):  # a draw alone: not asked any more
        monkeypatch.setattr(task, name, lambda *a, name=name, **k: pytest.fail(f"{name} asked per draw"))
    d.point(DefenseSpec("dirichlet", 6.1, draws=4), "naive", utility=False)
    assert sorted(calls) == [("augmented_confidences_under", 4), ("label_queries_under", 4)]


def test_dirichlet_transforms_applied_together_equal_one_call_each():
    """DirichletOutputTransform.apply_together: the draws' noise on the same log-probabilities at once, each
    draw's seed from its own generator — the same tensors as one call per draw; None for differing k."""
    log_probs = torch.log_softmax(torch.randn(300, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(1)), 1)

    def transforms(k=4.0):
        return [dirichlet.torch_output_transform(k, 1e-6, torch.Generator().manual_seed(100 + i)) for i in range(5)]

    together, alone = transforms(), transforms()
    for _ in range(2):  # a second call draws the next seeds, as a second call each would
        stacked = dirichlet.DirichletOutputTransform.apply_together(together, log_probs)
        assert torch.equal(stacked, torch.stack([t(log_probs) for t in alone]))
    assert dirichlet.DirichletOutputTransform.apply_together(transforms() + transforms(9.0), log_probs) is None


def test_gpm_points_equal_the_model_run_path(overfit, monkeypatch):
    """Under the GPM a draw's noisy victim answers the label-only and augmented-LiRA queries (the same
    augmented images) and the evaluation set from remembered forward passes: the same points as running
    every pass, the adaptive attacker's too."""
    old = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../old_gpm_cache"))
    _every_pass_runs(monkeypatch, old)
    fresh = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../new_gpm_cache"))
    for sigma in (0.0, 0.004, 0.05):
        for attacker, utility in (("naive", False), ("both", True)):
            spec = DefenseSpec("gpm", sigma, draws=2, seed=5)
            a, b = old.point(spec, attacker, utility=utility), fresh.point(spec, attacker, utility=utility)
            assert replace(a, timings=None) == replace(b, timings=None)
    assert any(key[0] != "victim" and store for key, store in fresh._forwards.items())


def test_a_point_lists_as_skipped_only_the_attacks_it_does_not_carry(overfit):
    """The utility card's point of a value whose fast point, read from the cache (a curve's point), scored quantile
    regression takes that fast point's numbers: it carries quantile regression's, so it does not list it as skipped
    (the page would say it is not computed beside a number that is)."""
    cache = ArtifactCache(overfit.cache.directory / "../skipped_lists")
    spec = DefenseSpec("dirichlet", 1.7, draws=2)
    fast = Defender(overfit.models, cache).point(spec, "naive", utility=False, quantile=True)
    assert "quantile" in fast.attacks and not fast.skipped_attacks
    d = Defender(overfit.models, cache)  # another session: reads the fast point, computes only the utility
    assert d.point(spec, "naive", utility=False, quantile=True).attacks == fast.attacks
    card = d.point(spec, "naive", utility=True, quantile=False)
    assert card.attacks == fast.attacks and "quantile" not in card.skipped_attacks
    alone = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../skipped_lists_alone"))
    card = alone.point(spec, "naive", utility=True, quantile=False)  # nothing scored before: quantile left out
    assert "quantile" not in card.attacks and card.skipped_attacks == ("quantile",)


@pytest.fixture(scope="module")
def every_draw_point(built_once, tmp_path_factory):
    """``point(spec, call)``: the point of a Defender that computes the full point alone (no one-draw point
    before it: every draw its own), one Defender per mechanism with its own cache, each point computed once
    and shared by the ``registry`` cases below (it does not depend on how the staged Defender was fed)."""
    overfit = _overfit_defender(built_once, tmp_path_factory.mktemp("every_draw") / "overfit")
    defenders, points = {}, {}

    def point(spec, call):
        every = defenders.setdefault(spec.mechanism, Defender(
            overfit.models, ArtifactCache(overfit.cache.directory / f"../every_draw_{spec.mechanism}")))
        key = (spec.key, tuple(sorted(call.items())))
        if key not in points:
            points[key] = every.point(spec, "naive", **call)
        return points[key]

    return point


@pytest.mark.parametrize("registry", [True, False])
def test_a_full_point_takes_draw_zero_from_the_one_draw_point(overfit, every_draw_point, monkeypatch, registry):
    """The slider shows a new value's one-draw point first, then its full point: the full point takes
    draw 0's answers, outcomes and query from the one-draw point and computes only the later draws — and every
    number (quantile regression's included) is the one a Defender computing all draws itself gives. The page's
    one-draw point leaves the registry's attacks out (``registry=False``): the full point adds theirs on draw 0."""
    for mechanism, value in (("dirichlet", 2.5), ("gpm", 0.01)):
        staged = Defender(overfit.models, ArtifactCache(overfit.cache.directory / f"../staged_{mechanism}_{registry}"))
        full, one = DefenseSpec(mechanism, value, draws=3, seed=7), DefenseSpec(mechanism, value, draws=1, seed=7)
        calls = [{"utility": False}, {"utility": True, "quantile": False}, {"utility": True}]
        for call in calls[:2] if not registry else calls:
            first = staged.point(one, "naive", **call, registry=registry)
            names = {n for a in overfit._fitted_model_attacks() for n in a.names}
            assert (names & set(first.attacks)) == (set() if not registry else names - set(first.skipped_attacks))
        asked, utilities = [], []
        monkeypatch.setattr(staged, "_victim_answers", lambda spec, draw, *a, f=staged._victim_answers:
                            asked.append(draw) or f(spec, draw, *a))
        monkeypatch.setattr(staged, "_utility", lambda spec, draw, f=staged._utility: utilities.append(draw) or f(spec, draw))
        for call in calls:
            a, b = every_draw_point(full, call), staged.point(full, "naive", **call)
            assert replace(a, timings=None) == replace(b, timings=None)
            assert not set(b.skipped_attacks) & set(b.attacks)  # a skipped attack is one the point does not carry
        assert asked and 0 not in asked and set(asked) <= {1, 2}  # draw 0 was the one-draw point's
        assert sorted(utilities) == [1, 2]  # its utility too, once per draw


def test_quantile_refits_one_per_draw_and_the_point_is_deterministic(overfit, monkeypatch):
    """The quantile attack refits its regressor once per draw on that draw's defended pool answers, and two
    Defenders with the same models give the same point, quantile regression's numbers included."""
    from core.attacks.quantile import QuantileRegressor
    from core.experiment.model_attacks import QuantileAttack
    assert any(isinstance(a, QuantileAttack) for a in overfit._fitted_model_attacks())
    first = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../first_refit_cache"))
    second = Defender(overfit.models, ArtifactCache(overfit.cache.directory / "../second_refit_cache"))
    descents = []
    descend = QuantileRegressor._descend
    monkeypatch.setattr(QuantileRegressor, "_descend", lambda self, *a: descents.append(1) or descend(self, *a))
    for mechanism, value in (("dirichlet", 0.5), ("gpm", 0.004)):
        spec = DefenseSpec(mechanism, value, draws=3, seed=3)
        descents.clear()
        a = _json(first.point(spec, "naive", utility=True))
        assert len(descents) == spec.draws  # one refit per draw
        b = _json(second.point(spec, "naive", utility=True))
        assert "quantile" in a["attacks"]
        a.pop("timings"), b.pop("timings")
        assert a == b


def test_full_point_after_a_stored_fast_point_scores_nothing_again(overfit, tmp_path, monkeypatch):
    """A value whose fast point a new Defender read from disk (a curve's point, stored by another session): its
    full point takes the naive numbers from it and computes only the utility — the same point as one computed
    from scratch (the Defenses page's step onto a curve value once re-scored every attack)."""
    from core.defenses import defender as defender_module
    spec = DefenseSpec("dirichlet", 6.5, draws=2, seed=4)
    cache = ArtifactCache(tmp_path / "shared")
    Defender(overfit.models, cache).point(spec, "naive", utility=False)  # stored under defended_fast
    scratch = Defender(overfit.models, ArtifactCache(tmp_path / "scratch")).point(spec, "naive", utility=True)
    later = Defender(overfit.models, cache)
    later.point(spec, "naive", utility=False)  # read from disk
    monkeypatch.setattr(defender_module, "score_attacks", lambda *a, **k: pytest.fail("scored the attacks again"))
    # the page's utility card (no quantile regression, as the fast point it extends)
    full = later.point(spec, "naive", utility=True, quantile=False)
    assert full.utility is not None and full.utility_loss is not None
    full, scratch = _json(full), _json(scratch)
    full.pop("timings"), scratch.pop("timings")
    assert scratch["attacks"].pop("quantile") and scratch["records"]["scores"].pop("quantile")
    assert full.pop("skipped_attacks") == ["quantile"] and scratch.pop("skipped_attacks") == []
    assert full == scratch


def test_the_slider_fast_point_leaves_quantile_regression_to_the_full_point(overfit, tmp_path, monkeypatch):
    """The slider's fast point scores every attack but quantile regression (its refits on every draw's defended
    pool answers were most of a fast point's CPU) and says so in ``skipped_attacks``; the full point — "Measure",
    the worker, the CLI — still scores it, with the same numbers as a full point computed without a fast point
    before it, and only the full point is stored under the full point's key."""
    from core.attacks.quantile import QuantileRegressor
    from core.experiment.model_attacks import QuantileAttack
    assert any(isinstance(a, QuantileAttack) for a in overfit._fitted_model_attacks())
    spec = DefenseSpec("dirichlet", 3.5, draws=3, seed=5)
    cache = ArtifactCache(tmp_path / "slider")
    d = Defender(overfit.models, cache)
    refit = QuantileRegressor.refit
    monkeypatch.setattr(QuantileRegressor, "refit", lambda *a, **k: pytest.fail("refitted at the fast point"))
    fast = d.point(spec, "naive", utility=False)
    card = d.point(spec, "naive", utility=True, quantile=False)  # the page's utility card of the same step
    for p in (fast, card):
        assert "quantile" not in p.attacks and "quantile" not in p.records["scores"]
        assert p.skipped_attacks == ("quantile",)
    assert card.utility is not None
    assert d.cached_point(spec) is None  # the card is not the full point
    assert cache.get_json(cache.key("defended", overfit.cfg.config_hash, spec.key, "naive")) is None
    monkeypatch.setattr(QuantileRegressor, "refit", refit)
    full = d.point(spec, "naive", utility=True)
    assert "quantile" in full.attacks and "quantile" in full.records["scores"] and full.skipped_attacks == ()
    scratch = Defender(overfit.models, ArtifactCache(tmp_path / "scratch")).point(spec, "naive", utility=True)
    assert cache.get_json(cache.key("defended", overfit.cfg.config_hash, spec.key, "naive"))["attacks"]["quantile"] \
        == _json(full)["attacks"]["quantile"]
    # every other attack's number at the fast point is the full point's
    assert {n: r for n, r in full.attacks.items() if n != "quantile"} == fast.attacks
    # after the full point, the table's row and the curve show it (quantile regression included)
    assert "quantile" in d.table_rows(spec, [spec.value])[0].attacks
    # what reads every attack's per-record scores (the Analyses page's exposure view) asks for quantile regression
    with_q = Defender(overfit.models, cache).point(spec, "naive", utility=False, quantile=True)
    assert with_q.records["scores"]["quantile"] == scratch.records["scores"]["quantile"]
    assert with_q.skipped_attacks == ()
    full, scratch = _json(full), _json(scratch)
    full.pop("timings"), scratch.pop("timings")
    assert full == scratch


def test_adaptive_attacker_and_cached_points(overfit):
    spec = DefenseSpec("dirichlet", 1.0)
    p = overfit.point(spec, "both")
    naive, adaptive = p.attacks, p.adaptive_attacks
    # a threshold attack ranks the defended answers by the same signal (same AUC); refitted on shadows
    # answered through the mechanism it moves its threshold and decides better than the naive one
    for name in ("loss_threshold", "entropy_threshold"):
        assert adaptive[name].auc == naive[name].auc < overfit.baseline.attacks[name].auc - 0.05
        assert adaptive[name].boundary["threshold"] != naive[name].boundary["threshold"]
        assert adaptive[name].accuracy > naive[name].accuracy + 0.03
    # the primary (shadow MLP) attacker retrained behind the mechanism recovers part of what it hides
    shadow = _json(p)["adaptive_attacks"]["shadow"]
    assert _json(p)["adaptive_attack"] == {"name": "shadow", **{k: v for k, v in shadow.items() if k != "boundary"}}
    assert p.adaptive_attack.accuracy > p.attack.accuracy + 0.03
    assert p.adaptive_attack.auc < overfit.baseline.attack.auc
    assert p.attack.accuracy == overfit.point(spec, "naive").attack.accuracy
    fresh = Defender(overfit.models, overfit.cache)  # a new page session: served from the disk cache
    assert fresh.cached_point(spec, "both").adaptive_attack == p.adaptive_attack



def test_a_curves_fast_points_are_read_back_by_a_new_session(overfit, monkeypatch):
    """The slider's fast points (naive, no utility) are kept on disk: a new page session reads a
    curve instead of recomputing it (no defended answers computed), and gets the same numbers."""
    spec = DefenseSpec("dirichlet", 2.0)
    values = [0.5, 2.0, 8.0]
    first = overfit.curve(spec, values)
    fresh = Defender(overfit.models, overfit.cache)
    monkeypatch.setattr(Defender, "_naive", lambda *a, **k: pytest.fail("recomputed a cached fast point"))
    again = fresh.curve(spec, values)
    assert [p.value for p in again] == values
    assert [p.attack for p in again] == [p.attack for p in first]
    assert [p.records["scores"] for p in again] == [p.records["scores"] for p in first]
    assert all(p.utility is None for p in again)  # a fast point never stands in for a measured one
    assert fresh.cached_point(spec.at(0.5)) is None

def test_lira_and_rmia_score_defended_points(overfit):
    base = overfit.baseline.attacks
    assert {"lira", "rmia"} <= set(base) and base["lira"].auc > 0.6  # strong on the overfit victim
    # σ = 0 is the identity: the reference attacks see exactly the undefended answers
    identity = overfit.point(DefenseSpec("gpm", 0.0), "both")
    same = identity.attacks
    for name in ("lira", "rmia"):
        assert same[name].auc == pytest.approx(base[name].auc, abs=1e-12)
    # … and the adaptive attacker, refitted on shadows behind the identity, is the naive one
    # (the attacks that query the victim model itself — quantile regression, label-only, gap, LiRA with augmented
    # queries — have no adaptive version: the adaptive attacker refits what is fitted on shadow answers)
    assert set(same) - set(identity.adaptive_attacks) == {"quantile", "label_only", "gap", "lira_augmented"}
    assert identity.adaptive_attacks == {n: same[n] for n in identity.adaptive_attacks}
    # a huge k changes little; k = 0.01 (near one-hot draws from p) costs LiRA and RMIA much of
    # their AUC, but not all: the draws still land on the label more often for members, and the
    # per-record references say on which records that is unusual — so they stay above the shadow
    # MLP, whose accuracy the mechanism does take to chance (a defense judged by a weak attack only
    # looks stronger than it is)
    near = overfit.point(DefenseSpec("dirichlet", 1e8), "naive").attacks
    assert abs(near["lira"].auc - base["lira"].auc) < 0.05
    scattered = overfit.point(DefenseSpec("dirichlet", 0.01), "both")
    for name in ("lira", "rmia"):
        assert scattered.attacks[name].auc < base[name].auc - 0.1
        # refitted behind the mechanism (not the naive numbers again), and the mechanism still costs it
        refit = scattered.adaptive_attacks[name].auc
        assert refit != scattered.attacks[name].auc and refit < base[name].auc - 0.1
    strongest = max(scattered.attacks[n].auc for n in ("lira", "rmia"))
    assert strongest > scattered.attacks["shadow"].auc + 0.05 and strongest > 0.6
    # the GPM's adaptive attacker re-queries noisy shadows on every record it needs
    noisy = overfit.point(DefenseSpec("gpm", 0.02), "both")
    assert {"lira", "rmia"} <= set(noisy.adaptive_attacks)


@pytest.mark.parametrize("spec", [
    DefenseSpec("dirichlet", 0.0), DefenseSpec("dirichlet", -1.0), DefenseSpec("dirichlet", float("nan")),
    DefenseSpec("gpm", -1.0), DefenseSpec("gpm", float("inf")), DefenseSpec("laplace", 1.0),
    DefenseSpec("gpm", 0.1, draws=0),
])
def test_bad_defense_specs_are_refused(spec):
    with pytest.raises(ConfigError):
        spec.validate()


def test_empirical_epsilon():
    y = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    separated = empirical_epsilon(y.astype(float), y)
    assert separated.lower_bound > 3.0  # 200 vs 0 at one threshold: ε̂ ≥ ln(0.98/0.018)
    noise = empirical_epsilon(np.random.default_rng(0).random(400), y)
    assert noise.lower_bound < 0.5


def test_empirical_epsilon_is_a_95_percent_lower_bound_on_an_exactly_eps_dp_mechanism():
    """The claim behind "ε̂ lower bound": on a mechanism that is exactly ε-DP — randomized
    response on membership, e^ε/(1 + e^ε) = 0.73 for ε = 1, whose answers have one threshold — the
    bound exceeds the true ε in at most 5 % of runs (400 runs: + 3 Monte-Carlo standard errors). It
    is not trivially 0 (it reaches most of ε), and the plain ln(TPR/FPR) it is built from — no
    confidence bounds — exceeds ε in many runs, so the check can see an estimate that is no bound.
    (Continuous scores, where the threshold is chosen among many on the same records, are
    tests/test_metrics.py's.)"""
    eps, n, runs = 1.0, 1000, 400
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    p_flag = np.where(member, math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps)))
    bounds, plain = [], []
    for _ in range(runs):
        out = empirical_epsilon((rng.random(2 * n) < p_flag).astype(float), member)
        bounds.append(out.lower_bound)
        plain.append(out.estimate)
    bounds, plain = np.asarray(bounds), np.asarray(plain, float)
    assert (bounds > eps).mean() <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert np.median(bounds) > 0.5 * eps
    assert (plain > eps).mean() > 0.3


def test_responses_validate_and_strict_concat():
    r = Responses.from_probs(torch.softmax(torch.randn(4, 3), 1), [1, 3], torch.tensor([0, 1, 2, 0]))
    bad = Responses(**{**r.__dict__, "entropy": np.full(4, np.nan, np.float32)})
    with pytest.raises(ValueError, match="non-finite"):
        bad.validate()
    a = Responses(**{**r.__dict__, "record_features": {"x": np.ones((2, 1), np.float32)}})
    with pytest.raises(ValueError, match="record features"):
        Responses.concat([a, r])


def test_saturated_share_counts_answers_past_the_dirichlet_floor():
    """The records whose 1 − c lies below (n − 1)·η are those whose LiRA logit Dir_k scatters even at
    large k; the share is what the Defenses page reports beside LiRA/RMIA."""
    from core.defenses.dirichlet import saturated_share
    from core.measurement.responses import Responses

    gap = np.array([1e-8, 1e-7, 1e-2, 0.3])  # 1 − c of four records: two past the floor 9e-6 (n = 10, η = 1e-6)
    probs = np.full((4, 10), 0.0)
    probs[:, 0] = 1 - gap
    probs[:, 1:] = (gap / 9)[:, None]
    r = Responses.from_probs(probs, [1, 1, 1, 1], np.zeros(4, int))
    share = saturated_share(r, np.array([True, False, True, False]), 1e-6)
    assert (share.members, share.non_members, share.floor) == (0.5, 0.5, pytest.approx(9e-6)) and share.most == 0.5
    assert saturated_share(r, np.array([True, True, False, False]), 1e-6).members == 1.0


def test_epsilon_hat_is_one_bound_over_the_pooled_draws(overfit):
    """ε̂ at a point of several draws is one 95 % lower bound over every draw's trials pooled (the records split once),
    not the mean of per-draw bounds (no bound at any level)."""
    from core.measurement.metrics import pooled_empirical_epsilon

    spec = DefenseSpec("dirichlet", 3.0, draws=3, seed=11)
    p = overfit.point(spec, "naive", utility=False)
    detail = p.epsilon_lower_bound_detail
    n = len(overfit.membership)
    assert p.epsilon_lower_bound == detail.lower_bound
    assert detail.n_bound == 3 * (n - n // 2) and "3 draws pooled" in detail.method
    # the same bound as the function over the draws' own scores, which are the answers' draws
    scores = np.stack([score_attacks([a for a in overfit.naive_attacks if a.name == overfit.primary],
                                     overfit._victim_answers(spec, d, False), overfit.membership)[overfit.primary].scores
                       for d in range(3)])
    assert pooled_empirical_epsilon(scores, overfit.membership).lower_bound == pytest.approx(p.epsilon_lower_bound)


def test_pooled_epsilon_of_one_draw_is_the_plain_bound_and_no_signal_bounds_nothing():
    from core.measurement.metrics import pooled_empirical_epsilon

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    s = rng.normal(size=200) + 2.0 * y
    one = pooled_empirical_epsilon(s[None], y)
    plain = empirical_epsilon(s, y)
    assert one.lower_bound == pytest.approx(plain.lower_bound) and one.threshold == plain.threshold
    # 8 draws of scores that ignore membership: a valid 95 % bound is 0 in (nearly) every trial
    hits = sum(pooled_empirical_epsilon(rng.normal(size=(8, 200)), y, seed=t).lower_bound > 0 for t in range(40))
    assert hits <= 6


def test_a_warm_defender_reads_its_setup_and_fits_no_models_stage_attack(overfit, monkeypatch):
    """A second Defender of the same cached run (a new server) reads the baseline and which models-stage attacks the
    run has from the cache: it fits none of them until a point it computes needs them."""
    from core.attacks import registry as attack_registry

    fits = []
    real = attack_registry.entries

    def counting(*args, **kwargs):
        if "models" in args:  # the models-stage attacks (the naive attacks' own entries are "responses")
            fits.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr("core.defenses.defender.attack_registry.entries", counting)
    again = Defender(overfit.models, overfit.cache)
    assert not fits and again._model_attacks is None
    assert again.baseline.to_dict() == overfit.baseline.to_dict()
    spec = DefenseSpec("dirichlet", 5.0, draws=1, seed=3)
    # the slider's draw-1 stand-in needs none of them; a full point does, and gets the same numbers as a cold one
    again.point(spec, "naive", utility=False, registry=False)
    assert not fits
    warm = again.point(spec, "naive", utility=True)
    assert fits and warm.attacks.keys() == overfit.point(spec, "naive", utility=True).attacks.keys()


def test_the_slider_utility_point_is_read_back_by_a_new_defender(overfit):
    """The utility card's point (utility, no quantile regression) is kept on disk: a new server's curves and table
    show the utility of every value a session visited, not only "Measure"'s."""
    spec = DefenseSpec("dirichlet", 7.0, draws=2, seed=5)
    p = overfit.point(spec, "naive", utility=True, quantile=False)
    again = Defender(overfit.models, overfit.cache)
    known = again.table_rows(spec, [7.0])[0]
    assert known.utility == p.utility and known.utility_loss == p.utility_loss

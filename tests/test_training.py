"""The shared training loop and the training-time defenses: optimizer groups, seeded batching,
DP-SGD through Opacus (per-sample clipping, accounting, target ε, σ → 0 / C → ∞), the DP layers
of every model, the pipeline's private runs, the sweeps and the CLI."""
import copy
import json
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from core.cli.main import main
from core.data.corpus import generate_captions
from core.data.translation_records import build_records
from core.defenses.defense_results import DefenseRun
from core.defenses.registry import training_names
from core.defenses.sweeps import check_sweep, expected_sweep, point_config, run_cost_s, sweep
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import trained_models
from core.experiment.roles import model_from_weights, seed_everything, train_model
from core.foundations.errors import ConfigError
from core.models.image import GridLSTM
from core.models.navigation import build_agent
from core.models.translation import PAD
from core.tasks import get_task
from core.tasks.base import TaskData
from core.tasks.translation import _batch
from core.training import dpsgd
from core.training import loop as training
from core.training.loop import Batch, PrivacySettings, TrainingRecord, build_optimizer, privatize, train_epochs
from tests.conftest import cpu_has_bf16_lstm
from tests.typed_runs import typed_run

IMAGE_TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=5, batch_size=16)


def _translation_data(n: int = 24) -> TaskData:
    rec = build_records(generate_captions(n, seed=3), 1, 30)
    return TaskData(rec, np.arange(n), np.arange(0), f"{n} pairs", {})


def _nav_cfg(arch: str, **extra):
    return get_task("navigation").make_config(arch, "quick", dict(
        epochs=1, attack_epochs=(), frames=512, n_envs=4, frames_per_env=64, batch_size=64, recurrence=16, **extra))


# ---------------------------------------------------------------------------- optimizer
def test_weight_decay_reaches_weight_matrices_and_not_biases_or_norms():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    decay, no_decay = training.decay_groups(model)
    assert decay == ["0.weight", "3.weight"]
    assert no_decay == ["0.bias", "1.weight", "1.bias", "3.bias"]
    before = copy.deepcopy(model.state_dict())
    opt = build_optimizer(model, lr=0.1, weight_decay=0.5)
    (0.0 * sum(p.sum() for p in model.parameters())).backward()  # zero data gradient: only the penalty moves
    opt.step()
    after = model.state_dict()
    for name in decay:
        assert not torch.equal(before[name], after[name]), name
    for name in no_decay:
        assert torch.equal(before[name], after[name]), name
    # a recurrent model: the LSTM's weight matrices decay, its biases do not
    agent = build_agent("rnn", dp=True)
    decayed = set(training.decay_groups(agent)[0])
    assert "cell.ih.weight" in decayed and "cell.ih.bias" not in decayed
    assert all((name in decayed) == (p.dim() >= 2) for name, p in agent.named_parameters())


def test_without_weight_decay_the_optimizer_is_plain_adam():
    torch.manual_seed(0)
    a = nn.Linear(5, 3)
    b = copy.deepcopy(a)
    x = torch.randn(8, 5)
    opt_a, opt_b = build_optimizer(a, 1e-2), torch.optim.Adam(b.parameters(), lr=1e-2)
    for _ in range(3):
        for m, o in ((a, opt_a), (b, opt_b)):
            o.zero_grad()
            m(x).pow(2).mean().backward()
            o.step()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


# ---------------------------------------------------------------------------- the loop
def _linear_problem(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, w = torch.randn(n, 6, generator=g), torch.randn(6, 2, generator=g)
    return x, (x @ w).argmax(1)


def test_seeded_batching_and_hooks():
    x, y = _linear_problem()

    def run():
        torch.manual_seed(3)
        model = nn.Linear(6, 2)
        seen, epochs = [], []
        rec = train_epochs(model, len(x), lambda i: F.cross_entropy(model(x[i]), y[i]), epochs=2, batch_size=10,
                           optimizer=build_optimizer(model, 1e-2), generator=torch.Generator().manual_seed(7),
                           on_batch=seen.append, on_epoch=lambda e, m: epochs.append(e))
        return model, seen, epochs, rec

    m1, seen, epochs, rec = run()
    m2, seen2, _, _ = run()
    assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters()))
    assert epochs == [1, 2] and rec.steps == 8 and rec.privacy is None
    assert [len(b.index) for b in seen] == [10, 10, 10, 2] * 2
    assert sorted(np.concatenate([b.index for b in seen[:4]]).tolist()) == list(range(32))  # a permutation per epoch
    assert all(isinstance(b, Batch) and math.isfinite(b.loss) for b in seen)
    assert [b.index.tolist() for b in seen] == [b.index.tolist() for b in seen2]


def test_sigma_zero_and_huge_clip_trains_like_the_non_private_loop():
    """σ = 0, C = 10⁶ and one batch holding every record (q = 1): DP-SGD's step is the plain one."""
    x, y = _linear_problem(n=16)
    models = []
    for privacy in (None, PrivacySettings(max_grad_norm=1e6, noise_multiplier=0.0)):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
        rec = train_epochs(model, 16, lambda i, m=model: F.cross_entropy(m(x[i]), y[i]), epochs=5, batch_size=16,
                           optimizer=build_optimizer(model, 1e-2, 1e-3), generator=torch.Generator().manual_seed(1),
                           privacy=privacy)
        models.append(model)
    assert rec.privacy.sample_rate == 1.0 and rec.privacy.steps == 5
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_sigma_zero_huge_clip_tiny_image_run_learns_like_the_non_private_one():
    task = get_task("image")
    accuracies = {}
    for dp in ("off", "sigma"):
        cfg = task.make_config("ffnn", "quick", dict(IMAGE_TINY, n_train=64, epochs=4, dp=dp, dp_noise_multiplier=0.0,
                                                     dp_max_grad_norm=1e6))
        data = task.load(cfg)
        model = train_model(task, cfg, data, data.victim_pool[:64], seed=1)
        accuracies[dp] = task.utility(cfg, model, data, data.victim_pool[:64])
    assert accuracies["off"] > 0.5 and abs(accuracies["sigma"] - accuracies["off"]) < 0.15, accuracies


# ---------------------------------------------------------------------------- per-sample gradients
DP_MODELS = ["image/ffnn", "image/rnn", "translation/rnn", "translation/ffnn", "navigation/ffnn", "navigation/rnn"]


def _dp_model(name: str):
    """(model, loss(model, index), n): the DP architecture ``task/arch`` and its loss on a tiny batch."""
    task_name, arch = name.split("/")
    seed_everything(0)
    if task_name == "image":
        task = get_task("image")
        cfg = task.make_config(arch, "quick", {"dp": "sigma"})
        data = task.load(cfg)
        x, y = data.records.images[:5], data.records.labels[:5]
        return task.build_model(cfg, data), lambda m, i: F.cross_entropy(m(x[i]), y[i]), 5
    if task_name == "translation":
        task = get_task("translation")
        data = _translation_data(12)
        rec = data.records
        # the task's DP batches come ordered by decreasing source length (unpermuted packing)
        ids = np.argsort(-np.array([len(rec.src_ids[i]) for i in range(5)]), kind="stable")
        cfg = task.make_config(arch, "quick", {"dp": "sigma", "emb": 16, "hidden": 16, "dropout": 0.0})

        def loss(m, i):  # the task's DP loss: mean over each pair's tokens, then over pairs
            src, src_len, tgt_in, tgt_out = _batch(rec, ids[i.numpy()], torch.device("cpu"))
            tok = F.cross_entropy(m(src, src_len, tgt_in).transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none")
            valid = (tgt_out != PAD).float()
            return ((tok * valid).sum(1) / valid.sum(1)).mean()

        return task.build_model(cfg, data), loss, 5
    agent = build_agent(arch, dp=True)
    obs, mem = torch.randint(0, 3, (4, 3, 7, 7, 3)), torch.randn(4, agent.memory_size)
    masks = torch.ones(4, 3)
    masks[1, 1] = 0  # an episode starts inside window 1

    def loss(m, i):
        logits, value, _ = m.forward_sequence(obs[i], mem[i], masks[i])
        return (torch.log_softmax(logits, -1)[..., 0] + value).mean()

    return agent, loss, 4


@pytest.mark.parametrize("name", DP_MODELS)
def test_per_sample_gradients_are_exact_and_clipped_to_c(name):
    """Opacus' per-sample gradients of our DP layers equal each record's own gradient, and the
    DPOptimizer's update is Σ clip(g_x, C) / B̄ with every clipped norm ≤ C (σ = 0)."""
    model, loss, n = _dp_model(name)
    model.train()
    reference = copy.deepcopy(model)
    c = 1e-3  # far below every gradient norm: clipping binds for every record
    private = privatize(model, build_optimizer(model, 1e-3), n, n, 1, PrivacySettings(max_grad_norm=c, noise_multiplier=0.0),
                        torch.Generator().manual_seed(0), "a record")
    index = torch.arange(n)
    private.zero_grad()
    private.backward(loss(model, index))
    norms = dpsgd.per_sample_norms(private.optimizer)
    per_sample = {k: p.grad_sample.detach().clone() for k, p in model.named_parameters()}
    expected = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    for i in range(n):
        reference.zero_grad()
        loss(reference, index[i : i + 1]).backward()
        own = {k: (p.grad if p.grad is not None else torch.zeros_like(p)) for k, p in reference.named_parameters()}
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in own.values()))
        torch.testing.assert_close(norms[i].double(), norm, rtol=1e-4, atol=1e-7)
        clipped_norm = 0.0
        for k, g in own.items():
            torch.testing.assert_close(per_sample[k][i], g, rtol=1e-3, atol=1e-6)
            clipped = g * min(1.0, c / (float(norm) + 1e-6))
            expected[k] += clipped
            clipped_norm += float((clipped.double() ** 2).sum())
        assert math.sqrt(clipped_norm) <= c * (1 + 1e-6)
    private.step()
    b_bar = private.optimizer.expected_batch_size
    for k, p in model.named_parameters():
        torch.testing.assert_close(p.grad * b_bar, expected[k], rtol=1e-4, atol=1e-9)
    assert (norms > c).all()
    state = private.close().state_dict()
    assert not any(k.startswith("_module.") for k in state)
    assert not any(hasattr(p, "grad_sample") for p in model.parameters())


def test_grid_lstm_computes_what_nn_lstm_computes():
    torch.manual_seed(0)
    lstm = nn.LSTM(5, 7, batch_first=True, bidirectional=True)
    grid = GridLSTM(5, 7)
    with torch.no_grad():
        for d, suffix in ((0, ""), (1, "_reverse")):
            grid.ih[d].weight.copy_(getattr(lstm, f"weight_ih_l0{suffix}"))
            grid.ih[d].bias.copy_(getattr(lstm, f"bias_ih_l0{suffix}"))
            grid.hh[d].weight.copy_(getattr(lstm, f"weight_hh_l0{suffix}"))
            grid.hh[d].bias.copy_(getattr(lstm, f"bias_hh_l0{suffix}"))
    x = torch.randn(3, 4, 6, 5)  # 3 images, 4 rows of 6 cells
    torch.testing.assert_close(grid(x), lstm(x.reshape(12, 6, 5))[0].reshape(3, 4, 6, 14), rtol=1e-5, atol=1e-6)
    assert sum(p.numel() for p in grid.parameters()) == sum(p.numel() for p in lstm.parameters())


def test_an_empty_poisson_batch_still_takes_a_noisy_step():
    model = nn.Linear(3, 2)
    before = copy.deepcopy(model.state_dict())
    private = privatize(model, build_optimizer(model, 1e-2), 10, 2, 1, PrivacySettings(max_grad_norm=1.0),
                        torch.Generator().manual_seed(0), "a record")
    private.zero_grad()
    private.step(empty=True)
    assert private.steps == 1
    assert not torch.equal(before["weight"], model.weight)


# ---------------------------------------------------------------------------- accounting
def test_epsilon_equals_opacus_accountants_on_the_recorded_history():
    from opacus.accountants import PRVAccountant, RDPAccountant

    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", dict(IMAGE_TINY, dp="sigma", dp_noise_multiplier=1.1, dp_max_grad_norm=0.5))
    data = task.load(cfg)
    records: list[TrainingRecord] = []
    train_model(task, cfg, data, data.victim_pool[:40], seed=2, on_record=records.append)
    rec = records[0].privacy
    assert rec.noise_multiplier == 1.1 and rec.max_grad_norm == 0.5
    assert rec.sample_rate == pytest.approx(1 / 3) and rec.steps == 2 * 3 == records[0].steps
    assert rec.history == [[1.1, pytest.approx(1 / 3), 6]]
    report = dpsgd.report(rec, cfg.dp_delta)
    for name, acc in (("rdp", RDPAccountant()), ("prv", PRVAccountant())):
        acc.history = [tuple(h) for h in rec.history]
        assert report["epsilons"][name] == pytest.approx(acc.get_epsilon(delta=1e-4), rel=1e-9)
    assert report["epsilon"] == report["epsilons"]["rdp"] and report["delta"] == 1e-4
    assert report["epsilons"]["prv"] <= report["epsilons"]["rdp"]
    assert set(report) >= {"noise_multiplier", "max_grad_norm", "sample_rate", "steps", "delta", "accountant"}


def test_target_epsilon_finds_sigma_with_get_noise_multiplier():
    from opacus.accountants.utils import get_noise_multiplier

    x, y = _linear_problem(n=40)
    model = nn.Linear(6, 2)
    rec = train_epochs(model, 40, lambda i: F.cross_entropy(model(x[i]), y[i]), epochs=3, batch_size=10,
                       optimizer=build_optimizer(model, 1e-2), generator=torch.Generator().manual_seed(0),
                       privacy=PrivacySettings(max_grad_norm=1.0, noise_multiplier=None, target_epsilon=2.0)).privacy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RDP's notes while the search probes tiny σ
        sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-4, sample_rate=0.25, steps=12, accountant="rdp")
    assert rec.noise_multiplier == pytest.approx(sigma) and rec.target_epsilon == 2.0
    assert 1.9 <= dpsgd.epsilon(rec.history, 1e-4, "rdp") <= 2.0
    assert dpsgd.epsilon([[0.0, 0.5, 3]], 1e-4) == math.inf


# ---------------------------------------------------------------------------- every task, through the loop
@pytest.mark.parametrize("task_name,arch", [("image", "rnn"), ("translation", "rnn"), ("translation", "ffnn"),
                                            ("navigation", "rnn"), ("navigation", "ffnn")])
def test_every_task_trains_through_the_shared_loop(task_name, arch, monkeypatch, tmp_path):
    built = []
    original = training.decay_groups
    monkeypatch.setattr(training, "decay_groups", lambda m: built.append(m) or original(m))
    task = get_task(task_name)
    if task_name == "image":
        cfg = task.make_config(arch, "quick", dict(IMAGE_TINY, epochs=1, dp="sigma"))
        data = task.load(cfg)
        index = data.victim_pool[:16]
    elif task_name == "translation":
        cfg = task.make_config(arch, "quick", {"epochs": 1, "attack_epochs": (), "emb": 16, "hidden": 16,
                                               "batch_size": 8, "dp": "sigma"})
        data, index = _translation_data(), np.arange(16)
    else:
        cfg = _nav_cfg(arch, dp="sigma")
        data = task.load(cfg)
        index = data.victim_pool[:2]
    batches, records = [], []
    model = train_model(task, cfg, data, index, seed=0, on_batch=batches.append, on_record=records.append)
    assert len(built) == 1 and built[0] is model  # the shared optimizer
    assert batches and all(isinstance(b, Batch) for b in batches)
    privacy = records[0].privacy
    assert privacy.steps == records[0].steps >= len(batches)
    assert privacy.noise_multiplier == 1.0 and privacy.max_grad_norm == 1.0
    unit = {"image": "image", "translation": "sentence pair", "navigation": "trajectory window"}[task_name]
    assert unit in privacy.unit
    # the weights of the model that trained go through the cache (safetensors: each tensor once)
    # and load into the model the config builds, strictly
    weights = model.state_dict()
    assert not any(k.startswith("_module.") for k in weights)
    cache = ArtifactCache(tmp_path)
    cache.put_tensors(cache.key("test", "weights"), weights)
    reloaded = model_from_weights(task, cfg, cache.get_tensors(cache.key("test", "weights")), data)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reloaded.state_dict().values()))


# ---------------------------------------------------------------------------- config
def test_dp_fields_are_checked_and_hashed_only_where_they_matter():
    task = get_task("image")
    off = task.make_config("ffnn", "quick")
    assert off.with_updates({"dp_noise_multiplier": 3.0}).config_hash == off.config_hash  # inert while off
    sigma = off.with_updates({"dp": "sigma"})
    assert sigma.training_hash != off.training_hash
    assert sigma.with_updates({"dp_noise_multiplier": 2.0}).training_hash != sigma.training_hash
    other_delta = sigma.with_updates({"dp_delta": 1e-5})
    assert other_delta.training_hash == sigma.training_hash  # δ changes the reported ε, not the training
    assert other_delta.config_hash != sigma.config_hash
    eps = off.with_updates({"dp": "epsilon"})
    assert eps.with_updates({"dp_noise_multiplier": 5.0}).training_hash == eps.training_hash
    assert eps.with_updates({"dp_epsilon": 2.0}).training_hash != eps.training_hash
    for bad in ({"dp_noise_multiplier": -1.0}, {"dp_max_grad_norm": 0.0}, {"dp_delta": 1.0}, {"dp_epsilon": 0.0},
                {"dp": "maybe"}, {"dp_accountant": "gdp"}):
        with pytest.raises(ConfigError):
            off.with_updates(bad).validate()


def test_sweep_values_are_checked_before_training():
    image, nav = get_task("image").make_config("ffnn", "quick"), _nav_cfg("ffnn")
    assert set(training_names()) == {"dpsgd", "l2", "clip"} and training_names("image") == ("dpsgd", "l2")
    for mechanism, values, target, cfg in (("dpsgd", [-1.0], False, image), ("dpsgd", [0.0], True, image),
                                           ("l2", [-0.1], False, image), ("clip", [0.1], False, image),
                                           ("clip", [1.0], False, nav), ("l2", [1.0], True, image)):
        with pytest.raises(ConfigError):
            check_sweep(cfg, mechanism, values, target)
    assert point_config(nav, "clip", 0.05).options.clip_eps == 0.05
    assert point_config(image, "l2", 0.01).weight_decay == 0.01
    p = point_config(image, "dpsgd", 3.0, target_epsilon=True, max_grad_norm=2.0)
    assert (p.dp, p.dp_epsilon, p.dp_max_grad_norm) == ("epsilon", 3.0, 2.0)


def test_dp_bound_on_attack_accuracy():
    from core.defenses.sweeps import accuracy_bound

    assert accuracy_bound(0.0, 0.0) == 0.5 and accuracy_bound(50.0, 0.0) == pytest.approx(1.0)
    assert accuracy_bound(1.0, 0.0) == pytest.approx(math.e / (1 + math.e))  # e^ε/(1 + e^ε)
    assert accuracy_bound(1.0, 1e-4) > accuracy_bound(1.0, 0.0)


@pytest.mark.parametrize("args", [
    ["--mechanism", "dpsgd", "--values=-0.5"],
    ["--mechanism", "dpsgd", "--values", "1", "--set", "dp_max_grad_norm=0"],
    ["--mechanism", "dpsgd", "--values", "1", "--set", "dp_delta=1"],
    ["--mechanism", "dpsgd", "--values", "0", "--target-epsilon"],
    ["--mechanism", "dpsgd", "--values", "1", "--set", "dp=epsilon", "--set", "dp_epsilon=-2"],
])
def test_cli_bad_dp_values_exit_2_with_one_line(args, capsys):
    assert main(["defend", "--task", "image", "--arch", "ffnn", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


# ---------------------------------------------------------------------------- pipeline and sweep
@pytest.fixture(scope="module")
def dp_sweep(tmp_path_factory):
    """A DP-SGD sweep over one σ of a tiny image CNN (the baseline and one private run, each with a shadow)."""
    folder = tmp_path_factory.mktemp("cache")
    cfg = get_task("image").make_config("ffnn", "quick", IMAGE_TINY)
    run = sweep(cfg, "dpsgd", [2.0], cache=ArtifactCache(folder))
    assert isinstance(run, DefenseRun)  # typed from birth; the tests below read its JSON
    return cfg, folder, run.to_dict()


def test_dp_sweep_json_has_the_defenses_shape_plus_dpsgd(dp_sweep):
    cfg, folder, result = dp_sweep
    assert set(result) >= {"task", "arch", "mechanism", "attacker", "baseline", "points", "spec"}
    assert set(result["baseline"]) >= {"attack", "attacks", "utility", "utility_train", "utility_metric"}
    (point,) = result["points"]
    assert set(point) >= {"value", "attack", "utility", "utility_loss", "epsilon", "delta", "dpsgd"}
    block = point["dpsgd"]
    assert set(block) >= {"noise_multiplier", "max_grad_norm", "sample_rate", "steps", "delta", "accountant"}
    assert block["noise_multiplier"] == 2.0 and block["steps"] == 2 * 3 and point["delta"] == 1e-4
    assert point["epsilon"] == pytest.approx(dpsgd.epsilon(block["history"], 1e-4, "rdp"))
    assert block["epsilons"]["prv"] is not None and point["utility_loss"] is not None
    typed = DefenseRun.from_dict(result)  # read back typed, written back as it was
    assert typed.to_dict() == result and typed.points[0].dpsgd.noise_multiplier == 2.0
    assert typed.points[0].dpsgd.epsilon_by("rdp") == block["epsilons"]["rdp"]


def test_private_victim_and_shadows_share_the_dp_recipe_and_weights_reload(dp_sweep):
    cfg, folder, _ = dp_sweep
    models = trained_models(point_config(cfg, "dpsgd", 2.0), cache=ArtifactCache(folder))
    assert models.victim.cache_hit and models.shadows[0].cache_hit
    keys = ("noise_multiplier", "max_grad_norm", "sample_rate", "steps")
    assert [getattr(models.shadows[0].privacy, k) for k in keys] == [getattr(models.victim.privacy, k) for k in keys]
    model = models.model("victim")  # the cached weights load strictly into the DP model of the config
    assert not any(k.startswith("_module.") for k in models.victim.weights)
    assert sum(p.numel() for p in model.parameters()) == models.victim.params


def test_cli_defend_dpsgd_reuses_the_cached_points(dp_sweep, tmp_path, monkeypatch):
    cfg, folder, result = dp_sweep
    monkeypatch.setenv("MIA_CACHE_DIR", str(folder))
    out = tmp_path / "dp.json"
    sets = [a for k, v in IMAGE_TINY.items() for a in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]
    assert main(["defend", "--task", "image", "--arch", "ffnn", "--mechanism", "dpsgd", "--values", "2",
                 "--quiet", "--out", str(out), *sets]) == 0
    written = json.loads(out.read_text())
    assert written["points"][0]["cache_hit"] and written["points"][0]["config_hash"] == result["points"][0]["config_hash"]
    assert written["points"][0]["dpsgd"]["epsilons"] == result["points"][0]["dpsgd"]["epsilons"]


def test_training_defenses_page_shows_a_cached_sweep_and_offers_the_rest(dp_sweep, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    _, folder, _ = dp_sweep
    monkeypatch.setenv("MIA_CACHE_DIR", str(folder))
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **IMAGE_TINY})  # the sweep's config
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"))
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run(timeout=60)
    assert not at.exception, at.exception
    at.multiselect(key="tdef:archs").set_value(["ffnn"])
    at.text_input(key="tdef:grid:dpsgd").set_value("2").run(timeout=120)
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.label.startswith("Run the sweep")]  # everything cached
    assert len(at.get("plotly_chart")) >= 4 and at.dataframe
    at.text_input(key="tdef:grid:dpsgd").set_value("2,8").run(timeout=120)
    assert not at.exception, at.exception
    # the time is announced before the click, from the cached point 2 measured on this machine
    button = [b for b in at.button if b.label.startswith("Run the sweep (1 run to train, ~")]
    assert button, [b.label for b in at.button]
    assert any(c.value.startswith("Expected time: about ") and "1 point of this sweep" in c.value for c in at.caption)
    at.text_input(key="tdef:grid:dpsgd").set_value("-1").run(timeout=60)
    assert at.error and "σ" in at.error[0].value


def test_sweep_time_is_expected_from_measured_runs():
    summary = {"timings": {"data_s": 1.0, "victim_trained_s": 10.0, "shadows_trained_s": 20.0, "attack_s": 4.0,
                           "total_s": 0.1}}  # total_s of a summary loaded from the cache is the load time
    assert run_cost_s(typed_run(summary)) == 35.0
    assert run_cost_s(typed_run({"timings": {"total_s": 3.0}})) is None  # an older summary: no per-model training times
    # points of this sweep measured: their mean, per architecture
    e = expected_sweep([("ffnn", False), ("ffnn", False), ("rnn", False)], {"ffnn": [30.0, 50.0], "rnn": [70.0]},
                       {"ffnn": 10.0, "rnn": 20.0}, "dpsgd")
    assert e.seconds == 40.0 + 40.0 + 70.0 and not e.lower_bound and "3 points" in e.basis
    # only the undefended run measured: its cost, a lower bound under DP-SGD, not under L2
    e = expected_sweep([("ffnn", False), ("rnn", False)], {"ffnn": [], "rnn": []}, {"ffnn": 10.0, "rnn": 20.0}, "dpsgd")
    assert e.seconds == 30.0 and e.lower_bound and "lower bound" in e.basis
    assert not expected_sweep([("ffnn", False)], {}, {"ffnn": 10.0}, "l2").lower_bound
    # nothing of an architecture measured: no number
    e = expected_sweep([("ffnn", False), ("rnn", True)], {"ffnn": [5.0]}, {"ffnn": None, "rnn": None}, "l2")
    assert e.seconds is None and "rnn" in e.basis


# ---------------------------------------------------------------------------- precision
@pytest.mark.parametrize("task_name, arch, extra", [
    ("image", "rnn", dict(IMAGE_TINY, n_train=64, epochs=3)),
    ("translation", "ffnn", {"epochs": 3, "attack_epochs": (), "emb": 16, "hidden": 16, "dropout": 0.0, "n_train": 64}),
])
def test_bf16_autocast_trains_in_lower_precision_and_answers_in_float(task_name, arch, extra, monkeypatch):
    """bf16 runs the training forward passes under autocast; weights stay float32, and the model
    answers (Responses, utility) outside autocast: a bf16 and a float32 run differ in training only."""
    task = get_task(task_name)
    autocasts = []
    real = training._step

    def spy(*args, **kwargs):
        autocasts.append(args[7] if len(args) > 7 else kwargs.get("autocast"))
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "_step", spy)
    cfg = task.make_config(arch, "quick", dict(extra, precision="bf16"))
    data = task.load(cfg)
    index = data.victim_pool[: cfg.n_train]
    if task_name == "image" and arch == "rnn" and not cpu_has_bf16_lstm():
        with pytest.raises(ConfigError, match="precision=bf16: this CPU has no torch.bfloat16 kernel") as refused:
            train_model(task, cfg, data, index, seed=1)
        assert "\n" not in str(refused.value)
        pytest.skip("this CPU's oneDNN has no bfloat16 LSTM: the one-line refusal was checked instead")
    model = train_model(task, cfg, data, index, seed=1)
    assert autocasts and all(a is torch.bfloat16 for a in autocasts)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    responses = task.respond(cfg, model.eval(), data, index[:8]).validate()
    assert np.isfinite(responses.cross_entropy).all()

    autocasts.clear()
    plain_cfg = task.make_config(arch, "quick", extra)
    plain = train_model(task, plain_cfg, data, index, seed=1)
    assert autocasts and all(a is None for a in autocasts)
    # the forward passes really were bf16: the same seeded training ends elsewhere …
    diff = max(float((p - q).detach().abs().max()) for p, q in zip(model.parameters(), plain.parameters()))
    assert diff > 1e-4
    # … having learned about as much
    u_bf16, u_fp32 = task.utility(cfg, model, data, index), task.utility(plain_cfg, plain, data, index)
    assert abs(u_bf16 - u_fp32) <= 0.25 * max(abs(u_fp32), 1.0), (u_bf16, u_fp32)


def test_a_missing_low_precision_kernel_is_one_line_before_any_weight_moves():
    """A backend without a bfloat16 kernel for a layer fails the first forward pass: a ConfigError (CLI: error:,
    exit 2) with the model untouched; any other error of the first step, or a kernel error later, stays a bug."""
    model = nn.Linear(2, 2)
    before = [p.detach().clone() for p in model.parameters()]

    def no_kernel(index):
        raise RuntimeError("could not create a primitive descriptor for the LSTM forward propagation primitive.\nmore")

    def kwargs():
        return dict(epochs=1, batch_size=2, optimizer=build_optimizer(model, 0.1), generator=torch.Generator())

    with pytest.raises(ConfigError, match="precision=bf16: .*precision=float32") as refused:
        train_epochs(model, 4, no_kernel, autocast=torch.bfloat16, **kwargs())
    assert "\n" not in str(refused.value)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))
    with pytest.raises(RuntimeError, match="primitive") as plain:  # float32: not ours to explain
        train_epochs(model, 4, no_kernel, **kwargs())
    assert not isinstance(plain.value, ConfigError)

    def bug(index):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes") as other:
        train_epochs(model, 4, bug, autocast=torch.bfloat16, **kwargs())
    assert not isinstance(other.value, ConfigError)


def test_autocast_is_refused_with_dp_sgd():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="DP-SGD"):
        train_epochs(model, 4, lambda i: model(torch.zeros(len(i), 2)).sum(), epochs=1, batch_size=2,
                     optimizer=build_optimizer(model, 0.1), generator=torch.Generator(), privacy=PrivacySettings(1.0),
                     autocast=torch.bfloat16)


def test_privacy_settings_without_sigma_or_target_epsilon_are_refused():
    settings = dpsgd.PrivacySettings(max_grad_norm=1.0, noise_multiplier=None, target_epsilon=None)
    with pytest.raises(ConfigError, match="noise multiplier σ or a target ε"):
        dpsgd.resolve_noise(settings, 0.1, 10)
    assert dpsgd.resolve_noise(dpsgd.PrivacySettings(max_grad_norm=1.0, noise_multiplier=2), 0.1, 10) == 2.0

"""The attack registry, quantile regression and the label-only attacks, on planted cases."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import torch
from torch import nn

from core.attacks import registry
from core.attacks.label_only import GAP_THRESHOLD, correct_counts, fit_count_threshold, gap_scores
from core.attacks.quantile import QuantileRegressor, quantile_scores
from core.attacks.shadow_attacks import ThresholdAttack
from core.cli.main import main
from core.data.image_sources import load_digits_images
from core.experiment.model_attacks import LabelOnlyAttack, QuantileAttack  # noqa: F401  (registers them)
from core.experiment.results import RunSummary
from core.measurement.bootstrap import bootstrap_metric
from core.measurement.metrics import evaluate_attack, roc_auc
from core.tasks import get_task
from core.tasks.base import TaskData
from core.tasks.image import ImageRecords, ImageTask
from core.views.run_figures import metrics_table

TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=1",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]


# ---------------------------------------------------------------------------- quantile regression
def _planted(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Non-member scores s | x ~ N(μ(x), σ(x)²), μ = 1.5 x₀ − x₁, σ = 0.3 + 0.2 (x₀ + 1): features, s, μ, σ."""
    x = rng.uniform(-1, 1, size=(n, 2))
    mu, sigma = 1.5 * x[:, 0] - x[:, 1], 0.3 + 0.2 * (x[:, 0] + 1)
    return x, mu + sigma * rng.standard_normal(n), mu, sigma


def test_quantile_regression_recovers_the_planted_quantile_and_its_fpr_is_alpha():
    rng = np.random.default_rng(0)
    alpha, z = 0.1, 1.2815515655446004  # Φ⁻¹(0.9)
    x, s, _, _ = _planted(4000, rng)
    reg = QuantileRegressor(alpha).fit(x, s)
    x_new, s_new, mu, sigma = _planted(4000, rng)
    q_hat, q_true = reg.predict(x_new), mu + z * sigma
    assert np.abs(q_hat - q_true).mean() < 0.08, np.abs(q_hat - q_true).mean()
    # fresh non-members: member iff s > q̂ ⇒ FPR ≈ α; members planted one σ higher are found far more often
    fpr = float((quantile_scores(s_new, q_hat) >= 0).mean())
    assert abs(fpr - alpha) < 0.025, fpr
    tpr = float((quantile_scores(s_new + sigma * 1.0, q_hat) >= 0).mean())
    assert tpr > 0.3, tpr
    # a constant predictor (the global quantile) cannot do this: per-record quantiles are the point
    assert np.abs(np.quantile(s, 1 - alpha) - q_true).mean() > 3 * np.abs(q_hat - q_true).mean()


def test_quantile_refit_moves_to_the_new_scores():
    rng = np.random.default_rng(1)
    x, s, _, _ = _planted(2000, rng)
    reg = QuantileRegressor(0.1).fit(x, s)
    moved = reg.refit(x, s + 2.0, steps=150)  # every score two higher: so is every quantile
    shift = moved.predict(x) - reg.predict(x)
    assert abs(shift.mean() - 2.0) < 0.15, shift.mean()


# ---------------------------------------------------------------------------- label-only
def _digits_data() -> TaskData:
    x, y = load_digits_images()
    images = torch.from_numpy((x - x.mean()) / x.std())
    return TaskData(ImageRecords(images, torch.from_numpy(y), 10), np.arange(len(x)), np.zeros(0, np.int64), "digits")


def _memorise(data: TaskData, index: np.ndarray, labels: torch.Tensor, seed: int) -> nn.Module:
    """An MLP trained to 100 % on ``index`` with ``labels`` (random: only memorising fits them)."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    x = data.records.images[index]
    for _ in range(400):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), labels).backward()
        opt.step()
    assert (net(x).argmax(1) == labels).all()
    return net.eval()


def test_label_only_separates_a_memorising_model_from_one_that_did_not():
    data = _digits_data()
    rng = np.random.default_rng(0)
    g = torch.Generator().manual_seed(0)
    # random labels on every record: a model is right on a record beyond chance only by memorising it
    data.records.labels = torch.randint(0, 10, (len(data.records.labels),), generator=g)
    order = rng.permutation(len(data.records.labels))
    members, nonmembers, shadow_in, shadow_out, other = (order[i * 150:(i + 1) * 150] for i in range(5))
    labels = data.records.labels
    task, cfg = ImageTask(), None  # label_queries reads no config field
    victim = _memorise(data, members, labels[members], 1)
    shadow = _memorise(data, shadow_in, labels[shadow_in], 2)
    bystander = _memorise(data, other, labels[other], 3)  # trained on neither members nor non-members
    eval_index = np.r_[members, nonmembers]
    membership = np.r_[np.ones(150, bool), np.zeros(150, bool)]
    threshold = fit_count_threshold(task.label_queries(cfg, shadow, data, np.r_[shadow_in, shadow_out], 10), membership)

    def attack(model: nn.Module) -> tuple[np.ndarray, np.ndarray]:
        correct = task.label_queries(cfg, model, data, eval_index, 10)
        return correct_counts(correct), gap_scores(correct)

    counts, gap = attack(victim)
    auc = bootstrap_metric(counts, membership, "auc", n_boot=300)
    assert auc.ci_low > 0.75, auc
    # random labels are memorised point by point, not robustly: the shifted queries add noise to the count
    # (measured 0.75 here, while the gap attack reads the clean identity query: 0.95)
    assert evaluate_attack("label_only", counts, membership, threshold).accuracy > 0.7
    # the gap attack on a balanced set: ½ + (train − test accuracy)/2 ≈ ½ + (1 − 0.1)/2
    assert evaluate_attack("gap", gap, membership, GAP_THRESHOLD).accuracy == pytest.approx(
        0.5 + (gap[membership].mean() - gap[~membership].mean()) / 2)
    counts_b, _ = attack(bystander)
    auc_b = bootstrap_metric(counts_b, membership, "auc", n_boot=300)
    assert auc_b.ci_low < 0.5 < auc_b.ci_high, auc_b
    # the queries are augmentations: the identity column is the plain prediction, the others differ
    correct = task.label_queries(cfg, victim, data, members[:50], 10)
    assert correct[:, 0].all() and not correct.all()


def test_label_queries_are_refused_with_the_reason_where_a_task_has_none():
    with pytest.raises(Exception, match="label-only queries"):
        get_task("translation").label_queries(None, None, None, np.arange(2), 3)
    entry = registry.get("label_only")
    assert not entry.applies_to("translation") and "token sequence" in entry.why_not("translation")
    assert entry.applies_to("image")


# ---------------------------------------------------------------------------- the registry end to end
@pytest.fixture
def toy_attack():
    entry = registry.register(registry.AttackEntry(
        "toy_loss", "Toy loss threshold", "toy loss", "shadows", "responses",
        lambda training: ThresholdAttack("toy_loss", "cross_entropy")))
    yield entry
    registry.unregister("toy_loss")


def test_an_attack_registered_in_a_test_runs_in_the_pipeline_json_table_and_defenses(toy_attack, tmp_path):
    with pytest.raises(Exception, match="taken"):
        registry.register(toy_attack)
    out = tmp_path / "r.json"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["run", "--task", "image", "--arch", "ffnn", *TINY, "--out", str(out), "--quiet"])
    assert rc == 0, err.getvalue()
    s = json.loads(out.read_text())
    attacks = s["attacks"]
    # the toy reads the same signal with the same rule as the loss threshold: the same numbers
    assert attacks["toy_loss"]["auc"] == attacks["loss_threshold"]["auc"]
    assert attacks["toy_loss"]["accuracy"] == attacks["loss_threshold"]["accuracy"]
    # the new attacks ran, with their cost; LiRA/RMIA did not (one shadow), and the summary says why
    for name in ("quantile", "label_only", "gap"):
        assert 0.0 <= attacks[name]["auc"] <= 1.0 and attacks[name]["tpr_at_fpr"]["0.01"] is not None
    assert s["timings"]["quantile_fit_s"] > 0 and s["timings"]["label_only_fit_s"] > 0
    assert "lira" not in attacks and "two shadow" in s["attacks_not_run"]["reference"]
    assert "translation" in s["attacks_not_run"]["prmia"]
    table = metrics_table([RunSummary.from_dict(s)])
    assert {"Toy loss threshold", "Quantile regression (Bertran, no shadows)", "Gap attack (label only: correct ⇒ member)"
            } <= set(table["attack"])
    # under the Defenses sliders: the toy (a responses-stage attack) and the models-stage ones score defended answers
    out = tmp_path / "d.json"
    with contextlib.redirect_stderr(err):
        rc = main(["defend", "--task", "image", "--arch", "ffnn", *TINY, "--mechanism", "dirichlet",
                   "--values", "1", "--draws", "2", "--out", str(out), "--quiet"])
    assert rc == 0, err.getvalue()
    point = json.loads(out.read_text())["points"][0]
    for name in ("toy_loss", "quantile", "label_only", "gap"):
        assert name in point["attacks"], sorted(point["attacks"])


def test_quantile_attack_on_a_run_has_fpr_near_alpha_on_the_non_members_at_threshold_zero(tmp_path):
    """On the victim's own non-members (none in the regressor's pool), member iff s > q̂ flags about α of them."""
    out = tmp_path / "r.json"
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "--task", "image", "--arch", "ffnn", "--set", "n_train=100", "--set", "n_eval=100",
                     "--set", "epochs=3", "--set", "n_shadows=1", "--set", "attack_epochs=3",
                     "--set", "attack_train_epochs=3", "--out", str(out), "--quiet"]) == 0
    s = json.loads(out.read_text())
    scores = np.asarray(s["records"]["scores"]["quantile"])
    membership = np.asarray(s["records"]["membership"])
    fpr = float((scores[~membership] >= 0).mean())
    assert fpr <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 100), fpr  # α = 0.05, three binomial sd on 100 records
    assert roc_auc(scores, membership) == pytest.approx(s["attacks"]["quantile"]["auc"], abs=1e-3)

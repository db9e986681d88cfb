"""LiRA with augmented queries (Carlini et al. 2022): the math on planted signals, the
image task's query hook, and the attack on a run."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import torch
from torch import nn

from core.attacks import registry
from core.attacks.augmented_lira import augmented_lira_scores, pooled_covariance
from core.cli.main import main
from core.data.image_sources import load_digits_images
from core.experiment.model_attacks import LIRA_AUGMENTED, LIRA_AUGMENTED_ONLINE, AugmentedLiRA, UndefendedQuery
from core.experiment.pipeline import trained_models
from core.measurement.metrics import best_threshold, evaluate_attack, roc_auc
from core.measurement.reference_math import lira_unit_scores
from core.tasks import get_task
from core.tasks.base import TaskData
from core.tasks.image import LABEL_AUGMENTATIONS, ImageRecords, ImageTask, augment_image


def _planted(rng: np.random.Generator, n_models: int, n: int, a: int, member: np.ndarray | None = None,
             shift: float = 0.6, difficulty: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """φ of ``n_models`` models on ``n`` records under ``a`` augmentations: a per-record difficulty
    shared by every model and augmentation, independent noise per (model, record, augmentation), and
    a memorised record's shift on every augmentation (a flip-invariant signature: the flipped and
    shifted record is as memorised as the record)."""
    difficulty = rng.normal(0, 2, n) if difficulty is None else difficulty
    phi = difficulty[None, :, None] + rng.normal(0, 1, (n_models, n, a))
    if member is not None:
        phi = phi + shift * member[None, :, None]
    return phi, difficulty


def _fit_and_score(a: int, covariance: str, seed: int = 0) -> tuple[float, float, float]:
    """(AUC of the augmented attack with ``a`` queries, AUC of plain LiRA on the identity query,
    accuracy at the threshold fitted on shadows) on the planted case."""
    rng = np.random.default_rng(seed)
    n, r = 1000, 8
    member = np.r_[np.ones(n // 2, bool), np.zeros(n // 2, bool)]
    refs, diff = _planted(rng, r, n, a)                                  # OUT references
    target, _ = _planted(rng, 1, n, a, member, difficulty=diff)
    outs = np.ones((r, n), bool)
    cov = pooled_covariance(refs, outs)
    scores, online = augmented_lira_scores(target[0], refs, ~outs, outs, covariance, shared=(cov, None))
    assert not online.any()
    plain, _ = lira_unit_scores(target[0, :, 0], refs[:, :, 0], ~outs, outs)
    # threshold from a shadow: a fresh target model on fresh records of the same kind (never the scored ones)
    s_refs, s_diff = _planted(rng, r, n, a)
    s_target, _ = _planted(rng, 1, n, a, member, difficulty=s_diff)
    cal, _ = augmented_lira_scores(s_target[0], s_refs, ~outs, outs, covariance, shared=(cov, None))
    acc = evaluate_attack("lira_augmented", scores, member, best_threshold(cal, member)).accuracy
    return roc_auc(scores, member), roc_auc(plain, member), acc


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_augmentations_add_signal_where_the_memorised_signature_is_flip_invariant(covariance):
    auc_aug, auc_plain, acc = _fit_and_score(10, covariance)
    # 10 independent readings of one shift: the z of the mean grows by √10 (planted 0.6σ: AUC ≈ 0.66 → ≈ 0.93)
    assert auc_plain < 0.72, auc_plain
    assert auc_aug > 0.88, auc_aug
    assert auc_aug > auc_plain + 0.15
    assert acc > 0.78, acc


def test_the_offline_statistic_is_a_z_score_under_h0():
    rng = np.random.default_rng(3)
    refs, diff = _planted(rng, 16, 4000, 4)
    target, _ = _planted(rng, 1, 4000, 4, difficulty=diff)  # a non-member target
    outs = np.ones((16, 4000), bool)
    scores, _ = augmented_lira_scores(target[0], refs, ~outs, outs, "full")
    # N(0, 1) up to the references' estimation noise of μ_out (variance 1/16 per augmentation)
    assert abs(scores.mean()) < 0.06 and 0.95 < scores.std() < 1.15, (scores.mean(), scores.std())


@pytest.mark.parametrize("online", [False, True])
def test_one_augmentation_equals_plain_lira(online):
    """With the identity query alone the augmented attack is plain LiRA (offline z, online LLR), score for score."""
    rng = np.random.default_rng(5)
    n, r = 300, 6
    member = rng.random(n) < 0.5
    refs, diff = _planted(rng, r, n, 1)
    ins = np.zeros((r, n), bool)
    if online:
        ins[:3] = rng.random((3, n)) < 0.5
        refs = refs + 0.8 * ins[..., None]
    target, _ = _planted(rng, 1, n, 1, member, difficulty=diff)
    outs = ~ins
    for covariance in ("diagonal", "full"):
        aug, on_aug = augmented_lira_scores(target[0], refs, ins, outs, covariance)
        plain, on_plain = lira_unit_scores(target[0, :, 0], refs[:, :, 0], ins, outs)
        np.testing.assert_array_equal(on_aug, on_plain)
        np.testing.assert_allclose(aug, plain, rtol=1e-10, atol=1e-10)
        assert on_aug.any() == online


def test_online_llr_separates_in_from_out():
    rng = np.random.default_rng(7)
    n, r, a = 600, 12, 5
    member = np.r_[np.ones(n // 2, bool), np.zeros(n // 2, bool)]
    ins = rng.random((r, n)) < 0.5
    refs, diff = _planted(rng, r, n, a)
    refs = refs + 1.0 * ins[..., None]
    target, _ = _planted(rng, 1, n, a, member, shift=1.0, difficulty=diff)
    scores, online = augmented_lira_scores(target[0], refs, ins, ~ins, "diagonal")
    assert online.all()
    # the likelihood-ratio test at threshold 0 (equal priors): d′ ≈ √5 / √(1 + 1/6) ≈ 2.1 ⇒ accuracy ≈ 0.85
    # with exact Gaussians; the references' estimated means cost some (measured 0.80)
    assert evaluate_attack("lira_augmented_online", scores, member, 0.0).accuracy > 0.75
    one, _ = augmented_lira_scores(target[0, :, :1], refs[:, :, :1], ins, ~ins, "diagonal")
    assert roc_auc(scores, member) > roc_auc(one, member) + 0.1, (roc_auc(scores, member), roc_auc(one, member))


# ---------------------------------------------------------------------------- the image task's hook
def _digits_data() -> TaskData:
    x, y = load_digits_images()
    images = torch.from_numpy((x - x.mean()) / x.std())
    return TaskData(ImageRecords(images, torch.from_numpy(y), 10), np.arange(len(x)), np.zeros(0, np.int64), "digits")


def test_the_image_hook_reads_phi_of_the_label_on_the_label_only_queries():
    data = _digits_data()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).double().float().eval()
    index = np.arange(0, 300, 3)
    phi = ImageTask().augmented_confidences(None, net, data, index, len(LABEL_AUGMENTATIONS))
    assert phi.shape == (100, 10) and phi.dtype == np.float64
    labels = data.records.labels[index].numpy()
    for j in (0, 1, 7):
        flip, dy, dx = LABEL_AUGMENTATIONS[j]
        with torch.no_grad():
            p = torch.softmax(net(augment_image(data.records.images[index], flip, dy, dx)).double(), 1).numpy()
        c = p[np.arange(100), labels]
        np.testing.assert_allclose(phi[:, j], np.log(c) - np.log1p(-c), rtol=1e-6, atol=1e-6)
    assert not np.allclose(phi[:, 0], phi[:, 1])
    # a defense's transform acts on the log-probabilities first: a uniform output has φ = log(1/9)
    flat = ImageTask().augmented_confidences(None, net, data, index, 2,
                                             output_transform=lambda lp: torch.zeros_like(lp))
    np.testing.assert_allclose(flat, np.log(1 / 9))


def test_tasks_without_augmentations_say_why_not():
    for name in (LIRA_AUGMENTED, LIRA_AUGMENTED_ONLINE):
        entry = registry.get(name)
        assert entry.applies_to("image") and entry.stage == "models"
        for task in ("translation", "navigation", "tabular"):
            assert not entry.applies_to(task) and "augmentation" in entry.why_not(task)
    with pytest.raises(Exception, match="augmented queries"):
        get_task("translation").augmented_confidences(None, None, None, np.arange(2), 3)


# ---------------------------------------------------------------------------- on a run
def test_augmented_lira_runs_on_an_image_run_with_its_timing_and_says_why_online_did_not(tmp_path):
    out = tmp_path / "r.json"
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "--task", "image", "--arch", "ffnn", "--set", "n_train=60", "--set", "n_eval=40",
                     "--set", "epochs=3", "--set", "n_shadows=3", "--set", "attack_epochs=3",
                     "--set", "attack_train_epochs=3", "--out", str(out), "--quiet"]) == 0
    s = json.loads(out.read_text())
    assert LIRA_AUGMENTED in s["attacks"], sorted(s["attacks"])
    scores = np.asarray(s["records"]["scores"][LIRA_AUGMENTED])
    membership = np.asarray(s["records"]["membership"])
    assert roc_auc(scores, membership) == pytest.approx(s["attacks"][LIRA_AUGMENTED]["auc"], abs=1e-3)
    assert s["timings"][f"{LIRA_AUGMENTED}_s"] > 0
    assert "--online-lira" in s["attacks_not_run"][LIRA_AUGMENTED_ONLINE]
    # the identity query alone is plain LiRA on the same run: the hook's φ is the Responses' φ, score for score
    cfg = get_task("image").make_config("ffnn", "quick", {"n_train": 60, "n_eval": 40, "epochs": 3, "n_shadows": 3,
                                                          "attack_epochs": (3,), "attack_train_epochs": 3})
    assert cfg.config_hash == s["config_hash"]
    models = trained_models(cfg)
    one = AugmentedLiRA(n=1)
    assert one.fit(models, None)
    got = one.outcomes(UndefendedQuery(models))
    np.testing.assert_allclose(got[LIRA_AUGMENTED].scores, s["records"]["scores"]["lira"], atol=2e-5)


def test_augmented_lira_scores_defended_points(tmp_path):
    """Under the Defenses sliders: the defended victim is queried under the same augmentations."""
    tiny = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=2",
            "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]
    out = tmp_path / "d.json"
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["defend", "--task", "image", "--arch", "ffnn", *tiny, "--mechanism", "dirichlet",
                     "--values", "0.5,1000", "--draws", "2", "--out", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())
    base = d["baseline"]["attacks"][LIRA_AUGMENTED]
    strong, weak = (p["attacks"][LIRA_AUGMENTED] for p in d["points"])
    for r in (base, strong, weak):
        assert 0.0 <= r["auc"] <= 1.0
    # a near-uniform output (k = 0.5) leaves little of the victim's answer; k = 1000 changes almost nothing
    assert abs(weak["auc"] - base["auc"]) < abs(strong["auc"] - base["auc"]) + 0.05

"""The defense registries: a mechanism defined in this file alone is offered by the CLI and scored
end to end, and no name falls through to another mechanism."""
import contextlib
import io
import json
import math
from typing import Any

import numpy as np
import pytest
import torch
from recompute import assert_attacks_match_records

from core.cli.main import build_parser, main
from core.defenses import registry as defense_registry
from core.defenses.registry import (
    OutputMechanism,
    Parameter,
    TrainingDefense,
    get_training,
    register_training,
    training_names,
    unregister_training,
)
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import accuracy_bound_curve, check_sweep, sweep_runs
from core.experiment.pipeline import trained_models
from core.foundations.config import config_changes, parse_values
from core.foundations.errors import ConfigError
from core.measurement.responses import Responses
from core.tasks import get_task

TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=1",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]


def _round_log_probs(log_p: np.ndarray, decimals: int) -> np.ndarray:
    """Probabilities rounded to ``decimals`` places, floored and renormalised (log space)."""
    p = np.maximum(np.round(np.exp(log_p), decimals), 1e-12)
    return np.log(p / p.sum(-1, keepdims=True))


class Rounding(OutputMechanism):
    """A toy: every answered probability rounded to d decimals (no formal guarantee)."""

    name = "rounding"
    label = "Rounding (outputs)"
    short = "Rounding"
    parameter = Parameter(name="d", symbol="d", low=0.0, high=6.0, low_open=False, log_scale=False,
                          grid=(3.0, 1.0, 0.0), slider=(0.0, 1.0, 2.0, 3.0), slider_default=2.0, curve=(0.0, 3.0))

    def transform(self, responses: Responses, spec: Any, rng: np.random.Generator) -> Responses:
        return responses.with_log_probs(_round_log_probs(np.log(np.maximum(responses.probs, 1e-300)), int(spec.value)))

    def torch_transform(self, spec: Any, generator: torch.Generator):
        def transform(log_probs: torch.Tensor) -> torch.Tensor:
            out = _round_log_probs(log_probs.detach().double().cpu().numpy(), int(spec.value))
            return torch.from_numpy(out).to(log_probs.device, log_probs.dtype)
        return transform

    def guarantee(self, spec: Any, n_classes: int, sensitivity: Any | None) -> dict[str, Any]:
        return {"epsilon": None, "delta": None, "gamma": None, "privacy_note": "rounding: no formal guarantee"}


@pytest.fixture
def rounding():
    defense_registry.register(Rounding)
    yield defense_registry.get("rounding")
    defense_registry.unregister("rounding")


def test_a_mechanism_registered_in_a_test_is_a_cli_choice_and_is_scored_end_to_end(rounding, tmp_path):
    mech_action = next(a for a in build_parser()._subparsers._group_actions[0].choices["defend"]._actions
                       if "--mechanism" in a.option_strings)
    assert "rounding" in mech_action.metavar and "rounding" in mech_action.help
    out = tmp_path / "d.json"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["defend", "--task", "image", "--arch", "ffnn", *TINY, "--mechanism", "rounding",
                   "--values", "3,0", "--out", str(out), "--quiet"])
    assert rc == 0, err.getvalue()
    d = json.loads(out.read_text())
    assert d["mechanism"] == "rounding" and [p["value"] for p in d["points"]] == [3.0, 0.0]
    three, zero = d["points"]
    for p in (three, zero):
        assert p["privacy_note"] == "rounding: no formal guarantee" and p["epsilon"] is None
        assert_attacks_match_records(p["attacks"], p["records"])  # one draw: the stored scores are the point's
    # d = 0 rounds every probability of this barely trained victim (all near 1/10) to 0: every answer is the
    # uniform one, so the loss and entropy thresholds see one answer on every record (AUC and accuracy
    # exactly chance), and the decision is class 0 (argmax's first index): the utility is the share of label 0
    assert all(abs(a - math.log(10)) < 1e-4 for a in zero["records"]["ape"])
    for name in ("loss_threshold", "entropy_threshold"):
        assert zero["attacks"][name]["auc"] == 0.5 and zero["attacks"][name]["accuracy"] == 0.5
    cfg = get_task("image").make_config("ffnn", "quick", dict(a.split("=", 1) for a in TINY[1::2]))
    models = trained_models(cfg)  # from the cache the command filled
    labels = models.data.records.labels
    assert zero["utility"] == pytest.approx(float((labels[models.splits.victim_nonmembers] == 0).double().mean()))
    assert zero["utility_train"] == pytest.approx(float((labels[models.splits.eval_members] == 0).double().mean()))
    assert zero["utility"] != d["baseline"]["utility"]
    # d = 3 keeps the order of the answered probabilities here: the same decisions as the undefended victim
    assert three["utility"] == d["baseline"]["utility"] and three["utility_loss"] == 0
    assert len(set(three["records"]["ape"])) > 2  # at d = 3 the answers keep their spread
    # an out-of-range value is refused in one line before any work
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["defend", "--task", "image", *TINY, "--mechanism", "rounding", "--values", "7"]) == 2
    assert err.getvalue().startswith("error: d must lie in [0, 6]")


def test_unknown_mechanisms_are_errors_never_the_gpm():
    with pytest.raises(ConfigError, match="unknown mechanism 'laplace'"):
        DefenseSpec("laplace", 1.0).validate()
    with pytest.raises(ConfigError, match="unknown mechanism"):
        defense_registry.get("rounding")  # registered by the other test only while it runs
    assert defense_registry.names()[:2] == ("dirichlet", "gpm")
    with pytest.raises(ValueError):
        defense_registry.unregister("gpm")

    class Impostor(Rounding):
        name = "dirichlet"
    with pytest.raises(ValueError, match="already registered|built-in"):
        defense_registry.register(Impostor)
    assert type(defense_registry.get("dirichlet")).__name__ == "DirichletMechanism"


def test_parameters_state_their_ranges():
    k = defense_registry.get("dirichlet").parameter
    assert k.interval == "(0, 1e9]" and k.log_scale and 10.0 in k.slider
    with pytest.raises(ConfigError, match=r"k must lie in \(0, 1e9\], got 0"):
        k.check(0.0)
    sigma = defense_registry.get("gpm").parameter
    sigma.check(0.0)
    with pytest.raises(ConfigError, match="finite"):
        sigma.check(math.inf)


class SmallSteps(TrainingDefense):
    """A toy training-time defense: another learning rate (no guarantee; the baseline is the preset's lr = 1e-3)."""

    name = "small_steps"
    label = "small learning rate"
    parameter = Parameter(name="lr", symbol="lr", low=0.0, high=1.0, low_open=True, log_scale=True,
                          grid=(1e-3,), slider=(), slider_default=1e-3, curve=())

    def updates(self, value, target_epsilon=False, max_grad_norm=None, delta=None):
        return {"lr": float(value)}


def test_a_training_defense_registered_in_a_test_is_a_cli_choice_and_swept(tmp_path):
    register_training(SmallSteps)
    try:
        mech_action = next(a for a in build_parser()._subparsers._group_actions[0].choices["defend"]._actions
                           if "--mechanism" in a.option_strings)
        assert "small_steps" in mech_action.metavar
        assert "small_steps" in training_names("image") and "clip" not in training_names("image")
        out = tmp_path / "s.json"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(["defend", "--task", "image", "--arch", "ffnn", *TINY, "--mechanism", "small_steps",
                       "--values", "0.003", "--out", str(out), "--quiet"])
        assert rc == 0, err.getvalue()
        d = json.loads(out.read_text())
        [point] = d["points"]
        assert d["mechanism"] == "small_steps" and point["value_name"] == "lr" and point["value"] == 0.003
        assert point["config_hash"] != d["baseline"]["config_hash"]  # a retrained run, not the baseline
        assert point["changes"] == {"lr": 0.003}
        assert point["privacy_note"] == "lr is a regulariser: no formal privacy guarantee"
        with pytest.raises(ConfigError, match="target-epsilon|dpsgd"):
            check_sweep(get_task("image").make_config("ffnn", "quick"), "small_steps", [0.1], target_epsilon=True)
    finally:
        unregister_training("small_steps")
    with pytest.raises(ConfigError, match="unknown training defense 'small_steps'"):
        get_training("small_steps")


def test_the_training_defenses_plan_grid_and_diff_live_in_core():
    """What the Training defenses page used to compute itself: the grid, the runs, the config diff."""
    image = get_task("image").make_config("ffnn", "quick")
    runs = sweep_runs({"ffnn": image}, "l2", parse_values(" 0.1, 0.01,0.1", "the λ grid"))
    assert [v for v, _ in runs["ffnn"]] == [None, 0.01, 0.1]  # baseline first, then sorted distinct values
    assert runs["ffnn"][0][1].weight_decay == 0.0
    assert config_changes(runs["ffnn"][0][1], runs["ffnn"][2][1]) == {"weight_decay": 0.1}
    assert config_changes(image, image) == {}
    with pytest.raises(ConfigError, match="the λ grid expects comma-separated numbers"):
        parse_values("1,x", "the λ grid")
    with pytest.raises(ConfigError, match="navigation only"):
        sweep_runs({"ffnn": image}, "clip", [0.1])
    with pytest.raises(ConfigError, match=r"λ must lie in \[0, ∞\)"):
        sweep_runs({"ffnn": image}, "l2", [-1.0])
    curve = accuracy_bound_curve(2.0, 0.0, n=3)
    assert [e for e, _ in curve] == [0.0, 1.0, 2.0] and curve[0][1] == 0.5

"""match_utility: each architecture (victim and shadows) stops at the first epoch whose validation
utility reaches the target, and the comparison is made there."""
import json

import pytest

from core.analyses.matching import (
    PlannedRepeat,
    PlannedStop,
    first_epoch_reaching,
    matched_plan,
    run_matched,
    stopped_config,
    stopping_point,
)
from core.analyses.repeats import comparison_configs
from core.experiment import roles
from core.experiment.results import RunSummary
from core.foundations.config import ConfigError

# small but learning: the CNN passes the ReNet's final validation accuracy before its last epoch
TINY = dict(n_train=150, n_eval=40, epochs=6, n_shadows=1, attack_epochs=(), attack_train_epochs=3)


def test_match_utility_field_is_validated_and_not_hashed():
    cfgs = comparison_configs("image", "quick", 1, TINY)
    c = cfgs["rnn"]
    assert c.with_updates({"match_utility": "lower"}).config_hash == c.config_hash
    assert c.with_updates({"match_utility": "0.5"}).validate().match_utility == "0.5"
    with pytest.raises(ConfigError, match="match_utility"):
        c.with_updates({"match_utility": "nan"}).validate()
    with pytest.raises(ConfigError, match="match_utility"):
        run_matched(cfgs)  # off


def test_both_architectures_stop_where_they_reach_the_lower_final_utility(monkeypatch):
    epochs_trained = []
    real = roles.train_role

    def counting(task, cfg, data, role, *args, **kwargs):
        epochs_trained.append((cfg.arch, role, cfg.epochs))
        return real(task, cfg, data, role, *args, **kwargs)

    monkeypatch.setattr(roles, "train_role", counting)
    cfgs = {a: c.with_updates({"match_utility": "lower"}) for a, c in comparison_configs("image", "quick", 1, TINY).items()}
    out = run_matched(cfgs)
    json.dumps(out, allow_nan=False)
    row = out["repeats"][0]
    target = row["target"]
    assert target == min(row["ffnn"]["final_utility"], row["rnn"]["final_utility"])
    for arch in ("ffnn", "rnn"):
        point = row[arch]
        assert point["reached"] and 1 <= point["epoch"] <= TINY["epochs"]
        assert point["utility_at_stop"] >= target - 1e-9  # the stopped victim really is at the target
        if point["epoch"] < TINY["epochs"]:  # a stopped run: victim and shadow trained only that far
            assert (arch, "victim", point["epoch"]) in epochs_trained
            assert (arch, "shadow_0", point["epoch"]) in epochs_trained
    higher = max(("ffnn", "rnn"), key=lambda a: row[a]["final_utility"])
    assert row[higher]["epoch"] < TINY["epochs"]  # the better one stopped early, at the other's utility
    assert row[higher]["final_utility"] > target
    m = out["comparison"]["metrics"]["attack_accuracy"]
    assert m["ffnn"]["n"] == 1 and m["verdict"]["value"] == "inconclusive"


def test_first_epoch_reaching_and_stopped_config():
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    summary = {"task": "image", "arch": "ffnn", "config": {"epochs": 3}, "config_hash": "h", "params": 1,
               "utility": {"metric": "accuracy", "val": 0.5}, "attack": attack, "attacks": {"shadow": attack},
               "timings": {}, "records": {},
               "per_epoch": [{"epoch": 1, "utility_val": 0.2}, {"epoch": 2, "utility_val": 0.6},
                             {"epoch": 3, "utility_val": 0.5}]}
    summary = RunSummary.from_dict(summary)
    assert first_epoch_reaching(summary, 0.55) == 2 and first_epoch_reaching(summary, 0.7) is None
    cfg = comparison_configs("image", "quick", 1, {**TINY, "attack_epochs": (2, 4)})["ffnn"]
    assert stopped_config(cfg, 3).attack_epochs == (2,) and stopped_config(cfg, 3).epochs == 3
    assert stopped_config(cfg, cfg.epochs).config_hash == cfg.config_hash  # no stop: the full run itself


def test_matched_plan_rows_are_typed_stops_from_the_full_runs():
    """The pages' plan (nothing trained): per repeat the target, and per architecture its stopping point and the
    config of the run stopped there, read as attributes."""
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    cfgs = {a: c.with_updates({"match_utility": "lower"}) for a, c in comparison_configs("image", "quick", 1, TINY).items()}

    def run(arch, curve):
        return RunSummary.from_dict({
            "task": "image", "arch": arch, "config": {"epochs": len(curve)}, "config_hash": arch, "params": 1,
            "utility": {"metric": "accuracy", "val": curve[-1]}, "attack": attack, "attacks": {"shadow": attack},
            "timings": {}, "records": {}, "per_epoch": [{"epoch": e + 1, "utility_val": u} for e, u in enumerate(curve)]})

    full = {"ffnn": [run("ffnn", [0.2, 0.6, 0.7, 0.8, 0.8, 0.9])], "rnn": [run("rnn", [0.1, 0.3, 0.5, 0.6, 0.6, 0.65])]}
    (row,) = matched_plan(full, cfgs)
    assert isinstance(row, PlannedRepeat) and row.repeat == 0 and row.target == 0.65  # the lower final utility
    assert set(row.stops) == {"ffnn", "rnn"} and all(isinstance(s, PlannedStop) for s in row.stops.values())
    ffnn, rnn = row.stops["ffnn"], row.stops["rnn"]
    assert ffnn.point == stopping_point(full["ffnn"][0], 0.65) and ffnn.point.epoch == 3 and ffnn.point.reached
    assert rnn.point.epoch == 6 and rnn.point.reached and rnn.point.final_utility == 0.65
    assert ffnn.config == stopped_config(cfgs["ffnn"], 3) and rnn.config.config_hash == cfgs["rnn"].config_hash


def test_a_full_run_without_validation_utility_cannot_be_matched():
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    cfgs = {a: c.with_updates({"match_utility": "lower"}) for a, c in comparison_configs("image", "quick", 1, TINY).items()}

    def run(arch, val):
        return RunSummary.from_dict({
            "task": "image", "arch": arch, "config": {"epochs": 1}, "config_hash": f"{arch}_hash", "params": 1,
            "utility": {"metric": "accuracy", "val": val}, "attack": attack, "attacks": {"shadow": attack},
            "timings": {}, "records": {}, "per_epoch": [{"epoch": 1, "utility_val": val}]})

    with pytest.raises(ConfigError, match="rnn run rnn_ha has no validation accuracy"):
        matched_plan({"ffnn": [run("ffnn", 0.6)], "rnn": [run("rnn", None)]}, cfgs)


def test_cli_compare_at_matched_utility(tmp_path, capsys, monkeypatch):
    from core.cli.main import main
    # in-process CLI: keep this test process's torch thread count (the CLI sizes it for a whole machine)
    monkeypatch.setattr("core.foundations.device.configure_threads", lambda: 1)

    sets = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]
    out = tmp_path / "m.json"
    assert main(["compare", "--task", "image", "--repeats", "1", "--match-utility", "lower", *sets, "--out", str(out),
                 "--quiet"]) == 0
    d = json.loads(out.read_text())
    assert d["match_utility"] == "lower" and d["repeats"][0]["ffnn"]["epoch"] >= 1
    assert "attack_auc" in d["comparison"]["metrics"]
    capsys.readouterr()
    assert main(["compare", "--task", "image", "--match-utility", "best", *sets]) == 2
    assert capsys.readouterr().err.startswith("error: match_utility")

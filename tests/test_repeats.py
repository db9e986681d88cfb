"""Repeats: repeat 0 is the config itself, seeds differ by repeat and are shared by both
architectures, each repeat is cached (raising N trains only the new ones), paired comparison JSON."""
import json

import numpy as np
import pytest

from core.analyses.repeats import (
    comparison_configs,
    repeat_config,
    repeat_configs,
    repeat_seed,
    repeats_block,
    run_comparison,
    run_repeats,
)
from core.experiment import roles
from core.foundations.config import ConfigError
from core.tasks import get_task

TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


def test_repeats_field_is_not_hashed_and_repeat_zero_is_the_config():
    cfg = get_task("image").make_config("rnn", "quick")
    three = cfg.with_updates({"repeats": 3})
    assert (three.config_hash, three.training_hash) == (cfg.config_hash, cfg.training_hash)
    # the quick preset's hashes as pinned before the field existed (tests/test_config.py)
    assert (cfg.config_hash, cfg.training_hash) == ("5138b927c106302a6c88", "f2d5065eb5aa917a4d3e")
    assert repeat_config(three, 0).config_hash == cfg.config_hash
    hashes = {c.config_hash for c in repeat_configs(three)}
    assert len(hashes) == 3
    with pytest.raises(ConfigError, match="repeats"):
        cfg.with_updates({"repeats": 21}).validate()
    with pytest.raises(ConfigError, match="repeats"):
        cfg.with_updates({"repeats": 0}).validate()


def test_repeat_seeds_are_derived_in_range_and_shared_by_both_architectures():
    seeds = [repeat_seed(0, r) for r in range(20)]
    assert seeds[0] == 0 and len(set(seeds)) == 20 and all(0 <= s < 2**32 for s in seeds)
    assert repeat_seed(1, 1) != repeat_seed(0, 2)
    pair = comparison_configs("image", "quick", 3, TINY)
    assert [c.seed for c in repeat_configs(pair["ffnn"])] == [c.seed for c in repeat_configs(pair["rnn"])]
    assert pair["ffnn"].lr != pair["rnn"].lr  # per-architecture preset values are kept


def test_repeats_differ_in_split_and_raising_n_trains_only_new_repeats(monkeypatch):
    trained = []
    real = roles.train_role

    def counting(task, cfg, data, role, *args, **kwargs):
        trained.append((cfg.seed, role))
        return real(task, cfg, data, role, *args, **kwargs)

    monkeypatch.setattr(roles, "train_role", counting)
    cfg = get_task("image").make_config("ffnn", "quick", {**TINY, "repeats": 2})
    two = run_repeats(cfg)
    assert len(trained) == 4  # 2 repeats × (victim + 1 shadow)
    members = [np.asarray(s.per_record.membership) for s in two]
    assert two[0].config["seed"] != two[1].config["seed"]
    assert two[0].per_record.ape != two[1].per_record.ape  # another split, another model
    trained.clear()
    three = run_repeats(cfg.with_updates({"repeats": 3}))
    assert sorted({seed for seed, _ in trained}) == [repeat_seed(cfg.seed, 2)] and len(trained) == 2
    assert [s.config_hash for s in three[:2]] == [s.config_hash for s in two]
    block = repeats_block(three, n_boot=200)
    acc = block["metrics"]["attack_accuracy"]
    assert acc["n"] == 3 and len(acc["values"]) == 3 and acc["ci_low"] <= acc["mean"] <= acc["ci_high"]
    assert acc["mean"] == pytest.approx(np.mean([s.attack.accuracy for s in three]))
    assert block["within_run"]["attack_auc"]["method"].startswith("bootstrap")
    assert len(members[0]) == 2 * TINY["n_eval"]
    json.dumps(block, allow_nan=False)


def test_comparison_json_is_paired_with_verdicts():
    configs = comparison_configs("image", "quick", 2, {**TINY, "n_shadows": 2})  # LiRA/RMIA need 2 shadows
    out = run_comparison(configs)
    text = json.dumps(out, allow_nan=False)
    assert out["repeats"] == 2 and out["seeds"][0] == configs["ffnn"].seed
    m = out["metrics"]["attack_auc"]
    assert m["ffnn"]["n"] == 2 and m["rnn"]["n"] == 2
    assert m["difference"]["of"] == "ffnn - rnn"
    assert m["difference"]["diff"]["mean"] == pytest.approx(m["ffnn"]["mean"] - m["rnn"]["mean"])
    assert m["verdict"]["value"] in ("holds", "reversed", "inconclusive") and m["verdict"]["n"] == 2
    assert out["metrics"]["utility_val"]["verdict"] is None
    assert {"attack_accuracy", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr", "attack_advantage", "lira_auc", "rmia_auc",
            "epsilon_lower_bound"} <= set(
        out["metrics"])
    assert "roc_band" in out and len(text) < 200_000
    # one primary metric declared in advance (LiRA ran), the rest secondary or without a verdict
    assert out["comparison_schema"] == 2 and out["primary"]["metric"] == "lira_auc" and "declared" in out["primary"]["why"]
    assert out["metrics"]["lira_auc"]["role"] == "primary"
    assert out["metrics"]["attack_advantage"]["verdict"] is None  # = 2·accuracy − 1 on 20 + 20
    for tpr in ("tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr"):  # 20 non-members: both are the TPR at 0 false positives
        assert out["metrics"][tpr]["verdict"] is None and out["metrics"][tpr]["role"] == "unresolved"
        assert out["metrics"][tpr]["label"] == "TPR at 0 false positives (FPR < 1/20)" and tpr in out["no_verdict"]
    family = out["secondary"]["metrics"]
    assert set(family) == {"attack_accuracy", "attack_auc", "rmia_auc"}
    assert all(out["metrics"][n]["p_holm"]["family"] == 3 for n in family)
    # ε̂: each repeat's 95 % lower bound, side by side; no t interval, no test, no verdict over bounds
    eps = out["metrics"]["epsilon_lower_bound"]
    assert eps["role"] == "bound" and eps["verdict"] is None and "lower bound" in eps["no_verdict_reason"]
    for arch in ("ffnn", "rnn"):
        assert eps[arch]["ci_low"] is None and eps[arch]["ci_high"] is None and len(eps[arch]["values"]) == 2
        assert eps[arch]["mean"] == min(eps[arch]["values"])
    assert eps["difference"]["diff"]["ci_low"] is None and eps["difference"]["p_t"] is None
    from core.analyses.comparison_results import ComparisonResult
    from core.views.repeat_figures import comparison_table
    row = comparison_table(ComparisonResult.from_dict(out)).set_index("metric").loc["ε̂ lower bound"]
    assert row["FFNN mean [95% CI]"].startswith("per repeat: ") and "N = 1" not in row["FFNN mean [95% CI]"]
    assert row["verdict: RNN leaks more"] == "— (no verdict)"
    # the step of one record beside the numbers: 20 members + 20 non-members per repeat
    assert out["resolution"]["ffnn"]["tpr_step"] == out["resolution"]["rnn"]["tpr_step"] == pytest.approx(1 / 20)


def _cli(capsys, *argv):
    from core.cli.main import main
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err


TINY_SETS = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
             for k, v in {**TINY, "n_shadows": 2}.items()]  # LiRA/RMIA need 2 shadows


def test_cli_compare_and_run_repeats_write_intervals(tmp_path, capsys, monkeypatch):
    # in-process CLI: keep this test process's torch thread count (the CLI sizes it for a whole machine)
    monkeypatch.setattr("core.foundations.device.configure_threads", lambda: 1)
    out = tmp_path / "compare.json"
    code, err = _cli(capsys, "compare", "--task", "image", "--preset", "quick", "--repeats", "2", *TINY_SETS,
                     "--out", str(out), "--quiet")
    assert code == 0, err
    d = json.loads(out.read_text())
    m = d["metrics"]["attack_accuracy"]
    assert {"ffnn", "rnn", "difference", "verdict"} <= set(m)
    assert {"mean", "ci_low", "ci_high", "n", "values", "p_t", "p_permutation"} <= set(m["difference"]) | set(
        m["difference"]["diff"])
    run = tmp_path / "run.json"
    code, err = _cli(capsys, "run", "--task", "image", "--arch", "ffnn", "--repeats", "2", *TINY_SETS,
                     "--out", str(run), "--quiet")
    assert code == 0, err
    r = json.loads(run.read_text())
    assert r["repeats"]["n"] == 2 and r["repeats"]["metrics"]["attack_auc"]["n"] == 2
    assert r["repeats"]["config_hashes"] == d["config_hashes"]["ffnn"]  # the compare's runs, from the cache
    for bad in (["--repeats", "0"], ["--repeats", "21"], ["--set=repeats=2"]):
        code, err = _cli(capsys, "compare", "--task", "image", *bad, *TINY_SETS)
        assert code == 2 and err.startswith("error:") and "repeats" in err, err
    code, err = _cli(capsys, "run", "--task", "image", "--repeats", "25", *TINY_SETS)
    assert code == 2 and err.startswith("error:") and "repeats" in err


def test_defend_repeats_gives_intervals_over_repeats_and_over_draws(tmp_path, capsys, monkeypatch):
    from core.cli.main import main

    monkeypatch.setattr("core.foundations.device.configure_threads", lambda: 1)
    sets = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]
    out = tmp_path / "d.json"
    assert main(["defend", "--task", "image", "--arch", "ffnn", *sets, "--mechanism", "dirichlet", "--values", "10,0.1",
                 "--draws", "2", "--repeats", "2", "--out", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())
    assert d["repeats"]["n"] == 2 and len(set(d["repeats"]["config_hashes"])) == 2
    for p in d["points"]:
        acc = p["intervals"]["attack_accuracy"]
        assert acc["n"] == 2 and acc["ci_low"] <= acc["mean"] <= acc["ci_high"] and "repeats" in acc["method"]
        assert "utility" in p["intervals"]
    one = tmp_path / "d1.json"
    assert main(["defend", "--task", "image", "--arch", "ffnn", *sets, "--mechanism", "dirichlet", "--values", "0.1",
                 "--draws", "3", "--repeats", "1", "--out", str(one), "--quiet"]) == 0
    p = json.loads(one.read_text())["points"][0]
    assert p["intervals"]["utility"]["method"] == "t over 3 draws" and p["intervals"]["utility"]["n"] == 3
    capsys.readouterr()
    assert main(["defend", "--task", "image", "--arch", "ffnn", *sets, "--mechanism", "l2", "--values", "0.1",
                 "--repeats", "2"]) == 2
    assert "--repeats applies" in capsys.readouterr().err


def test_defense_curve_draws_the_interval_when_a_point_has_one():
    from core.experiment.results import DefendedPoint
    from core.views.defense_figures import defense_curves

    def attack(acc, sd):
        return {"name": "shadow", "accuracy": acc, "accuracy_std": sd, "advantage": 2 * acc - 1, "auc": acc,
                "tpr_at_fpr": {}}
    point = DefendedPoint.from_dict({
        "value": 1.0, "attack": attack(0.6, 0.01), "attacks": {}, "utility_loss": 0.1,
        "intervals": {"attack_accuracy": {"mean": 0.6, "ci_low": 0.5, "ci_high": 0.75, "n": 3},
                      "utility_loss": {"mean": 0.1, "ci_low": 0.05, "ci_high": 0.2, "n": 3}}})
    plain = DefendedPoint.from_dict({"value": 2.0, "attack": attack(0.55, 0.02), "attacks": {}, "utility_loss": 0.2})
    fig = defense_curves({"rnn": [point, plain]}, {}, "k", None, True)
    # the point with an interval: in the shaded band (its ends), not as an error bar; the plain one: ± sd
    acc = [t for t in fig.data if t.name == "RNN attack accuracy"][0]
    assert list(acc.error_y.array) == pytest.approx([0.0, 0.02]) and list(acc.error_y.arrayminus) == pytest.approx(
        [0.0, 0.02])
    band = [t for t in fig.data if t.name and t.name.startswith("RNN attack accuracy 95% band")][0]
    assert band.fill == "toself" and sorted(band.y) == pytest.approx([0.5, 0.75])
    loss_band = [t for t in fig.data if t.name and t.name.startswith("RNN utility loss 95% band")][0]
    assert sorted(loss_band.y) == pytest.approx([0.05, 0.2]) and loss_band.yaxis == "y2"


# ---------------------------------------------------------------------------- one primary metric, Holm for the rest
def _planted_comparisons(with_lira: bool = True):
    """Every leakage metric over N = 8 paired repeats, planted: LiRA's difference small but consistent,
    RMIA's large but null (alternating sign), the shadow attack's AUC 7 of 8 below (raw sign-flip
    p = 4/256), accuracy null, TPR @ 0.1 % strongly below (but 200 non-members cannot resolve it)."""
    from core.analyses.repeats import HEADLINE, HEADLINE_BOUNDS
    from core.measurement.stats import compare

    base = np.linspace(0.6, 0.7, 8)
    null = np.array([0.01, -0.01] * 4)
    diffs = {"lira_auc": -0.02 + 0.001 * np.arange(8), "rmia_auc": 10 * null, "attack_auc": 0.01 * np.r_[[-1] * 7, 0.5],
             "attack_accuracy": null, "tpr_at_1pct_fpr": null, "tpr_at_0.1pct_fpr": np.full(8, -0.2) + 0.01 * null,
             "epsilon_lower_bound": null}
    if not with_lira:
        diffs.pop("lira_auc")
    values = {m: (base + d, base) for m, d in diffs.items()}
    acc = values["attack_accuracy"]
    values["attack_advantage"] = (2 * acc[0] - 1, 2 * acc[1] - 1)
    return {m: compare(m, list(a), list(b), HEADLINE[m][1], bounds=HEADLINE_BOUNDS[m]) for m, (a, b) in values.items()}


def test_one_declared_primary_metric_carries_the_verdict_and_the_rest_are_holm_corrected():
    from core.analyses.repeats import EvaluationFacts, judged_comparisons

    comps = _planted_comparisons()
    facts = EvaluationFacts(n_members=200, n_nonmembers=200, balanced=True, primary_attack="shadow")
    out = judged_comparisons(comps, facts)
    roles = {m: d["role"] for m, d in out.items()}
    # LiRA is primary because it ran, not because it differs most (RMIA's difference is ten times larger)
    assert roles["lira_auc"] == "primary" and out["lira_auc"]["verdict"]["value"] == "holds"
    assert [m for m, r in roles.items() if r == "primary"] == ["lira_auc"]
    # exact duplicates and rates finer than the data: values kept, no verdict
    assert roles["attack_advantage"] == "duplicate" and out["attack_advantage"]["verdict"] is None
    assert "2·accuracy − 1" in out["attack_advantage"]["no_verdict_reason"]
    assert roles["tpr_at_0.1pct_fpr"] == "unresolved" and out["tpr_at_0.1pct_fpr"]["verdict"] is None
    assert out["tpr_at_0.1pct_fpr"]["label"] == "TPR at 0 false positives (FPR < 1/200)"
    assert out["tpr_at_0.1pct_fpr"]["difference"]["diff"]["mean"] == pytest.approx(-0.2)  # still shown as a value
    assert roles["tpr_at_1pct_fpr"] == "secondary"  # 200 non-members allow 2 false positives at 1 %
    secondary = sorted(m for m, r in roles.items() if r == "secondary")
    assert secondary == sorted(["attack_auc", "attack_accuracy", "tpr_at_1pct_fpr", "rmia_auc"])
    assert roles["epsilon_lower_bound"] == "bound" and out["epsilon_lower_bound"]["verdict"] is None
    # the shadow attack's AUC holds on its own (sign-flip p = 4/256) but not after Holm over 4 (4 · 4/256 > 0.05)
    assert comps["attack_auc"].verdict.value == "holds"
    auc = out["attack_auc"]
    assert auc["difference"]["p_permutation"] == pytest.approx(4 / 256)
    assert auc["p_holm"]["p_permutation"] == pytest.approx(4 * 4 / 256) and auc["p_holm"]["family"] == 4
    assert auc["verdict"]["value"] == "inconclusive" and "Holm" in auc["verdict"]["reason"]
    # with 1000 non-members both TPRs are resolved and enter the family
    wide = judged_comparisons(comps, EvaluationFacts(1000, 1000, True, "shadow"))
    assert wide["tpr_at_0.1pct_fpr"]["role"] == "secondary" and wide["tpr_at_0.1pct_fpr"]["verdict"]["value"] == "holds"
    assert wide["tpr_at_0.1pct_fpr"]["label"] == "TPR @ 0.1% FPR"
    # an unbalanced set: advantage is no longer 2·accuracy − 1, so it is its own secondary metric
    assert judged_comparisons(comps, EvaluationFacts(150, 200, False, "shadow"))["attack_advantage"]["role"] == "secondary"


def test_primary_falls_back_to_rmia_then_the_shadow_attack_and_a_lira_primary_attack_is_a_duplicate():
    from core.analyses.repeats import EvaluationFacts, judged_comparisons

    comps = _planted_comparisons(with_lira=False)
    facts = EvaluationFacts(200, 200, True, "shadow")
    assert judged_comparisons(comps, facts)["rmia_auc"]["role"] == "primary"
    comps.pop("rmia_auc")
    assert judged_comparisons(comps, facts)["attack_auc"]["role"] == "primary"
    lira = _planted_comparisons()
    out = judged_comparisons(lira, EvaluationFacts(200, 200, True, "lira"))
    assert out["attack_auc"]["role"] == "duplicate" and out["attack_auc"]["verdict"] is None

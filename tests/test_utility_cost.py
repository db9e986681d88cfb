""""Does the same ε (λ) cost the RNN more utility?" answered from a sweep's points,
FFNN − RNN of the utility loss paired over repeats (core.defenses.utility_cost). The points are
planted as core.defenses.sweeps.collect_points returns them: nothing trains here."""
import pytest

from core.defenses.defense_results import UtilityCost
from core.defenses.utility_cost import ONE_REPEAT, question, table_rows
from core.defenses.utility_cost import utility_cost_comparison as typed_comparison
from core.experiment.results import DefendedPoint, DefenseBaseline

BASE_U = 0.9
ATTACK = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}


def utility_cost_comparison(*args, **kwargs) -> dict:
    """The block as its JSON (the CLI's ``utility_cost_comparison``), read back typed on the way: the layout
    the tests below check."""
    block = typed_comparison(*args, **kwargs)
    assert isinstance(block, UtilityCost) and UtilityCost.from_dict(block.to_dict()) == block
    return block.to_dict()


def _base(utility=BASE_U, train=None, chance=0.1):
    return DefenseBaseline.from_dict({"utility": utility, "utility_train": utility if train is None else train,
                                      "utility_metric": "accuracy", "utility_chance": chance, "attack": ATTACK,
                                      "attacks": {}})


def _point(value, loss, epsilon=None, base_u=BASE_U, utility=None):
    u = base_u * (1 - loss) if utility is None else utility
    return DefendedPoint.from_dict({"value": float(value), "utility": u, "utility_train": u,
                                    "utility_loss": 1 - u / base_u, "epsilon": epsilon, "attack": ATTACK, "attacks": {}})


def _repeats(ffnn_losses, rnn_losses, value=0.1, eps=(None, None)):
    """One (baselines, points) per repeat: FFNN and RNN points at ``value`` with the given losses."""
    return [({"ffnn": _base(), "rnn": _base()},
             {"ffnn": [_point(value, f, eps[0])], "rnn": [_point(value, r, eps[1])]})
            for f, r in zip(ffnn_losses, rnn_losses)]


RNN_MORE = ([0.10, 0.12, 0.09, 0.11, 0.10, 0.13], [0.30, 0.29, 0.33, 0.31, 0.28, 0.35])


def test_rnn_losing_more_in_six_paired_repeats_holds_and_the_reverse_is_reversed():
    block = utility_cost_comparison(_repeats(*RNN_MORE), "l2")
    (row,) = block["values"]
    d = row["difference"]["diff"]
    assert row["n"] == 6 and row["label"] == "holds" and row["verdict"]["value"] == "holds"
    assert d["mean"] == pytest.approx(sum(RNN_MORE[0]) / 6 - sum(RNN_MORE[1]) / 6) and d["ci_high"] < 0
    assert row["difference"]["p_permutation"] <= 0.05 and row["comparable"]
    assert block["question"] == "Does the same λ cost the RNN more utility?" and block["of"] == "ffnn - rnn"
    assert block["summary"].startswith("over 1 comparable λ value: holds 1, reversed 0, inconclusive 0")
    back = utility_cost_comparison(_repeats(RNN_MORE[1], RNN_MORE[0]), "l2")
    assert back["values"][0]["label"] == "reversed" and back["values"][0]["difference"]["diff"]["ci_low"] > 0


def test_mixed_signs_or_too_few_pairs_are_inconclusive():
    mixed = utility_cost_comparison(_repeats([0.1, 0.3, 0.1, 0.3, 0.2, 0.25], [0.3, 0.1, 0.3, 0.1, 0.2, 0.2]), "l2")
    assert mixed["values"][0]["label"] == "inconclusive"
    # the RNN loses more in all three repeats, but N = 3 cannot reach 95 % with a sign test
    three = utility_cost_comparison(_repeats(RNN_MORE[0][:3], RNN_MORE[1][:3]), "l2")
    row = three["values"][0]
    assert row["n"] == 3 and row["label"] == "inconclusive" and row["difference"]["diff"]["ci_high"] < 0
    assert "N = 3 cannot reach" in row["verdict"]["reason"]


def test_one_repeat_gives_the_difference_and_inconclusive_one_repeat():
    block = utility_cost_comparison(_repeats([0.1], [0.3]), "l2")
    (row,) = block["values"]
    assert row["n"] == 1 and row["label"] == ONE_REPEAT and row["verdict"]["value"] == "inconclusive"
    assert row["difference"]["diff"]["mean"] == pytest.approx(-0.2) and row["difference"]["diff"]["ci_low"] is None
    assert "no interval with N = 1" in row["sentence"] and "one repeat" in block["summary"]
    assert table_rows(UtilityCost.from_dict(block))[0]["95 % CI"] == "—" and table_rows(UtilityCost.from_dict(block))[0]["verdict"] == ONE_REPEAT


def test_only_repeats_with_both_architectures_pair_and_one_architecture_gives_no_comparison():
    reps = _repeats(*RNN_MORE)
    reps[2][1]["rnn"] = []           # repeat 3's RNN point not run yet
    del reps[4][0]["ffnn"]           # repeat 5's FFNN baseline not run yet
    row = utility_cost_comparison(reps, "l2")["values"][0]
    assert row["n"] == 4 and row["ffnn"]["per_repeat"] == pytest.approx([RNN_MORE[0][i] for i in (0, 1, 3, 5)])
    only = utility_cost_comparison([({"ffnn": _base()}, {"ffnn": [_point(0.1, 0.2)]})], "l2")
    assert only["values"] == [] and "no RNN points" in only["summary"]


def test_a_model_at_chance_makes_the_value_not_comparable():
    reps = _repeats(*RNN_MORE)
    reps[1][1]["rnn"] = [_point(0.1, 0.0, utility=0.12)]  # the RNN at λ = 0.1 learned nothing (chance 0.1)
    block = utility_cost_comparison(reps, "l2")
    row = block["values"][0]
    assert not row["comparable"] and "RNN at λ = 0.1 did not learn" in row["not_comparable"][0]
    assert "(repeat 2)" in row["not_comparable"][0]
    assert block["summary"] == "over 0 comparable λ values: holds 0, reversed 0, inconclusive 0; not comparable at 1 value"
    assert table_rows(UtilityCost.from_dict(block))[0]["verdict"].startswith("not comparable")
    unlearned = [({"ffnn": _base(train=0.15), "rnn": _base()}, pts) for _, pts in _repeats(*RNN_MORE)]
    row = utility_cost_comparison(unlearned, "l2")["values"][0]
    assert not row["comparable"] and "undefended FFNN did not learn" in row["not_comparable"][0]


def test_dpsgd_sigma_grid_says_the_epsilons_differ_and_a_target_grid_compares_the_same_epsilon():
    sigma = utility_cost_comparison(_repeats(*RNN_MORE, value=1.0, eps=(2.0, 3.5)), "dpsgd")
    row = sigma["values"][0]
    assert sigma["question"] == "Does the same ε cost the RNN more utility?" and sigma["compared_at"] == "σ"
    assert "target-ε grid" in sigma["note"] and row["same_epsilon"] is False
    assert row["epsilon"] == {"ffnn": 2.0, "rnn": 3.5} and "same σ, not the same ε" in row["epsilon_note"]
    assert row["label"] == "holds" and row["comparable"]  # it answers the same-σ question
    target = utility_cost_comparison(_repeats(*RNN_MORE, value=2.0, eps=(1.99, 2.0)), "dpsgd", target_epsilon=True)
    assert target["note"] is None and target["compared_at"] == "ε"
    assert target["values"][0]["same_epsilon"] is True and target["values"][0]["comparable"]
    off = utility_cost_comparison(_repeats(*RNN_MORE, value=2.0, eps=(1.0, 2.0)), "dpsgd", target_epsilon=True)
    assert not off["values"][0]["comparable"] and "ε reached differ" in off["values"][0]["not_comparable"][0]


def test_questions_name_the_swept_parameter():
    assert question("dpsgd") == question("dpsgd", True) == "Does the same ε cost the RNN more utility?"
    assert question("clip") == "Does the same clip ε cost the RNN more utility?"


def test_training_defenses_page_answers_its_question_over_the_cached_repeats(monkeypatch):
    """The page over a real tiny L2 sweep (both architectures, λ = 0.1) whose six repeats' utilities are
    planted (the tiny models learn nothing): the RNN loses more in every repeat → "holds" with N = 6;
    the repeats box at 1 → "inconclusive (one repeat)"."""
    import copy
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import ui.shared
    from core.analyses.repeats import repeat_config
    from core.defenses.sweeps import sweep_runs
    from core.experiment.pipeline import run_experiment
    from core.experiment.results import RunSummary
    from core.tasks import get_task

    task = get_task("image")
    tiny = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3, batch_size=16)
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **tiny})
    runs = sweep_runs({a: task.make_config(a, "quick") for a in ("ffnn", "rnn")}, "l2", [0.1])
    planted = {}
    for arch, rs in runs.items():
        for v, cfg in rs:
            real = run_experiment(cfg).summary
            for r in range(6):
                s = copy.deepcopy(real)
                loss = 0.0 if v is None else (0.1 + 0.01 * r if arch == "ffnn" else 0.3 + 0.02 * r)
                s["utility"]["val"] = s["utility"]["train"] = BASE_U * (1 - loss)
                planted[repeat_config(cfg, r).config_hash] = RunSummary.from_dict(s)
    monkeypatch.setattr(ui.shared, "summary_of", lambda cfg: planted.get(cfg.config_hash))

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"))
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run(timeout=60)
    at.radio(key="tdef:mech").set_value("l2")
    at.run(timeout=60)
    at.text_input(key="tdef:grid:l2").set_value("0.1").run(timeout=120)
    assert not at.exception, at.exception
    assert at.number_input(key="tdef:repeats:l2:0.1").value == 6
    assert any(h.value == "Does the same λ cost the RNN more utility?" for h in at.subheader)
    answer = [m.value for m in at.markdown if m.value.startswith("**Answer**")]
    assert answer == ["**Answer** — over 1 comparable λ value: holds 1, reversed 0, inconclusive 0."]
    table = [d.value for d in at.dataframe if "FFNN − RNN" in d.value.columns][0]
    assert list(table["verdict"]) == ["holds"] and list(table["N"]) == [6]
    assert table["FFNN − RNN"][0] == pytest.approx(0.125 - 0.35)
    at.number_input(key="tdef:repeats:l2:0.1").set_value(1).run(timeout=60)
    assert not at.exception, at.exception
    table = [d.value for d in at.dataframe if "FFNN − RNN" in d.value.columns][0]
    assert list(table["verdict"]) == [ONE_REPEAT] and list(table["N"]) == [1]
    assert table["FFNN − RNN"][0] == pytest.approx(-0.2)


def test_cli_defend_dpsgd_writes_the_comparison_from_both_architectures_cached_runs(tmp_path):
    """``defend --mechanism dpsgd`` adds ``utility_cost_comparison``: none while only one architecture's
    sweep is cached, then the paired FFNN − RNN difference at σ = 2 with N = 1 and "inconclusive (one repeat)"."""
    import json

    from core.cli.main import main

    tiny = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3, batch_size=16)
    sets = [a for k, v in tiny.items() for a in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]

    def defend(arch):
        out = tmp_path / f"{arch}.json"
        assert main(["defend", "--task", "image", "--arch", arch, "--mechanism", "dpsgd", "--values", "2", "--quiet",
                     "--out", str(out), *sets]) == 0
        return json.loads(out.read_text())

    rnn = defend("rnn")
    block = rnn["utility_cost_comparison"]
    assert block["values"] == [] and "no FFNN points" in block["summary"] and "defend --arch ffnn" in block["how"]
    ffnn = defend("ffnn")
    block = ffnn["utility_cost_comparison"]
    assert block["question"] == "Does the same ε cost the RNN more utility?" and "target-ε grid" in block["note"]
    (row,) = block["values"]
    (pf,), (pr,) = ffnn["points"], rnn["points"]
    assert row["value"] == 2.0 and row["n"] == 1 and row["label"] == ONE_REPEAT
    assert row["difference"]["diff"]["mean"] == pytest.approx(pf["utility_loss"] - pr["utility_loss"])
    assert row["epsilon"] == {"ffnn": pytest.approx(pf["epsilon"]), "rnn": pytest.approx(pr["epsilon"])}
    learned = all(b["utility_train"] >= b["utility_chance"] + 0.1 for b in (ffnn["baseline"], rnn["baseline"]))
    assert row["comparable"] == (learned and all(p["utility_train"] >= 0.2 for p in (pf, pr)))


def test_table_rows_need_the_values_name_where_there_are_values():
    block = utility_cost_comparison(_repeats(*RNN_MORE), "l2")
    assert next(iter(table_rows(UtilityCost.from_dict(block))[0])) == "λ"  # the first column: the values' name
    without = {k: v for k, v in block.items() if k != "compared_at"}
    with pytest.raises(ValueError, match="no compared_at"):
        table_rows(UtilityCost.from_dict(without))
    assert table_rows(UtilityCost.from_dict({**without, "values": []})) == []

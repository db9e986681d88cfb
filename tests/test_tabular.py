"""Your data as a table: the tabular task on CSV files written here — encoding, the bad inputs (each one
line, before any training), both architectures matched within 5 %, a run with attacks, defenses and
an analysis, DP-SGD through Opacus' DPLSTM, and the CLI."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from recompute import assert_attacks_match_records

from core.analyses import analysis
from core.analyses import registry as analysis_registry
from core.data.csv_table import LIMITS, CsvLimits, parse_csv, read_csv_bytes
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import check_sweep
from core.experiment.pipeline import run_experiment, trained_models
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.measurement.metrics import roc_auc, tpr_at_fpr
from core.models.tabular import lstm_param_count, mlp_param_count
from core.tasks import available_tasks, get_task
from core.views.plain import shown_text

ROOT = Path(__file__).resolve().parent.parent
TINY = {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 3}


def write_table(path: Path, n: int = 120, seed: int = 0) -> Path:
    """A learnable table: two numeric columns (one with gaps), a text column with a rare value, a text label."""
    rng = np.random.default_rng(seed)
    lines = ["age,income,colour,label"]
    for i in range(n):
        y = i % 2
        age = rng.normal(40 + 10 * y, 5)
        income = "" if i % 10 == 3 else f"{rng.normal(3000 - 800 * y, 300):.1f}"
        colour = "violet" if i == 7 else ("red", "green", "blue")[int(rng.integers(0, 3))]
        lines.append(f"{age:.2f},{income},{colour},{'yes' if y else 'no'}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A data root of this test's own, holding ``table.csv``."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(data))
    write_table(data / "table.csv")
    return data


def tabular(arch="ffnn", **sets):
    return get_task("tabular").make_config(arch, "quick", {**TINY, **sets})


def test_the_task_is_registered_and_a_data_dir_alone_selects_the_csv_source(root):
    assert "tabular" in available_tasks()
    assert tabular(data_dir="table.csv", label="label").dataset == "csv"
    assert tabular().dataset == "breast_cancer"


def test_the_built_in_table_comes_from_scikit_learn_without_a_file():
    task = get_task("tabular")
    data = task.load(task.make_config("ffnn", "quick"))
    assert data.info["n_records"] == 569 and data.info["n_features"] == 30
    assert data.info["classes"] == {"benign": 357, "malignant": 212} and data.info["missing_values"] == {}
    assert "569 rows" in data.description and "no missing values" in data.description
    assert len(np.intersect1d(data.victim_pool, data.attacker_pool)) == 0


def test_a_csv_is_encoded_with_its_missing_values_counted(root):
    task = get_task("tabular")
    data = task.load(tabular(data_dir="table.csv", label="label"))
    rec = data.records
    assert rec.class_names == ("no", "yes") and data.info["classes"] == {"no": 60, "yes": 60}
    # income: 12 empty cells → NaN and a (missing) indicator; violet occurs once → "other", not a feature of its own
    assert data.info["missing_values"] == {"income": 12} and "missing values: income 12" in data.description
    assert rec.feature_names[:3] == ("age", "income", "income (missing)")
    assert set(rec.feature_names[3:]) == {"colour=red", "colour=green", "colour=blue", "colour=(other)"}
    assert int(torch.isnan(rec.x[:, 1]).sum()) == 12 and rec.x[7, rec.feature_names.index("colour=(other)")] == 1
    assert rec.standardised.tolist() == [True, True] + [False] * 5
    assert data.info["sha256"] and data.info["columns"] == {"age": "numeric", "income": "numeric", "colour": "text"}


def test_one_hot_width_is_capped_and_the_rest_is_other(root):
    rows = ["city,y"] + [f"c{i % 30},{i % 2}" for i in range(120)]  # 30 cities, each 4 times
    (root / "cities.csv").write_text("\n".join(rows))
    data = get_task("tabular").load(tabular(data_dir="cities.csv", label="y", max_categories=5))
    assert len(data.records.feature_names) == 5 and data.records.feature_names[-1] == "city=(other)"
    assert data.records.class_names == ("0", "1")  # a numeric label: classes in numeric order


def test_each_model_standardises_with_its_own_training_rows(root):
    task = get_task("tabular")
    cfg = tabular(data_dir="table.csv", label="label")
    data = task.load(cfg)
    rows = np.arange(0, 40)
    model = task.build_model(cfg, data)
    task.train(cfg, model, data, rows, lambda e, m: None, lambda f: None)
    x = data.records.x[rows].double()
    assert torch.allclose(model.standardize.mean[:2].double(), torch.nanmean(x[:, :2], 0), atol=1e-4)
    assert not torch.allclose(model.standardize.mean[:2].double(), torch.nanmean(data.records.x[:, :2].double(), 0),
                              atol=1e-2)  # the other rows did not enter
    assert model.standardize.mean[2:].abs().sum() == 0 and (model.standardize.scale[2:] == 1).all()
    z = model.standardize(data.records.x[:10])
    assert torch.isfinite(z).all() and z[3, 1] == 0  # a missing income is imputed with the training mean
    assert "standardize.mean" in model.state_dict()  # the statistics travel with the weights


@pytest.mark.parametrize("hidden,layers,token_dim", [(64, 2, 8), (16, 1, 8), (128, 2, 16), (256, 3, 4)])
def test_both_architectures_match_within_five_percent(root, hidden, layers, token_dim):
    task = get_task("tabular")
    for sets in ({}, {"data_dir": "table.csv", "label": "label"}):
        cfgs = [tabular(a, mlp_hidden=hidden, mlp_layers=layers, token_dim=token_dim, **sets) for a in ("ffnn", "rnn")]
        data = task.load(cfgs[0])
        ffnn, rnn = (task.param_count(task.build_model(c, data)) for c in cfgs)
        assert abs(ffnn - rnn) <= 0.05 * ffnn, (ffnn, rnn)
        f, k = data.records.n_features, data.records.n_classes
        assert ffnn == mlp_param_count(f, k, hidden, layers)
        assert rnn == lstm_param_count(f, k, token_dim, task.build_model(cfgs[1], data).lstm.hidden_size)


def test_a_size_the_lstm_cannot_match_is_refused_before_training(root):
    task = get_task("tabular")
    cfg = tabular("rnn", data_dir="table.csv", label="label", mlp_hidden=1, mlp_layers=1, token_dim=64)
    with pytest.raises(ConfigError, match="no LSTM comes within 5 %"):
        task.memory_estimate(cfg, task.load(cfg))


def load_error(root, text: str | bytes, label: str = "y", name: str = "bad.csv"):
    path = root / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises((ConfigError, DatasetNotFoundError)) as err:
        get_task("tabular").load(tabular(data_dir=name, label=label))
    assert "\n" not in str(err.value)
    return str(err.value)


def test_bad_tables_are_refused_in_one_line(root):
    assert "no column 'z'" in load_error(root, "a,y\n1,0\n2,1\n", label="z")
    assert "columns: a, y" in load_error(root, "a,y\n1,0\n2,1\n", label="z")
    assert "name the label column" in load_error(root, "a,y\n1,0\n2,1\n", label="")
    assert "has one value ('1')" in load_error(root, "a,y\n1,1\n2,1\n3,1\n")
    msg = load_error(root, "a,y\n1,0\n2,\n3,1\n4,NaN\n")
    assert "is numeric with 2 missing values" in msg and "data row 2" in msg
    assert "a text column with 1 missing" in load_error(root, "a,y\n1,no\n2,\n3,yes\n")
    assert "regression" in load_error(root, "a,y\n" + "".join(f"{i},{i * 0.5}\n" for i in range(100)))
    assert "3 cells, the header has 2" in load_error(root, "a,y\n1,0\n2,1,5\n")
    assert "appears twice" in load_error(root, "a,a,y\n1,2,0\n")
    assert "has a header but no rows" in load_error(root, "a,y\n")
    assert "no feature column with values" in load_error(root, "a,y\n,0\nNA,1\n")
    assert "binary content" in load_error(root, b"a,y\n1,0\n\x00\x01\x02")
    assert "not UTF-8" in load_error(root, b"a,y\n1,0\n\xff\xfe\xfa,1\n")


def test_a_million_columns_and_too_many_rows_are_refused_at_the_real_caps(root):
    header = ",".join(f"c{i}" for i in range(1_000_000)) + "\n"
    assert f"at most {LIMITS.max_columns}" in load_error(root, header + "0," * 999_999 + "0\n", label="c0")
    rows = "a,y\n" + "1,0\n" * (LIMITS.max_rows + 1)
    assert f"more than {LIMITS.max_rows:,} rows" in load_error(root, rows)


def test_file_size_and_cell_caps(root):
    (root / "big.csv").write_text("a,y\n" + "1,0\n" * 100)
    with pytest.raises(DatasetNotFoundError, match="holds 404 bytes; at most 64 are read"):
        read_csv_bytes("big.csv", CsvLimits(max_bytes=64))
    with pytest.raises(DatasetNotFoundError, match="more than 50 cells"):
        parse_csv((root / "big.csv").read_bytes(), "big.csv", CsvLimits(max_cells=50))


def test_paths_outside_the_data_root_links_and_folders_are_refused(root, tmp_path):
    outside = write_table(tmp_path / "outside.csv")
    with pytest.raises(ConfigError, match="outside the data root"):
        get_task("tabular").load(tabular(data_dir=str(outside), label="label"))
    with pytest.raises(ConfigError, match="outside the data root"):
        get_task("tabular").load(tabular(data_dir="../outside.csv", label="label"))
    (root / "out_link.csv").symlink_to(outside)  # a link leading out
    with pytest.raises(ConfigError, match="outside the data root"):
        get_task("tabular").load(tabular(data_dir="out_link.csv", label="label"))
    (root / "in_link.csv").symlink_to(root / "table.csv")  # a link inside: not followed either
    with pytest.raises(DatasetNotFoundError, match="symbolic link"):
        get_task("tabular").load(tabular(data_dir="in_link.csv", label="label"))
    (root / "folder.csv").mkdir()
    with pytest.raises(DatasetNotFoundError, match="not a regular file"):
        get_task("tabular").load(tabular(data_dir="folder.csv", label="label"))
    with pytest.raises(DatasetNotFoundError, match="no such file"):
        get_task("tabular").load(tabular(data_dir="nothing.csv", label="label"))
    with pytest.raises(DatasetNotFoundError, match="needs data_dir"):
        get_task("tabular").load(tabular(dataset="csv"))
    with pytest.raises(ConfigError, match="set dataset=csv"):
        get_task("tabular").load(tabular(dataset="breast_cancer", data_dir="table.csv"))


def test_a_csv_trains_attacks_defends_and_is_analysed(root):
    task = get_task("tabular")
    # two shadows: LiRA and RMIA need two reference models
    ffnn, rnn = (tabular(a, data_dir="table.csv", label="label", n_shadows=2) for a in ("ffnn", "rnn"))
    summary = run_experiment(rnn).summary
    assert summary["task"] == "tabular" and summary["utility"]["metric"] == "accuracy"
    assert summary["data"]["missing_values"] == {"income": 12}
    assert set(summary["attacks"]) >= {"shadow", "loss_threshold", "lira", "rmia"}
    assert len(summary["records"]["membership"]) == 2 * rnn.n_eval
    assert_attacks_match_records(summary["attacks"], summary["records"])  # AUC, accuracy: from the stored scores
    models = trained_models(rnn)
    victim = models.model("victim")  # rebuilt from the cached weights: the statistics come back with them
    index = models.splits.victim_nonmembers
    with torch.no_grad():  # the utility: the cached victim's accuracy on its non-members, recomputed here
        right = victim.eval()(models.data.records.x[index]).argmax(1) == models.data.records.labels[index]
    assert summary["utility"]["val"] == pytest.approx(float(right.double().mean()), abs=1e-6)  # a float32 mean; one record moves it 1/n
    defender = Defender(models)
    for spec in (DefenseSpec("dirichlet", 1.0, draws=1), DefenseSpec("gpm", 0.01, draws=1)):
        point = defender.point(spec, "naive", utility=True).to_dict()  # its JSON (the stored per-record scores)
        checked = _one_draw_point_recomputed(point, summary)
        assert {"shadow", "loss_threshold"} <= checked and point["attack"]["name"] in checked
        assert point["utility"] is not None
        wrong = {**point, "attacks": {**point["attacks"], "shadow": {**point["attacks"]["shadow"]}}}
        wrong["attacks"]["shadow"]["accuracy"] += 1 / len(point["records"]["membership"])  # one record off
        with pytest.raises(AssertionError):
            _one_draw_point_recomputed(wrong, summary)
    for mechanism, value in (("dpsgd", 1.0), ("l2", 0.01)):
        check_sweep(rnn, mechanism, [value])  # the training-time defenses apply to the task
    out = analysis.analyze({"ffnn": ffnn, "rnn": rnn}, ("scatter",)).to_dict()
    assert set(out["scatter"]) == {"ffnn", "rnn"} and len(out["scatter"]["ffnn"]["log10_ape"]) == 2 * ffnn.n_eval
    assert victim.standardize.mean[0] != 0 and victim.standardize.scale[0] != 1
    view = task.describe_record(rnn, models.data, int(models.splits.victim_members[0]), victim=lambda: victim)
    assert view.kind == "text" and dict(view.lines)["label"] in ("no", "yes") and "p = " in view.answer
    slices = task.slice_labels(rnn, models.data, np.array([0, 3, 5]), summary)
    assert slices["missing values"] == ["complete", "has missing values", "complete"]


def _one_draw_point_recomputed(point: dict, summary: dict) -> set[str]:
    """Asserts a one-draw defended point's numbers are what its stored per-record scores give: each
    attack's AUC and TPR at low FPR, and, for the naive attacks that keep a threshold in the undefended
    summary (the same fitted attack), its accuracy at that threshold; returns the attacks whose accuracy
    was checked."""
    y = np.asarray(point["records"]["membership"], bool)
    checked = set()
    for name, a in point["attacks"].items():
        s = np.asarray(point["records"]["scores"][name], np.float64)
        assert a["auc"] == pytest.approx(roc_auc(s, y), abs=1e-12), name
        for fpr, tpr in a["tpr_at_fpr"].items():
            assert tpr == pytest.approx(tpr_at_fpr(s, y, float(fpr)), abs=1e-12), (name, fpr)
        threshold = summary["attacks"].get(name, {}).get("threshold")
        if threshold is not None:
            assert a["accuracy"] == pytest.approx(float(((s >= threshold) == y).mean()), abs=1e-12), name
            checked.add(name)
    head = point["attack"]["name"]
    assert point["attack"] == {"name": head, **{k: v for k, v in point["attacks"][head].items() if k != "boundary"}}
    return checked


def test_dp_sgd_trains_the_lstm_as_opacus_dplstm(root):
    cfg = tabular("rnn", data_dir="table.csv", label="label", dp="sigma", dp_noise_multiplier=1.0)
    summary = run_experiment(cfg).summary
    assert summary["privacy"]["epsilon"] > 0 and 0 <= summary["attack"]["accuracy"] <= 1
    task = get_task("tabular")
    model = task.build_model(cfg, task.load(cfg))
    assert type(model.lstm).__name__ == "DPLSTM"


def cli(*args, root):
    env = {**os.environ, "MIA_DATA_ROOT": str(root)}
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, env=env)


def test_the_cli_runs_a_csv_and_refuses_a_bad_label_in_one_line(root, tmp_path):
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]
    out = tmp_path / "r.json"
    p = cli("run", "--task", "tabular", "--arch", "ffnn", "--set", "data_dir=table.csv", "--set", "label=label",
            *sets, "--out", str(out), "--quiet", root=root)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert d["task"] == "tabular" and d["config"]["dataset"] == "csv" and d["data"]["n_records"] == 120
    bad = cli("run", "--task", "tabular", "--arch", "ffnn", "--set", "data_dir=table.csv", "--set", "label=nope",
              *sets, "--quiet", root=root)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    assert "no column 'nope'" in bad.stderr


def test_the_train_page_reads_a_csv_and_says_a_bad_label_in_one_message(root):
    from tests.test_app import has_results, run_until, set_field, train_page

    at = train_page()
    at.query_params["task"] = "tabular"
    at.run(timeout=60)
    assert at.selectbox(key="train:task").value == "tabular" and not at.exception
    at.selectbox(key="tabular:quick:dataset").set_value("csv").run(timeout=60)
    at.text_input(key="tabular:quick:data_dir").set_value("table.csv")
    for name, value in {**TINY, "attack_epochs": "", "label": "nope"}.items():
        set_field(at, "tabular:quick", name, value)
    at.run(timeout=60)
    assert not at.exception, at.exception
    [b for b in at.button if b.label == "Train & attack"][0].click()
    run_until(at, lambda a: any("no column 'nope'" in shown_text(e.value) for e in a.error), timeout=120)
    set_field(at, "tabular:quick", "label", "label")  # fixed: the run goes through
    at.run(timeout=60)
    [b for b in at.button if b.label == "Train & attack"][0].click()
    run_until(at, has_results)
    shown = " ".join(shown_text(c.value) for c in at.caption)  # the data description: the user's names, as text
    assert not at.exception and "csv: 120 rows" in shown and "missing values: income 12" in shown


@pytest.mark.parametrize("page", ["app_pages/1_Train_and_attack.py", "app_pages/2_Defenses.py",
                                  "app_pages/3_Training_defenses.py", "app_pages/4_Analyses.py"])
def test_every_page_with_a_task_selector_offers_and_renders_the_tabular_task(page):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"))
    at.query_params["task"] = "tabular"
    at.switch_page(page)
    at.run(timeout=60)
    assert not at.exception, at.exception
    selector = [s for s in at.selectbox if s.label == "Task"][0]
    assert selector.value == "tabular" and "Tabular classification (your CSV)" in selector.options


def test_the_training_defenses_page_shows_a_dp_sgd_sweep_of_the_table(monkeypatch):
    """DP-SGD on the table end to end on the page: the cached sweep's point drawn, with the task's caveat on
    the unnoised standardisation (and no study recipe row: the studies had no table)."""
    from streamlit.testing.v1 import AppTest

    from core.defenses.sweeps import sweep_runs

    task = get_task("tabular")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY, "batch_size": 16})
    runs = sweep_runs({"rnn": task.make_config("rnn", "quick")}, "dpsgd", [1.0], max_grad_norm=1.0, delta=1e-4)
    for _, cfg in runs["rnn"]:
        run_experiment(cfg)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.query_params["task"] = "tabular"
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run(timeout=60)
    at.multiselect(key="tdef:archs").set_value(["rnn"])
    at.radio(key="tdef:mech").set_value("dpsgd")
    at.run(timeout=60)
    at.text_input(key="tdef:grid:dpsgd").set_value("1").run(timeout=120)
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.label.startswith("Run the sweep")]  # the point is cached
    assert any("standard deviation" in w.value for w in at.warning)  # the privacy caveat
    assert at.get("plotly_chart") and at.dataframe


def test_every_analysis_runs_on_a_csv_table(root):
    """All analyses, the audit's mislabeled-row canaries and the slices by class and by missing values included."""
    write_table(root / "wide.csv", n=200)  # 100 rows a half: 40 members, 20 non-members, 40 unused for canaries
    cfgs = {a: tabular(a, data_dir="wide.csv", label="label", n_shadows=2) for a in ("ffnn", "rnn")}
    out = analysis.analyze(cfgs, canaries=10).to_dict()  # every registered analysis
    assert set(analysis_registry.names()) <= set(out) and out["task"] == "tabular"
    assert set(out["slices"]["archs"]["rnn"]) == {"class", "missing values"}
    assert out["audit"]["rnn"]["m"] == 10 and "mislabeled rows" in out["audit"]["rnn"]["design"]

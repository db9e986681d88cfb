"""One rule for a metric's verdict everywhere: the findings table (F1, F1a), ``python -m core compare`` and the
Home page's answer judge the same cached repeats with the same comparison — the declared primary metric, the
secondary metrics Holm-adjusted over their family (:func:`core.analyses.repeats.judged_pairs`).

The planted case: six cached repeats of the tiny image comparison in which every leakage number of the FFNN
lies above the RNN's by a varying margin. Each metric alone then excludes 0 against the expected direction
(t interval and sign-flip p = 2/64 ≤ 0.05: "reversed"), but the sign-flip p of a secondary metric Holm-adjusted
over a family of ≥ 2 is ≥ 0.0625 > 0.05 ("inconclusive"). Before the fix the findings table judged each metric
alone and printed "reversed" where compare printed "inconclusive"; this test fails on that code."""
import copy
import json

import pytest

from core.analyses.answer import cached_answer
from core.analyses.findings import findings_table
from core.analyses.repeats import compare_summaries, comparison_configs, repeat_config, run_comparison
from core.cli.main import main
from core.experiment import roles
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary
from core.experiment.results import runs as typed_runs
from core.views.findings_report import row_cells

TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=2, attack_epochs=(1,), attack_train_epochs=3)
N = 6


def _set(attack: dict, accuracy: float, auc: float) -> None:
    attack["accuracy"], attack["auc"], attack["advantage"] = accuracy, auc, 2 * accuracy - 1


@pytest.fixture
def planted():
    """Repeat 0 of both architectures trained (tiny), then repeats 0 … N−1 cached as copies of it with planted
    leakage numbers: RNN 0.60 + 0.03 r, FFNN that + 0.04 + 0.01 r (accuracy, the primary attack's AUC, LiRA
    and RMIA AUC), each repeat under its own config (seed, hashes) as a real repeat would be."""
    configs = comparison_configs("image", "quick", 1, TINY)
    run_comparison(configs)
    cache = ArtifactCache()
    stored = {a: cache.get_json(cache.key("result", c.config_hash)) for a, c in configs.items()}
    for r in range(N):
        rnn = 0.60 + 0.03 * r
        for arch, cfg in configs.items():
            rc = repeat_config(cfg, r)
            s = copy.deepcopy(stored[arch])
            s["config"] = {**s["config"], "seed": rc.seed}
            s["config_hash"], s["training_hash"] = rc.config_hash, rc.training_hash
            v = rnn + (0.04 + 0.01 * r if arch == "ffnn" else 0.0)
            _set(s["attack"], v, v)
            _set(s["attacks"][s["attack"]["name"]], v, v)
            for name in ("lira", "rmia"):
                s["attacks"][name]["auc"] = v
            cache.put_json(cache.key("result", rc.config_hash), s)
            assert cached_summary(rc, cache) is not None, "the planted repeat must read back as a cached run"
    return configs


def test_findings_verdicts_equal_compare_verdicts_on_the_same_cached_repeats(planted, tmp_path, monkeypatch):
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: pytest.fail("compare or findings trained"))
    out = tmp_path / "compare.json"
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]
    assert main(["compare", "--task", "image", *sets, "--repeats", str(N), "--out", str(out)]) == 0
    comp = json.loads(out.read_text())
    assert comp["repeats"] == N and comp["primary"]["metric"] == "lira_auc"

    # the planted case can tell the two rules apart: alone, each metric is "reversed" ...
    runs = {a: [cached_summary(repeat_config(c, r)) for r in range(N)] for a, c in planted.items()}
    alone = compare_summaries(typed_runs(runs["ffnn"]), typed_runs(runs["rnn"]))
    assert alone["attack_accuracy"].verdict.value == "reversed"
    assert alone["rmia_auc"].verdict.value == "reversed"
    # ... but compare holds the secondary ones to Holm's correction; the declared primary keeps its verdict
    metrics = comp["metrics"]
    assert metrics["attack_accuracy"]["role"] == "secondary" and metrics["rmia_auc"]["role"] == "secondary"
    assert metrics["attack_accuracy"]["verdict"]["value"] == "inconclusive"
    assert metrics["rmia_auc"]["verdict"]["value"] == "inconclusive"
    assert metrics["lira_auc"]["role"] == "primary" and metrics["lira_auc"]["verdict"]["value"] == "reversed"

    table = findings_table(["image"], "quick", sets=TINY)
    f1 = next(r for r in table.rows if r.finding == "F1" and r.task == "image")
    f1a = next(r for r in table.rows if r.finding == "F1a" and r.task == "image")
    assert f1.n == f1a.n == N
    # per metric: the findings' verdict is compare's (value and reason), and its Holm p where compare has one
    assert f1.measured.verdict.to_dict() == metrics["attack_accuracy"]["verdict"]
    assert f1.measured.p_holm == metrics["attack_accuracy"]["p_holm"]
    for name in ("lira_auc", "rmia_auc"):
        assert f1a.measured[name].verdict.to_dict() == metrics[name]["verdict"], name
        assert f1a.measured[name].role == metrics[name]["role"]
    assert f1a.primary == comp["primary"]["metric"]
    # and the cells the page, the Markdown and the HTML print say so
    assert row_cells(f1)["verdict"].startswith("inconclusive") and "Holm" in row_cells(f1)["verdict"]
    assert row_cells(f1a)["verdict"].startswith("reversed (primary: lira_auc; rmia_auc: inconclusive")


def test_home_answer_reads_the_same_judgement(planted, monkeypatch):
    from core.tasks import get_task

    task = get_task("image")  # the Home page reads the quick preset: make it the tiny one the runs used
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})
    answer = cached_answer("image", "quick").to_dict()
    # the one answer is the studies' metric (attack accuracy) as compare judges it: Holm-adjusted, inconclusive here
    assert answer["repeats"] == N and answer["metric"] == "attack_accuracy" and answer["verdict"] == "inconclusive"
    table = findings_table(["image"], "quick")
    f1 = next(r for r in table.rows if r.finding == "F1" and r.task == "image")
    f1a = next(r for r in table.rows if r.finding == "F1a" and r.task == "image")
    metrics = answer["comparison"]["metrics"]
    assert f1.measured.verdict.to_dict() == metrics["attack_accuracy"]["verdict"]
    assert f1.verdict == answer["verdict"] and f1a.measured["lira_auc"].verdict.value == "reversed"


def test_attack_rows_bench_takes_compares_verdicts_and_leaves_the_other_attacks_exploratory(planted, tmp_path):
    """bench/attack_rows.py (docs/results.md's attack rows) on the planted repeats written as run JSONs: LiRA, RMIA
    and the primary attack carry compare's verdicts (equal to ``compare``'s JSON: its --compare check passes);
    every other attack is exploratory, with its interval but no verdict."""
    import importlib.util
    from pathlib import Path

    from core.analyses.repeats import comparison_json

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("attack_rows", root / "bench" / "attack_rows.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    folder = tmp_path / "runs"
    folder.mkdir()
    runs = {a: [cached_summary(repeat_config(c, r)) for r in range(N)] for a, c in planted.items()}
    for a, rs in runs.items():
        for r, s in enumerate(rs):
            (folder / f"image_{a}_r{r}.json").write_text(json.dumps(s))
    (folder / "compare.json").write_text(json.dumps(comparison_json(typed_runs(runs["ffnn"]), typed_runs(runs["rnn"]))))
    (group,) = [bench.attack_rows(t, label, pair) for t, label, pair in bench.group_runs(bench.read_runs([str(folder)]))]
    rows = {r["attack"]: r for r in group["rows"]}
    assert group["n"] == N and rows["lira"]["verdict"]["value"] == "reversed" and rows["lira"]["role"] == "primary"
    assert rows["rmia"]["verdict"]["value"] == "inconclusive" and rows["rmia"]["role"] == "secondary"
    assert rows[group["primary_attack"]]["compare_metric"] == "attack_auc"
    others = [r for r in rows.values() if r["compare_metric"] is None]
    assert others and all(r["verdict"] is None and r["verdict_text"] == "exploratory (no verdict)" for r in others)
    assert all(r["ffnn"]["n"] == N and r["difference"]["ci_low"] is not None for r in rows.values())
    assert bench.check_compare([group], str(folder / "compare.json")) == []
    assert bench.main([str(folder), "--compare", str(folder / "compare.json")]) == 0
    # a run whose partner did not finish is left out (the pairs stay those compare reads)
    lone = {**runs["ffnn"][0], "config": {**runs["ffnn"][0]["config"], "seed": 12345}}
    (folder / "image_ffnn_lone.json").write_text(json.dumps(lone))
    (again,) = [bench.attack_rows(t, label, pair) for t, label, pair in bench.group_runs(bench.read_runs([str(folder)]))]
    assert again["n"] == N and 12345 not in again["seeds"] and again["rows"] == group["rows"]

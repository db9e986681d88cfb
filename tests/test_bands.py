"""Bands on defense curves (after training and DP-SGD-style sweeps) and the analyses' verdicts over
repeats: intervals computed on planted data cover the truth and carry the right N, the Defenses page
draws the band, ``analyze --repeats`` writes three-valued verdicts."""
import copy
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.analyses import verdicts as analysis_verdicts
from core.analyses.repeats import defense_curve_bands as typed_curve_bands
from core.analyses.repeats import defense_intervals, repeat_config
from core.defenses.sweeps import collect_points_repeats
from core.experiment.pipeline import run_experiment
from core.experiment.results import DefendedPoint, RunSummary
from core.measurement.stats import FINDING_VERDICTS
from core.tasks import get_task
from core.views.defense_figures import band_caption, defense_curves
from core.views.training_defense_figures import training_defense_curves
from tests.typed_runs import typed_run

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


def _point(value, acc, acc_sd=None, utility=None, utility_sd=None, loss=None, lira=None):
    """A point's JSON (the layout core.analyses.repeats' bands read)."""
    def attack(**numbers):
        return {"accuracy": acc, "advantage": 2 * acc - 1, "tpr_at_fpr": {}, **{k: v for k, v in numbers.items()
                                                                             if v is not None}}
    p = {"value": value, "attack": {"name": "shadow", **attack(accuracy_std=acc_sd, auc=acc, auc_std=acc_sd)},
         "attacks": {}, "utility": utility, "utility_std": utility_sd, "utility_loss": loss}
    if lira is not None:
        p["attacks"]["lira"] = attack(auc=lira, auc_std=0.0)
    return p


def defense_curve_bands(curves, *args, **kwargs):
    """The banded points' JSON (what ``defend --repeats`` writes) of curves of points' JSON: typed_curve_bands
    takes them typed and returns them typed."""
    points = typed_curve_bands([_typed(c) for c in curves], *args, **kwargs)
    assert all(isinstance(p, DefendedPoint) for p in points)
    return [p.to_dict() for p in points]


def _typed(points):
    """The banded points as the figures take them."""
    return [DefendedPoint.from_dict(p) for p in points]


def test_curve_band_over_repeats_covers_the_planted_mean_at_about_95_percent():
    rng = np.random.default_rng(0)
    truth, sd, n, trials = 0.7, 0.05, 4, 400
    covered = 0
    for _ in range(trials):
        curves = [[_point(k, float(truth + (1 - k) * 0.01 + rng.normal(0, sd))) for k in (1.0, 0.1)] for _ in range(n)]
        band = defense_curve_bands(curves, draws=2)
        assert [p["value"] for p in band] == [1.0, 0.1] and band[0]["band"] == {"repeats": n, "draws": 2, "over": "repeats"}
        e = band[0]["intervals"]["attack_accuracy"]
        assert e["n"] == n and "4 repeats" in e["method"] and e["mean"] == pytest.approx(
            np.mean([c[0]["attack"]["accuracy"] for c in curves]))
        covered += e["ci_low"] <= truth <= e["ci_high"]
    assert 0.90 <= covered / trials <= 0.99


def test_one_repeat_bands_over_draws_and_maps_the_utility_interval_into_the_loss():
    p = _point(1.0, 0.6, acc_sd=0.02, utility=30.0, utility_sd=2.0, loss=0.25, lira=0.8)
    (b,) = defense_curve_bands([[p]], draws=5, baseline_utilities=[40.0])
    assert b["band"] == {"repeats": 1, "draws": 5, "over": "draws"}
    u, loss = b["intervals"]["utility"], b["intervals"]["utility_loss"]
    half = 2.776 * 2.0 / np.sqrt(5)  # t(0.975, 4) · sd / √n
    assert u["n"] == 5 and u["ci_low"] == pytest.approx(30 - half, abs=1e-3) and u["method"] == "t over 5 draws"
    # L = 1 − u/u₀ with u₀ = 40: the utility's interval mapped through L
    assert loss["ci_low"] == pytest.approx(1 - u["ci_high"] / 40) and loss["ci_high"] == pytest.approx(1 - u["ci_low"] / 40)
    assert loss["ci_low"] < 0.25 < loss["ci_high"]
    assert b["intervals"]["lira_auc"]["mean"] == 0.8
    # one draw, one repeat: no interval, and the page says so
    (single,) = defense_curve_bands([[_point(1.0, 0.6, acc_sd=0.0)]], draws=1)
    assert single["intervals"]["attack_accuracy"]["ci_low"] is None and single["band"]["over"] is None
    assert band_caption({"ffnn": _typed([single])}).startswith("No interval")
    # a value missing in one repeat gets no point
    assert [q["value"] for q in defense_curve_bands([[_point(1.0, .6), _point(.1, .5)], [_point(1.0, .6)]], 1)] == [1.0]
    assert defense_intervals(_typed([_point(1.0, 0.6)]), 1) == {}  # no sd over draws: nothing to band


def test_defense_curve_figure_draws_the_band_through_the_means():
    curves = [[_point(k, a + d) for k, a in ((0.1, 0.55), (10.0, 0.7))] for d in (-0.02, 0.0, 0.03)]
    band = defense_curve_bands(curves, draws=1)
    fig = defense_curves({"rnn": _typed(band)}, {}, "k", None, True)
    fill = [t for t in fig.data if t.fill == "toself"]
    assert len(fill) == 1 and "N = 3 repeats" in fill[0].name
    line = [t for t in fig.data if t.name == "RNN attack accuracy"][0]
    assert list(line.y) == pytest.approx([0.55 + 1 / 300, 0.7 + 1 / 300])  # the mean over repeats, not repeat 0
    e = band[0]["intervals"]["attack_accuracy"]
    assert max(fill[0].y) == pytest.approx(band[1]["intervals"]["attack_accuracy"]["ci_high"])
    assert min(fill[0].y) == pytest.approx(e["ci_low"])
    assert "N = 3 repeats" in band_caption({"rnn": _typed(band)})


@pytest.fixture(scope="module")
def template_summary(tmp_path_factory):
    """A whole summary of a tiny run (the typed reader checks every field), to plant numbers in."""
    from core.experiment.cache import ArtifactCache

    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    return run_experiment(cfg, cache=ArtifactCache(tmp_path_factory.mktemp("cache"))).summary


def _summary(template, acc, utility, seed=0):
    """The template with these numbers planted, typed as a cached run is read."""
    s = copy.deepcopy(template)
    name = s["attack"]["name"]
    s["config_hash"] = f"{s['config_hash'][:10]}{seed:04d}{int(acc * 1000):06d}"
    s["attack"]["accuracy"] = s["attacks"][name]["accuracy"] = acc
    s["utility"]["val"] = utility
    return RunSummary.from_dict(s)


def test_sweep_points_get_intervals_over_the_cached_repeats_only(template_summary):
    t = template_summary
    runs = {"ffnn": [(None, None), (2.0, None), (8.0, None)]}
    reps = [{("ffnn", None): _summary(t, 0.7, 0.9, r), ("ffnn", 2.0): _summary(t, 0.55 + 0.01 * r, 0.6 - 0.02 * r, r),
             ("ffnn", 8.0): _summary(t, 0.5, 0.3, r) if r == 0 else None} for r in range(3)]
    baselines, points = collect_points_repeats(runs, reps, "l2")
    p2, p8 = sorted(points["ffnn"], key=lambda p: p.value)
    acc = p2.interval("attack_accuracy")
    assert p2.band.repeats == 3 and acc.n == 3 and acc.ci_low < 0.56 < acc.ci_high
    assert acc.mean == pytest.approx(0.56)
    assert p2.interval("utility_loss").mean == pytest.approx(1 - 0.58 / 0.9)
    assert p8.intervals is None and p8.band is None  # one repeat cached: no interval
    assert "intervals" not in p8.to_dict()
    fig = training_defense_curves(points, baselines, "attack_accuracy", "value", "λ")
    assert any(t.fill == "toself" and "N = 3" in t.name for t in fig.data)


def test_repeated_verdicts_on_planted_pairs():
    seeds = iter(range(10_000))

    def rep(f, r):  # repeat i of both architectures shares its seed (the one answer pairs them by it)
        seed = next(seeds)
        return {"runs": {a: typed_run({"arch": a, "config": {"seed": seed, "n_eval": 20},
                                       "attack": {"name": "shadow", "accuracy": acc}})
                         for a, acc in (("ffnn", f), ("rnn", r))}}

    ffnn, rnn = (0.6, 0.61, 0.59, 0.6, 0.62, 0.6), (0.7, 0.72, 0.69, 0.71, 0.7, 0.73)  # N = 6: a sign test can reach 95 %
    holds = analysis_verdicts.repeated_verdicts([rep(f, r) for f, r in zip(ffnn, rnn)], list(range(6))).to_dict()
    v = holds["verdicts"]["rnn_more_vulnerable"]
    assert v["verdict"]["value"] == "holds" and v["n"] == 6 and v["verdict"]["ci_high"] < 0
    assert analysis_verdicts.repeated_verdicts([rep(r, f) for f, r in zip(ffnn, rnn)]).verdicts[
        "rnn_more_vulnerable"].paired.verdict.value == "reversed"
    three = analysis_verdicts.repeated_verdicts([rep(0.6, 0.7), rep(0.61, 0.72), rep(0.59, 0.69)]).to_dict()["verdicts"]
    assert three["rnn_more_vulnerable"]["verdict"]["value"] == "inconclusive"  # N = 3: the sign test cannot agree
    null = analysis_verdicts.repeated_verdicts([rep(0.6, 0.7), rep(0.7, 0.6), rep(0.65, 0.66)]).to_dict()
    assert null["verdicts"]["rnn_more_vulnerable"]["verdict"]["value"] == "inconclusive"
    # the analyses' HTML export (the Analyses page's button) carries them, with interval and N
    from core.analyses.analyses_json import AnalysesResults
    from core.views.report import html_report

    page = html_report(AnalysesResults.from_dict({"verdicts": {}, "repeats": holds}), {}, "t")
    assert "Verdicts over 6 paired repeats" in page and "<b>holds</b>" in page and "N = 6 repeats" in page
    assert "Verdicts over" not in html_report(AnalysesResults.from_dict({"verdicts": {}}), {}, "t")  # one run: no such section


def test_analyze_repeats_writes_paired_verdicts_and_the_page_shows_them(tmp_path, capsys, monkeypatch):
    from core.cli.main import main

    monkeypatch.setattr("core.foundations.device.configure_threads", lambda: 1)
    sets = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]
    out = tmp_path / "a"
    assert main(["analyze", "--task", "image", *sets, "--analysis", "vulnerability", "--repeats", "2",
                 "--out", str(out), "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    rep = printed["repeats"]
    assert rep["n"] == 2 and len(set(rep["seeds"])) == 2
    for key in ("rnn_more_vulnerable", "rnn_more_vulnerable_over_training"):
        v = rep["verdicts"][key]
        assert v["n"] == 2 and v["verdict"]["value"] in FINDING_VERDICTS
        assert v["difference"]["n"] == 2 and len(v["ffnn"]["values"]) == 2
    assert json.loads((out / "analyses.json").read_text())["repeats"]["n"] == 2
    # the Analyses page: the same verdicts with N and the interval, from the cached repeats
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY})
    assert repeat_config(task.make_config("rnn", "quick"), 1).seed == rep["seeds"][1]
    at = AppTest.from_file(str(ROOT / "app_pages" / "4_Analyses.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Over 2 paired repeats" in text and "N = 2" in text and "95 % CI" in text
    assert any(w in text for w in ("**holds**", "**reversed**", "**inconclusive**"))


@pytest.mark.xdist_group("tiny-image-runs")
def test_defenses_page_draws_the_band_over_cached_repeats(tiny_image_runs):
    # repeats 0 and 1 of FFNN and RNN (what run_experiment(repeat_config(cfg, r)) trains), built once per run
    tiny_image_runs(2)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    assert at.number_input(key="repeats:image:quick").value == 2
    assert any("N = 2 repeats" in c.value for c in at.caption)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    bands = [t for fig in charts for t in fig["data"] if t.get("fill") == "toself" and "95% band" in t.get("name", "")]
    assert {b["name"].split(" attack")[0] for b in bands} >= {"FFNN", "RNN"} and all("N = 2" in b["name"] for b in bands)
    # below the curves, two tabs of which only the open one is drawn: the grid's table first, then
    # the defended outputs' entropy (a slider step redraws one chart, not two)
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert len(charts) == 1 and "utility loss" in titles[0] and at.dataframe
    at.session_state["defenses:below:dirichlet"] = "Defended outputs' entropy"
    at.run(timeout=120)
    assert not at.exception, at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert len(titles) == 2 and "Prediction entropy" in titles[1] and not at.dataframe


def test_training_defenses_page_bands_a_sweep_over_its_cached_repeats(monkeypatch):
    from core.defenses.sweeps import sweep_runs

    task = get_task("image")
    tiny = {**TINY, "attack_epochs": (), "batch_size": 16}
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **tiny})
    runs = sweep_runs({"ffnn": task.make_config("ffnn", "quick")}, "l2", [0.1])
    for r in range(2):
        for _, cfg in runs["ffnn"]:
            run_experiment(repeat_config(cfg, r))
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run(timeout=60)
    at.multiselect(key="tdef:archs").set_value(["ffnn"])
    at.radio(key="tdef:mech").set_value("l2")
    at.run(timeout=60)
    at.text_input(key="tdef:grid:l2").set_value("0.1").run(timeout=120)
    assert not at.exception, at.exception
    assert at.number_input(key="tdef:repeats:l2:0.1").value == 2
    assert not [b for b in at.button if b.label.startswith("Run the sweep")]  # both repeats cached
    assert any("N = 2 repeats" in c.value for c in at.caption)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(t.get("fill") == "toself" and "N = 2 repeats" in t.get("name", "") for f in charts for t in f["data"])
    # a third repeat is offered as further runs of the sweep
    at.number_input(key="tdef:repeats:l2:0.1").set_value(3).run(timeout=60)
    assert any(b.label.startswith("Run the sweep (2 runs to train") for b in at.button), [b.label for b in at.button]

"""Figures: legends outside the plot, thinned series for drawing, the entropy comparison (ECDF or
dots), navigation maps from the victim's real paths."""
import json

import numpy as np
import pytest

from core.experiment.pipeline import run_experiment
from core.experiment.results import RepeatsBlock
from core.measurement.bootstrap import RocBand
from core.tasks import get_task
from core.tasks.examples import NavigationExamples
from core.views.comparison_tables import strongest_attacks_table
from core.views.map_figures import navigation_map
from core.views.repeat_figures import repeats_table, roc_band_figure
from core.views.run_figures import ecdf_points, entropy_comparison, metrics_table, roc_curves, roc_loglog, thin_roc
from core.views.style import AXIS_TITLE_PX, LEGEND_ROW_PX, legend_rows
from tests.typed_runs import typed_runs


def summary(arch, n, rng, separation=1.0):
    """A summary with the fields the figures read (numbers from a seeded generator)."""
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    ape = np.exp(rng.normal(-3 - separation * member, 1.0))
    fpr = np.sort(rng.random(2000))
    return {"arch": arch, "params": 1000, "attack": {"name": "shadow"},
            "attacks": {"shadow": {"roc_fpr": [0.0, *fpr.tolist(), 1.0], "roc_tpr": [0.0, *np.sqrt(fpr).tolist(), 1.0],
                                   "auc": 0.7}},
            "records": {"ape": ape.tolist(), "membership": member.tolist()}}


def test_legends_sit_below_the_axis_titles_in_their_own_margin():
    rng = np.random.default_rng(0)
    fig = roc_curves(typed_runs([summary("ffnn", 50, rng), summary("rnn", 50, rng)]))
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    # one entry a row in both ROC figures (at two a row they overlapped and clipped "… · TPR@1% 0." in the
    # page's half-width columns): each entry the legend's full width, the margin room for every row
    rows = legend_rows(fig, per_row=1)
    assert rows == 3  # 3 entries, 1 per row
    assert fig.layout.margin.b >= AXIS_TITLE_PX + rows * LEGEND_ROW_PX
    loglog = roc_loglog(typed_runs([{**summary("ffnn", 50, rng), "attacks": {"shadow": {
        **summary("ffnn", 50, rng)["attacks"]["shadow"], "tpr_at_fpr": {"0.01": 0.1}, "n_nonmembers": 50}}}]))
    for f in (fig, loglog):
        assert f.layout.legend.entrywidth > 0.9 and f.layout.legend.entrywidthmode == "fraction"


def best_tpr_at(fpr, tpr, at):
    """The original curve's highest TPR at an FPR ≤ each of ``at`` (what a threshold there reaches)."""
    f, t = np.asarray(fpr, float), np.asarray(tpr, float)
    order = np.argsort(f, kind="stable")
    f, t = f[order], np.maximum.accumulate(t[order])
    return t[np.searchsorted(f, np.asarray(at, float), side="right") - 1]


def on_the_curve(fpr, tpr, f, t) -> bool:
    """Every drawn point is a point the attack reaches: its TPR is the best the curve has at that
    FPR or below — never more (an inflated TPR) and never less."""
    return bool(np.array_equal(np.asarray(t, float), best_tpr_at(fpr, tpr, f)))


def test_roc_is_thinned_for_drawing_keeping_its_shape():
    rng = np.random.default_rng(1)
    s = summary("ffnn", 50, rng)
    fpr, tpr = s["attacks"]["shadow"]["roc_fpr"], s["attacks"]["shadow"]["roc_tpr"]
    f, t = thin_roc(fpr, tpr, max_points=200)
    assert len(f) <= 210 and f[0] == 0.0 and f[-1] == 1.0 and t[-1] == 1.0
    assert all(a <= b for a, b in zip(f, f[1:])) and all(a <= b for a, b in zip(t, t[1:]))
    assert on_the_curve(fpr, tpr, f, t)
    # the low-FPR end is kept: the smallest non-zero FPR of the curve is drawn, with its TPR
    assert min(v for v in f if v > 0) == min(v for v in fpr if v > 0)
    # the check sees a thinning that pairs each kept FPR with the next point's TPR (an inflated curve)
    idx = np.searchsorted(np.asarray(fpr), f)
    inflated = [tpr[min(i + 1, len(tpr) - 1)] for i in idx]
    assert not on_the_curve(fpr, tpr, f, inflated)
    short = ([0.0, 0.5, 1.0], [0.0, 0.7, 1.0])
    assert thin_roc(*short) == (list(short[0]), list(short[1]))


def test_entropy_comparison_is_an_ecdf_for_many_records_and_dots_for_few():
    rng = np.random.default_rng(2)
    many = entropy_comparison(typed_runs([summary("ffnn", 500, rng), summary("rnn", 500, rng)]))
    lines = [t for t in many.data if t.mode == "lines"]
    assert len(lines) == 4 and all(len(t.x) <= 201 for t in lines)  # thinned to ≤ 200 steps each
    assert all(t.y[-1] == pytest.approx(1.0) for t in lines)
    few = entropy_comparison(typed_runs([summary("ffnn", 8, rng), summary("rnn", 8, rng)]))
    dots = [t for t in few.data if t.mode == "markers"]
    assert len(dots) == 4 and all(len(t.x) == 8 for t in dots)  # every record a dot
    assert list(few.layout.yaxis.ticktext) == ["FFNN members (8)", "FFNN non-members (8)", "RNN members (8)",
                                               "RNN non-members (8)"]


def test_ecdf_points_are_a_thinned_cdf():
    x, y = ecdf_points(np.arange(1000.0), max_points=100)
    assert len(x) <= 101 and x[0] == 0 and x[-1] == 999 and y[-1] == 1.0
    assert ecdf_points(np.array([])) == ([], [])


def test_navigation_maps_show_each_architectures_path_start_and_goal():
    from core.jobs.mapview import cached_map_views, compute_map_views

    values = {"n_train": 2, "n_eval": 2, "epochs": 1, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 2,
              "frames": 2048}
    views = {}
    for arch in ("ffnn", "rnn"):
        cfg = get_task("navigation").make_config(arch, "quick", values)
        result = run_experiment(cfg)
        views[arch] = compute_map_views(cfg, models=result.models)
        assert cached_map_views(cfg) == views[arch]
        examples = NavigationExamples.from_dict(result.summary["examples"])  # as the run view reads it
        assert json.dumps(examples.to_dict()) == json.dumps(result.summary["examples"]) and len(examples.maps) == 2
        for m, shown in zip(views[arch].maps, examples.maps):
            assert (m.role, m.seed, m.steps) == (shown.role, shown.seed, shown.steps)  # same episode
            cells = np.asarray(m.cells)
            assert cells[m.start[1], m.start[0]] != 2  # the agent starts off the walls
            assert m.goal is not None and cells[m.goal[1], m.goal[0]] == 8
            assert m.path[0] == m.start
        # any record's map (e.g. a most exposed member) replays the same seeded episode as the examples
        models = result.models
        member = int(models.splits.eval_members[0])
        shown = models.task.describe_record(cfg, models.data, member, lambda: models.model("victim"))
        again, first = shown.answer, views[arch].maps[0]
        assert shown.kind == "map" and again.role == "member"
        assert (again.seed, again.path, again.cells) == (first.seed, first.path, first.cells)
    fig = navigation_map({arch: v.maps for arch, v in views.items()}, "member")
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert any(n.startswith("FFNN path") for n in names) and any(n.startswith("RNN path") for n in names)
    assert "start (facing)" in names and "wall" in names and "goal" in names
    assert fig.layout.yaxis.scaleanchor == "x"  # square cells


def _attack(n_nonmembers, fpr, tpr, tpr_at):
    return {"name": "shadow", "accuracy": 0.6, "advantage": 0.2, "auc": 0.7, "n_members": n_nonmembers,
            "n_nonmembers": n_nonmembers, "roc_fpr": fpr, "roc_tpr": tpr, "tpr_at_fpr": tpr_at}


def test_a_tpr_finer_than_the_non_members_is_labelled_the_tpr_at_zero_false_positives():
    # 200 non-members: 1 % allows 2 false positives (resolved); 0.1 % allows none: the TPR at FPR 0
    roc = ([0.0, 0.005, 0.01, 0.5, 1.0], [0.12, 0.2, 0.3, 0.9, 1.0])
    s = {"arch": "ffnn", "attack": {"name": "shadow"},
         "attacks": {"shadow": _attack(200, *roc, {"0.01": 0.3, "0.001": 0.12})}}
    table = metrics_table(typed_runs([s]))
    # 1 % of 200 allows 2 false positives: an estimate biased up, flagged in its name
    assert "TPR @ 0.1% FPR" not in table.columns and table["TPR @ 1% FPR (≤ 2 FP: biased up)"][0] == 0.3
    assert table["TPR at 0 false positives (FPR < 1/200)"][0] == 0.12
    strong = strongest_attacks_table(typed_runs([s]))
    assert list(strong.columns).count("TPR at 0 false positives (FPR < 1/200)") == 1
    # 50 non-members: neither FPR is resolved; one column, not two copies of the same number
    few = {**s, "attacks": {"shadow": _attack(50, *roc, {"0.01": 0.12, "0.001": 0.12})}}
    cols = metrics_table(typed_runs([few])).columns
    assert "TPR @ 1% FPR" not in cols and "TPR at 0 false positives (FPR < 1/50)" in cols
    # 2000 non-members resolve both: the usual names
    many = {**s, "attacks": {"shadow": _attack(2000, *roc, {"0.01": 0.3, "0.001": 0.12})}}
    # (0.1 % of 2000 allows 2 false positives: flagged; 1 % allows 20: the plain name)
    assert {"TPR @ 1% FPR", "TPR @ 0.1% FPR (≤ 2 FP: biased up)"} <= set(metrics_table(typed_runs([many])).columns)
    alot = {**s, "attacks": {"shadow": _attack(5000, *roc, {"0.01": 0.3, "0.001": 0.12})}}
    assert {"TPR @ 1% FPR", "TPR @ 0.1% FPR"} <= set(metrics_table(typed_runs([alot])).columns)


def test_log_roc_draws_only_what_the_non_members_measure_and_marks_the_floor():
    roc = ([0.0, 0.005, 0.01, 0.5, 1.0], [0.12, 0.2, 0.3, 0.9, 1.0])
    s = {"arch": "rnn", "attack": {"name": "shadow"},
         "attacks": {"shadow": _attack(200, *roc, {"0.01": 0.3, "0.001": 0.12})}}
    for fig in (roc_loglog(typed_runs([s])), roc_curves(typed_runs([s]))):
        curve = fig.data[0]
        assert min(curve.x) == pytest.approx(1 / 200)  # FPR 0 is not drawn at 10⁻³ as if measured
        assert [sh.x0 for sh in fig.layout.shapes] == [pytest.approx(1 / 200)]
        assert any("1/n = 1/200" in a.text for a in fig.layout.annotations)
    few = {**s, "attacks": {"shadow": _attack(50, *roc, {"0.01": 0.12, "0.001": 0.12})}}
    assert "TPR@0FP (FPR < 1/50) 0.12" in roc_loglog(typed_runs([few])).data[0].name
    band = {"fpr": [0.0, 0.001, 0.005, 0.01, 0.1, 1.0], "tpr": [0.1, 0.1, 0.2, 0.3, 0.6, 1.0],
            "lo": [0.0] * 5 + [1.0], "hi": [0.3, 0.3, 0.4, 0.5, 0.8, 1.0], "n": 3,
            "method": "t over 3 repeats"}
    fig = roc_band_figure({"rnn": RocBand.from_dict(band)}, {"rnn": 200})
    assert min(fig.data[1].x) == pytest.approx(0.005) and fig.data[1].y[0] == 0.2
    assert [sh.x0 for sh in fig.layout.shapes] == [pytest.approx(1 / 200)]


def test_repeats_table_names_an_unresolved_tpr_for_what_it_is():
    e = {"mean": 0.1, "ci_low": 0.05, "ci_high": 0.15, "n": 3}
    block = {"n": 3, "seeds": [0, 1, 2], "config_hashes": ["a", "b", "c"], "resolution": {"n_members": 200, "n_nonmembers": 200},
             "metrics": {"attack_auc": e, "tpr_at_1pct_fpr": {**e, "mean": 0.3}, "tpr_at_0.1pct_fpr": e}}
    table = repeats_table({"ffnn": RepeatsBlock.from_dict(block)})
    assert "TPR @ 1% FPR" in table.columns and "TPR @ 0.1% FPR" not in table.columns
    assert table["TPR at 0 false positives (FPR < 1/200)"][0] == "0.100 [0.050, 0.150]"
    old = {k: v for k, v in block.items() if k != "resolution"}  # a block written before its resolution
    assert "TPR @ 0.1% FPR" in repeats_table({"ffnn": RepeatsBlock.from_dict(old)}).columns


def test_long_legend_names_get_a_row_each_and_the_attack_curve_one_entry_per_attack():
    """Two entries a row overlapped and were cut at a half-width figure's edge when names are long; the attack-over-
    epochs figure lists each attack once (it toggles both architectures; the colour is the architecture)."""
    import plotly.graph_objects as go

    from core.views.style import TWO_A_ROW_CHARS, layout

    fig = go.Figure()
    for name in ("FFNN · quantile regression", "RNN · gap"):
        fig.add_scatter(x=[0, 1], y=[0, 1], name=name)
    assert len("FFNN · quantile regression") > TWO_A_ROW_CHARS
    assert layout(fig, "t", "x", "y").layout.legend.entrywidth > 0.9  # one a row
    short = go.Figure()
    for name in ("LiRA", "RMIA"):
        short.add_scatter(x=[0, 1], y=[0, 1], name=name)
    assert layout(short, "t", "x", "y").layout.legend.entrywidth < 0.5  # two a row

"""Figures: legends outside the plot, thinned series for drawing, the entropy comparison (ECDF or
dots), navigation maps from the victim's real paths."""
import numpy as np
import pytest

from core.experiment.pipeline import run_experiment
from core.tasks import get_task
from core.views import figures as plots


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
    fig = plots.roc_curves([summary("ffnn", 50, rng), summary("rnn", 50, rng)])
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    # one entry a row in both ROC figures (issue 32.12: two a row overlapped and clipped "… · TPR@1% 0." in the
    # page's half-width columns): each entry the legend's full width, the margin room for every row
    rows = plots._legend_rows(fig, per_row=1)
    assert rows == 3  # 3 entries, 1 per row
    assert fig.layout.margin.b >= plots.AXIS_TITLE_PX + rows * plots.LEGEND_ROW_PX
    loglog = plots.roc_loglog([{**summary("ffnn", 50, rng), "attacks": {"shadow": {
        **summary("ffnn", 50, rng)["attacks"]["shadow"], "tpr_at_fpr": {"0.01": 0.1}, "n_nonmembers": 50}}}])
    for f in (fig, loglog):
        assert f.layout.legend.entrywidth > 0.9 and f.layout.legend.entrywidthmode == "fraction"


def test_roc_is_thinned_for_drawing_keeping_its_shape():
    rng = np.random.default_rng(1)
    s = summary("ffnn", 50, rng)
    fpr, tpr = s["attacks"]["shadow"]["roc_fpr"], s["attacks"]["shadow"]["roc_tpr"]
    f, t = plots.thin_roc(fpr, tpr, max_points=200)
    assert len(f) <= 210 and f[0] == 0.0 and f[-1] == 1.0 and t[-1] == 1.0
    assert all(a <= b for a, b in zip(f, f[1:])) and all(a <= b for a, b in zip(t, t[1:]))
    # each kept point is on the original curve (best TPR reached at that FPR)
    full = dict(zip(fpr, tpr))
    assert all(abs(full[x] - y) < 1e-12 or y >= full[x] for x, y in zip(f, t))
    short = ([0.0, 0.5, 1.0], [0.0, 0.7, 1.0])
    assert plots.thin_roc(*short) == (list(short[0]), list(short[1]))


def test_entropy_comparison_is_an_ecdf_for_many_records_and_dots_for_few():
    rng = np.random.default_rng(2)
    many = plots.entropy_comparison([summary("ffnn", 500, rng), summary("rnn", 500, rng)])
    lines = [t for t in many.data if t.mode == "lines"]
    assert len(lines) == 4 and all(len(t.x) <= 201 for t in lines)  # thinned to ≤ 200 steps each
    assert all(t.y[-1] == pytest.approx(1.0) for t in lines)
    few = plots.entropy_comparison([summary("ffnn", 8, rng), summary("rnn", 8, rng)])
    dots = [t for t in few.data if t.mode == "markers"]
    assert len(dots) == 4 and all(len(t.x) == 8 for t in dots)  # every record a dot
    assert list(few.layout.yaxis.ticktext) == ["FFNN members (8)", "FFNN non-members (8)", "RNN members (8)",
                                               "RNN non-members (8)"]


def test_ecdf_points_are_a_thinned_cdf():
    x, y = plots.ecdf_points(np.arange(1000.0), max_points=100)
    assert len(x) <= 101 and x[0] == 0 and x[-1] == 999 and y[-1] == 1.0
    assert plots.ecdf_points(np.array([])) == ([], [])


def test_navigation_maps_show_each_architectures_path_start_and_goal():
    from ui.mapview import cached_map_views, compute_map_views

    values = {"n_train": 2, "n_eval": 2, "epochs": 1, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 2,
              "frames": 2048}
    views = {}
    for arch in ("ffnn", "rnn"):
        cfg = get_task("navigation").make_config(arch, "quick", values)
        result = run_experiment(cfg)
        views[arch] = compute_map_views(cfg, models=result.models)
        assert cached_map_views(cfg) == views[arch]
        for m, shown in zip(views[arch]["maps"], result.summary["examples"]["maps"]):
            assert (m["role"], m["seed"], m["steps"]) == (shown["role"], shown["seed"], shown["steps"])  # same episode
            cells = np.asarray(m["cells"])
            assert cells[m["start"][1], m["start"][0]] != 2  # the agent starts off the walls
            assert m["goal"] is not None and cells[m["goal"][1], m["goal"][0]] == 8
            assert m["path"][0] == m["start"]
        # any record's map (e.g. a most exposed member) replays the same seeded episode as the examples
        models = result.models
        member = int(models.splits.eval_members[0])
        shown = models.task.describe_record(cfg, models.data, member, lambda: models.model("victim"))
        again, first = shown.answer, views[arch]["maps"][0]
        assert shown.kind == "map" and again["role"] == "member"
        assert (again["seed"], again["path"], again["cells"]) == (first["seed"], first["path"], first["cells"])
    fig = plots.navigation_map(views, "member")
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert any(n.startswith("FFNN path") for n in names) and any(n.startswith("RNN path") for n in names)
    assert "start (facing)" in names and "wall" in names and "goal" in names
    assert fig.layout.yaxis.scaleanchor == "x"  # square cells

"""The "why" analyses: scatter boundaries, quadrant search, verdicts, sequential training, the
analyze CLI and the Analyses page."""
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.analyses import analysis, own_models
from core.analyses import registry as analysis_registry
from core.analyses import verdicts as analysis_verdicts
from core.analyses.analyses_json import AnalysesResults
from core.analyses.analysis_results import MemberMeans, Quadrant, Scatter, Vulnerability
from core.experiment.pipeline import run_experiment
from core.experiment.results import RunRecords, RunSummary
from core.foundations.errors import ConfigError
from core.foundations.version import unstamped
from core.measurement.responses import Responses
from core.tasks import get_task
from tests.typed_runs import typed_run

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=4, n_shadows=1, attack_epochs=(2,), attack_train_epochs=5)


def test_signals_on_hand_made_responses():
    probs = np.array([[1.0, 0.0], [0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    r = Responses.from_probs(probs, [1, 1, 2], np.array([0, 0, 0, 1]))
    np.testing.assert_allclose(r.ape[:2], [0.0, np.log(2)], atol=1e-6)
    np.testing.assert_allclose(r.mean_cross_entropy[2], (-np.log(0.9) - np.log(0.8)) / 2, rtol=1e-5)


def test_surrogate_recovers_a_known_boundary():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-3, 0, 2000), rng.uniform(-3, 0, 2000)
    decisions = x + y < -3  # the attack's (known) rule, a line in this plane
    s = analysis.surrogate_boundary(x, y, decisions)
    assert s.agreement > 0.97
    z = np.asarray(s.member_probability)
    gx, gy = np.asarray(s.x), np.asarray(s.y)
    # the predicted member region on the lattice matches the rule away from the line
    far = np.abs(gx[None, :] + gy[:, None] + 3) > 0.3
    assert ((z > 0.5) == (gx[None, :] + gy[:, None] < -3))[far].mean() > 0.98


def test_quadrant_search_finds_a_planted_quadrant():
    rng = np.random.default_rng(1)
    h, ce = rng.uniform(0, 1, 1000), rng.uniform(0, 1, 1000)
    member = (ce < 0.3) & (h < 0.6)
    q = analysis.best_quadrant(h, ce, member)
    assert q["accuracy"] > 0.98
    assert q["cross_entropy_max"] == pytest.approx(0.3, abs=0.03) and q["entropy_max"] == pytest.approx(0.6, abs=0.03)
    assert q["n_scored"] in (500, 501)  # scored on the half that did not choose it


def test_the_best_quadrant_is_scored_on_records_it_was_not_chosen_on():
    """Signals that carry no membership: the best of 81 × 81 rules on the records it is scored on reads well above
    chance (it overstates); chosen on one half and scored on the other it reads chance, within its noise."""
    rng = np.random.default_rng(3)
    held, chosen = [], []
    for t in range(20):
        h, ce = rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)
        member = np.r_[np.ones(100, bool), np.zeros(100, bool)]
        q = analysis.best_quadrant(h, ce, member, seed=t)
        held.append(q["accuracy"]), chosen.append(q["accuracy_chosen_on"])
    assert np.mean(chosen) > 0.58  # the maximum over thousands of rules on its own records
    assert abs(np.mean(held) - 0.5) < 0.03  # held out: chance


@pytest.mark.parametrize("rnn,ffnn,diff", [([0.7, 0.8], [0.6, 0.65], -0.125), ([0.5, 0.5], [0.6, 0.7], 0.15),
                                           ([0.7, 0.5], [0.6, 0.6], 0.0), ([0.7], [0.6], -0.1)])
def test_one_run_gives_the_difference_and_no_verdict(rnn, ffnn, diff):
    """Points of one run (epochs, blocks) are not repeats; one run never holds or fails."""
    v = analysis_verdicts.verdict(rnn, ffnn)
    assert v.value == "inconclusive" and v.difference == pytest.approx(diff)
    assert analysis_verdicts.ONE_REPEAT in v.text and f"{diff:+.3f}" in v.text


def test_sequential_training_learns_each_block_in_order():
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", TINY)
    data = task.load(cfg)
    blocks = [data.victim_pool[:20], data.victim_pool[20:40]]
    model, curve = own_models._train_in_blocks(task, cfg, data, blocks, 3, 0, data.victim_pool[40:60])
    assert [r.block for r in curve] == [1, 1, 1, 2, 2, 2]
    assert [r.step for r in curve] == list(range(1, 7))
    assert curve[2].utility_current_block > 0.3  # block 1 was learned while it was current
    m = own_models.memorization(cfg, blocks=2, epochs_per_block=2).to_dict()
    assert [b["block"] for b in m["blocks"]] == [1, 2] and m["block_size"] == 20
    assert own_models.memorization(cfg, blocks=2, epochs_per_block=2).to_dict() == m  # cached
    # built typed, written in the layout it had as a dict (keys in this order; the cache stores these bytes)
    assert list(m) == ["arch", "blocks", "curve", "block_size", "epochs_per_block", "n_eval_per_block", "attack"]
    assert list(m["blocks"][0]) == ["block", "attack_accuracy", "attack_auc", "accuracies", "ape_members",
                                    "ape_non_members"]
    assert list(m["curve"][0]) == ["step", "block", "utility_current_block", "utility_val"]
    typed = own_models.Memorization.from_dict(m)
    assert typed.to_dict() == m and typed.blocks[1].block == 2 and len(typed.curve) == 4


def test_mismatched_shadows_attack_the_same_victim():
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    m = own_models.mismatch(cfg, scales=(0.5, 1.0)).to_dict()
    assert [r["scale"] for r in m["rows"]] == [1.0, 0.5, 1.0] and [r["cnn_width"] for r in m["rows"]] == [16, 8, 16]
    assert list(m) == ["arch", "knob", "rows", "attack"] and list(m["rows"][0]) == ["scale", "cnn_width", "accuracy"]
    typed = own_models.Mismatch.from_dict(m)
    assert typed.to_dict() == m and [r.width for r in typed.rows] == [16, 8, 16]
    matched, half, same = (r["accuracy"] for r in m["rows"])
    # the first row is the run's own attack on this victim (what Train & attack reports) …
    assert matched == {n: a["accuracy"] for n, a in run_experiment(cfg).summary["attacks"].items() if n in matched}
    # … a "mismatch" of scale 1 refits on the very shadows and gives it back, and half-width shadows are
    # other models: another fitted threshold, other decisions
    assert same == matched and half["loss_threshold"] != matched["loss_threshold"]


def test_analyze_cli_writes_csv_and_html(tmp_path, capsys):
    """The command runs in this process (``main``, what ``python -m core`` calls: it trains its tiny runs here,
    without a second torch start); the refusal below goes through a real ``python -m core``."""
    from core.cli.main import main

    sets = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]
    rc = main(["analyze", "--task", "image", *sets, "--analysis", "scatter,vulnerability", "--out", str(tmp_path),
               "--quiet"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    verdicts = unstamped(json.loads(out))
    assert {"rnn_more_vulnerable", "lower_member_entropy", "rnn_more_vulnerable_over_training"} <= set(verdicts)
    # one run: the CLI prints the difference and no verdict
    assert {v["value"] for v in verdicts.values()} == {"inconclusive"}
    assert all(analysis_verdicts.ONE_REPEAT in v["text"] for v in verdicts.values())
    for name in ("scatter", "vulnerability"):
        assert (tmp_path / f"{name}.csv").stat().st_size > 0
        assert "plotly" in (tmp_path / f"{name}.html").read_text()[:4_000_000]
    bad = subprocess.run([sys.executable, "-m", "core", "analyze", "--task", "image", "--analysis", "nope",
                          "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")


def test_analyses_page_on_a_tiny_cached_run(monkeypatch):
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY})
    for arch in ("ffnn", "rnn"):
        run_experiment(task.make_config(arch, "quick"))
    at = AppTest.from_file(str(ROOT / "app_pages" / "4_Analyses.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "The studies:" in text and "This run:" in text
    # one run: the page shows the difference and "inconclusive (one repeat)", never ✅ / ❌ / "does not hold"
    shown = [m.value for m in at.markdown if m.value.startswith("**This run:**")]
    assert shown and all(analysis_verdicts.ONE_REPEAT in t for t in shown)
    assert not any(mark in text for mark in ("✅", "❌", "does not hold", "mixed"))
    # the scatter behind a defense: the naive attacker's boundaries over the defended records
    at.radio(key="analyses:outputs").set_value("Dirichlet k").run(timeout=120)
    assert not at.exception, at.exception
    assert any("attack accuracy" in m.value for m in at.markdown)


def test_defended_summary_keeps_the_naive_boundaries_and_reads_defended_records():
    attack = {"name": "loss_threshold", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {},
              "threshold": -1.0}
    summary = {"arch": "ffnn", "task": "image", "config": {}, "config_hash": "h", "params": 1,
               "utility": {"metric": "accuracy"}, "per_epoch": [], "timings": {}, "attack": attack,
               "attacks": {"loss_threshold": attack},
               "records": {"membership": [True, False], "ape": [0.1, 0.9], "cross_entropy": [0.1, 2.0],
                           "scores": {"loss_threshold": [-0.1, -2.0]},
                           "boundaries": {"loss_threshold": {"signal": "cross_entropy", "threshold": 1.0,
                                                             "member_if": "below"}}}}
    point = {"records": {"membership": [True, False], "ape": [0.5, 0.6], "cross_entropy": [1.5, 1.2],
                         "scores": {"loss_threshold": [-1.5, None], "lira": [0.0, 0.0]}}}
    defended = analysis.defended_summary(RunSummary.from_dict(summary), RunRecords.from_dict(point["records"]))
    assert defended.per_record.cross_entropy == (1.5, 1.2)
    assert defended.per_record.boundaries == summary["records"]["boundaries"]
    assert set(defended.per_record.scores) == {"loss_threshold"}  # only attacks the summary knows
    sc = analysis.entropy_scatter(defended)
    # the member's defended loss 1.5 is above the naive threshold: now taken for a non-member
    assert sc.attacks["loss_threshold"].decision == (False, False)
    with pytest.raises(ConfigError):
        analysis.defended_summary(RunSummary.from_dict(summary),
                                  RunRecords.from_dict({"ape": [], "cross_entropy": [], "membership": []}))


def _arch_pair(make):
    return {"ffnn": make("ffnn"), "rnn": make("rnn")}


def _memorized(first: float) -> own_models.Memorization:
    """A memorization result whose first block is attacked at ``first``."""
    block = own_models.MemorizedBlock(1, first, None, {"shadow": first}, 0.0, 0.0)
    return own_models.Memorization("x", (block,), (), 1, 1, 1, "shadow")


def _mismatched(*accuracies: float) -> own_models.Mismatch:
    """A mismatch result: the shadow attack's accuracy per shadow size (the matched size first)."""
    rows = tuple(own_models.MismatchRow(1.0 / (i + 1), 8, {"shadow": a}) for i, a in enumerate(accuracies))
    return own_models.Mismatch("x", "cnn_width", rows, "shadow")


def _curve(acc_by_epoch: dict[int, float], best: int) -> Vulnerability:
    return Vulnerability.from_dict({"rows": [{"epoch": e, "attack_accuracy": a, "utility_train": 1.0, "utility_val": 0.5}
                                             for e, a in sorted(acc_by_epoch.items())], "best_val_epoch": best})


def _means(members: float, non_members: float) -> Scatter:
    """A scatter with its mean APEs only (no records)."""
    return Scatter(attacks={}, quadrant=Quadrant(accuracy=0.5),
                   mean_ape=MemberMeans(members=members, non_members=non_members))


def _as_json(verdicts: dict) -> dict:
    """The verdicts' JSON by key (what ``analyses.json`` holds)."""
    return {k: v.to_dict() for k, v in verdicts.items()}


def test_each_verdict_is_computed_from_its_own_analysis_only():
    """Feed analyses whose data disagree: each verdict must follow its own analysis' numbers. The
    overtraining tab once showed the vulnerability run's verdict."""
    summaries = {a: typed_run({"arch": a, "attack": {"name": "shadow", "accuracy": acc}})
                 for a, acc in (("ffnn", 0.8), ("rnn", 0.6))}  # runs: RNN lower
    # vulnerability: RNN above FFNN at every checkpoint
    vulnerability = {"ffnn": _curve({2: 0.55, 4: 0.6}, 4), "rnn": _curve({2: 0.7, 4: 0.75}, 4)}
    # overtraining (a longer run): FFNN rises 0.6 → 0.9 past its best epoch, RNN 0.7 → 0.72
    overtraining = {"ffnn": _curve({3: 0.6, 6: 0.8, 12: 0.9}, 3), "rnn": _curve({3: 0.7, 6: 0.71, 12: 0.72}, 3)}
    scatter = {"ffnn": _means(0.1, 0.3), "rnn": _means(0.5, 0.2)}  # RNN members higher: does not hold
    memorization = {"ffnn": _memorized(0.5), "rnn": _memorized(0.7)}
    mismatch = {a: _mismatched(0.8, 0.5) for a in ("ffnn", "rnn")}  # a big drop: does not hold
    results = {"vulnerability": vulnerability, "overtraining": overtraining, "scatter": scatter,
               "memorization": memorization, "mismatch": mismatch}
    v = _as_json(analysis_verdicts.verdicts(results, summaries))
    of = analysis_registry.verdict_keys()
    # one run: every comparison is "inconclusive (one repeat)" with its own analysis' FFNN − RNN difference
    assert {x["value"] for x in v.values()} == {"inconclusive"}
    assert all(analysis_verdicts.ONE_REPEAT in x["text"] for x in v.values())
    assert v[of["runs"]]["difference"] == pytest.approx(0.2)
    assert v[of["vulnerability"]]["difference"] == pytest.approx(-0.15)
    assert v[of["overtraining"]]["difference"] == pytest.approx(0.28) and "+0.300" in v[of["overtraining"]]["text"]
    assert "FFNN" in v[of["scatter"]]["text"] and "RNN" not in v[of["scatter"]]["text"].split("(")[0]
    assert v[of["memorization"]]["difference"] == pytest.approx(-0.2)
    assert v[of["mismatch"]]["difference"] == pytest.approx(0.0) and "+0.300" in v[of["mismatch"]]["text"]
    assert "0.55" not in v[of["memorization"]]["text"] and "0.05" not in v[of["mismatch"]]["text"]  # no uncited cut-offs
    assert len(set(of.values())) == len(of)  # one verdict per analysis: no tab borrows another's
    # flip one analysis' data: only its own verdict moves
    flipped = {**results, "overtraining": {"ffnn": overtraining["rnn"], "rnn": overtraining["ffnn"]}}
    w = _as_json(analysis_verdicts.verdicts(flipped, summaries))
    assert w[of["overtraining"]]["difference"] == pytest.approx(-0.28)
    assert {k: x for k, x in w.items() if k != of["overtraining"]} == \
           {k: x for k, x in v.items() if k != of["overtraining"]}
    # without the overtraining data there is no overtraining verdict (nothing borrowed from vulnerability)
    assert of["overtraining"] not in analysis_verdicts.verdicts({"vulnerability": vulnerability}, summaries)
    assert of["vulnerability"] not in analysis_verdicts.verdicts({"overtraining": overtraining}, summaries)


def test_html_export_of_one_run_shows_differences_and_no_verdict():
    from core.views.report import html_report

    summaries = {a: typed_run({"arch": a, "attack": {"name": "shadow", "accuracy": acc}})
                 for a, acc in (("ffnn", 0.55), ("rnn", 0.75))}
    memorization = {"ffnn": _memorized(0.5), "rnn": _memorized(0.7)}
    page = html_report(AnalysesResults.from_dict(
        {"verdicts": analysis_verdicts.verdicts({"memorization": memorization}, summaries)}), {}, "t")
    assert "inconclusive — final attack accuracy: FFNN 0.550, RNN 0.750, FFNN − RNN -0.200 — inconclusive (one repeat)" \
        in page
    assert "first block attacked at 0.500 (FFNN) vs 0.700 (RNN); FFNN − RNN -0.200" in page
    assert not any(mark in page for mark in ("✅", "❌", "does not hold", "mixed", "holds"))


def test_overtraining_verdict_says_when_no_overtraining_happened():
    still_rising = {"ffnn": _curve({3: 0.6, 6: 0.8}, 6), "rnn": _curve({3: 0.6, 6: 0.7}, 6)}
    v = analysis_verdicts.overtraining_verdict(still_rising)
    assert v.value == "inconclusive" and v.difference is None and "no overtraining" in v.text


def _tagged_verdicts(real):
    """``analysis_verdicts.verdicts`` with each verdict's text prefixed by its own key, so a page test can
    tell which analysis' verdict a tab shows."""
    def verdicts(*args, **kwargs):
        return {key: dataclasses.replace(v, text=f"[{key}] {v.text}") for key, v in real(*args, **kwargs).items()}
    return verdicts


def _shown_verdict_keys(at) -> list[str]:
    """The verdict keys of the "This run:" lines on the page (tagged by ``_tagged_verdicts``)."""
    keys = set(analysis_registry.verdict_keys().values())
    return [k for m in at.markdown if m.value.startswith("**This run:**") for k in keys if f"[{k}]" in m.value]


def test_analyses_page_runs_the_long_analyses_as_worker_jobs_with_their_own_verdicts(monkeypatch):
    """The long analyses are worker jobs (one per architecture); once done, the overtraining tab
    shows the verdict computed from the overtraining runs, not the vulnerability one. Every tab
    shows its own analysis' verdict (its registered ``verdict``) and no other."""
    from ui.shared import job_manager

    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY})
    monkeypatch.setattr(analysis_verdicts, "verdicts", _tagged_verdicts(analysis_verdicts.verdicts))
    for arch in ("ffnn", "rnn"):
        run_experiment(task.make_config(arch, "quick"))
    at = AppTest.from_file(str(ROOT / "app_pages" / "4_Analyses.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    assert _shown_verdict_keys(at) == [analysis_registry.verdict_keys()["scatter"]]  # the open tab: the scatter
    assert not [b for b in at.button if "overtraining" in b.label]  # only the open tab runs
    at.session_state["analyses:tab"] = "Over training"  # what a click on the tab does
    at.run(timeout=120)
    assert _shown_verdict_keys(at) == [analysis_registry.verdict_keys()["vulnerability"]]
    at.session_state["analyses:tab"] = "Overtraining"
    at.run(timeout=120)
    assert _shown_verdict_keys(at) == []  # not computed yet: no verdict borrowed from another analysis
    # the button says how long it takes, from these runs' measured training times
    [button] = [b for b in at.button if b.label.startswith("Run the overtraining analysis (in a worker) — about ")]
    button.click().run(timeout=120)
    assert not at.exception, at.exception
    assert any("Running in a worker" in i.value for i in at.info)
    jobs = [j for j in job_manager().active() if j.kind == "analysis"]
    assert sorted(j.config.arch for j in jobs) == ["ffnn", "rnn"]
    deadline = time.time() + 400
    while not all(j.done for j in jobs) and time.time() < deadline:  # wait for the workers' jobs to end
        time.sleep(0.1)
    assert [j.state for j in jobs] == ["done", "done"], [j.error for j in jobs]
    at.run(timeout=120)
    assert not at.exception, at.exception
    texts = [m.value for m in at.markdown]
    assert _shown_verdict_keys(at) == [analysis_registry.verdict_keys()["overtraining"]], texts
    assert any(t.startswith("**This run:**") and ("the attack accuracy rose by" in t or "no overtraining" in t)
               for t in texts), texts
    assert any("overtraining raises the attack's accuracy a lot for a feed-forward model" in t for t in texts)


def _synthetic_summary(arch: str = "rnn", n: int = 400, seed: int = 0) -> RunSummary:
    """Members confident (low CE, a quarter of them underflowing to 0), non-members less so; a
    shadow attack whose decisions follow CE, and a loss-threshold attack with a real boundary."""
    rng = np.random.default_rng(seed)
    member = np.arange(n) < n // 2
    ce = np.where(member, 10 ** rng.uniform(-6, -1, n), 10 ** rng.uniform(-3, 0.5, n))
    ce[: n // 8] = 0.0  # clipped at the floor (1e-12)
    ape = np.where(member, 10 ** rng.uniform(-5, -1, n), 10 ** rng.uniform(-2, 0, n))
    def attack(name, threshold):
        return {"name": name, "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}, "threshold": threshold}

    # a whole summary (core.experiment.results checks every field it types); the scatter reads the attacks' thresholds
    return RunSummary.from_dict({"arch": arch, "task": "image", "config": {}, "config_hash": arch, "params": 1,
            "utility": {"metric": "accuracy"}, "attack": attack("shadow", 0.5), "per_epoch": [], "timings": {},
            "attacks": {"shadow": attack("shadow", 0.5), "loss_threshold": attack("loss_threshold", -0.01)},
            "records": {"membership": member.tolist(), "ape": ape.tolist(), "cross_entropy": ce.tolist(),
                        "scores": {"shadow": (ce < 1e-2).astype(float).tolist(), "loss_threshold": (-ce).tolist()},
                        "boundaries": {"loss_threshold": {"signal": "cross_entropy", "threshold": 0.01,
                                                          "member_if": "below"}}}})


def test_scatter_flags_clipped_records_and_keeps_boundaries_in_the_records_range():
    sc = analysis.entropy_scatter(_synthetic_summary()).to_dict()  # the layout analyses.json holds
    ly = np.asarray(sc["log10_cross_entropy"])
    clipped = np.asarray(sc["clipped_cross_entropy"])
    assert clipped.sum() == 50 and clipped[:50].all()  # exactly the records at 0 are flagged
    assert not any(sc["clipped_ape"])
    lo, hi = sc["range"]["log10_cross_entropy"]
    # the range is the unclipped records' span: the floor (−12) is not in it
    assert lo == pytest.approx(ly[~clipped].min()) and hi == pytest.approx(ly[~clipped].max()) and lo > -7
    strip = sc["strip"]["log10_cross_entropy"]
    assert lo - 0.1 * (hi - lo) < strip < lo  # just below the records, not at the floor
    # the surrogate's lattice (its shaded region and boundary) spans the strip..top, never −12
    sur = sc["attacks"]["shadow"]["surrogate"]
    assert min(sur["y"]) == pytest.approx(strip) and max(sur["y"]) == pytest.approx(hi)
    assert min(sur["x"]) == pytest.approx(sc["range"]["log10_ape"][0])  # no APE clipped: no strip on x
    assert sur["agreement"] > 0.9  # clipped records fitted on the strip, not 6 decades away
    # the member region is blanked where no record is near: not extrapolated into empty corners
    z = np.asarray(sur["member_probability"], dtype=object)
    assert (z == None).any() and (z != None).any()  # noqa: E711 (element-wise)
    gx, gy = np.asarray(sur["x"]), np.asarray(sur["y"])
    lx = np.where(clipped, strip, ly)
    ax = np.asarray(sc["log10_ape"])
    for i, j in zip(*np.nonzero(z != None)):  # noqa: E711
        d = np.maximum(np.abs(ax - gx[j]) / np.ptp(gx), np.abs(lx - gy[i]) / np.ptp(gy))
        assert d.min() <= sur["reach"] + 1e-9


def test_scatter_figure_draws_populations_clipped_marks_and_clips_shapes_to_the_box():
    from core.views.analysis_figures import SCALES, scatter_figure

    scatters = {a: analysis.entropy_scatter(_synthetic_summary(a, seed=i)) for i, a in enumerate(("ffnn", "rnn"))}
    for scale in SCALES:
        for attack in ("shadow", "loss_threshold"):
            fig = scatter_figure(scatters, attack, scale)
            names = {t.name for t in fig.data}
            assert {"members", "non-members", "density of members", "density of non-members"} <= names
            clipped = [t for t in fig.data if t.name and "clipped" in t.name]
            assert sum(len(t.x) for t in clipped) == 2 * 50  # every clipped record, per panel, marked as such
            assert sum(bool(t.showlegend) for t in clipped) == 1  # listed once, though both panels have some
            # the main panels (row 2, columns 1 and 3), each on its own box
            boxes = {f"x{k}": (fig.layout[f"xaxis{k}"].range, fig.layout[f"yaxis{k}"].range) for k in (5, 7)}
            for t in clipped:
                if scale == "log":  # on the strip inside the box, not at −12
                    assert all(boxes[t.xaxis][1][0] <= v <= boxes[t.xaxis][1][1] for v in t.y)
            for shape in fig.layout.shapes:
                if shape.xref in boxes:
                    bx, by = boxes[shape.xref]
                    assert bx[0] - 1e-9 <= min(shape.x0, shape.x1) and max(shape.x0, shape.x1) <= bx[1] + 1e-9
                    assert by[0] - 1e-9 <= min(shape.y0, shape.y1) and max(shape.y0, shape.y1) <= by[1] + 1e-9
            if attack == "loss_threshold":  # the threshold line is drawn (it lies inside the records' range)
                assert any(s.type == "line" and s.line.dash == "dash" for s in fig.layout.shapes)
    with pytest.raises(ValueError):
        scatter_figure(scatters, "shadow", "sqrt")


def test_record_signals_keep_small_values_to_six_significant_digits():
    """A confident answer's cross-entropy (~3e-6 here) keeps its value: rounding to 6 decimals made
    it 3e-6 (and anything below 5e-7 a 0), rows of records on the scatter's log axes."""
    from core.experiment.pipeline import record_signals

    p = np.float32(1 - 3.3e-6)
    r = Responses.from_probs(np.array([[p, 1 - p], [0.5, 0.5]]), [1, 1], np.array([0, 0]))
    signals = record_signals(r, np.array([True, False]), {})
    expected = float(r.mean_cross_entropy[0])
    assert 1e-6 < expected < 1e-5
    assert signals["cross_entropy"][0] == pytest.approx(expected, rel=1e-5)
    assert signals["ape"][0] == pytest.approx(float(r.ape[0]), rel=1e-5)


def test_long_analyses_time_estimates_scale_the_runs_measured_training():
    """The estimate on a long analysis' button is the run's own training time scaled by the work
    the analysis repeats; none without a measured training time (a run loaded from the cache)."""
    base = {"victim_trained_s": 10.0, "shadows_trained_s": 30.0, "attack_s": 4.0}
    s = typed_run({"timings": base, "config": {"attack_epochs": [2, 5, 10]}})
    mem, over, mis = (analysis.time_estimate(n, s) for n in ("memorization", "overtraining", "mismatch"))
    assert over > 3 * 40.0 and mis > 30.0 and 0 < mem < 40.0
    assert analysis.time_estimate("overtraining", typed_run({"timings": {"victim_trained_s": 20.0, **{
        k: v for k, v in base.items() if k != "victim_trained_s"}}, "config": {"attack_epochs": [2, 5, 10]}})) > over
    assert analysis.time_estimate("memorization", typed_run({"timings": {"total_s": 3.0}, "config": {}})) is None
    lo, hi = analysis.time_range("overtraining", [s, s])
    assert lo == pytest.approx(2 * over * analysis.MEASURED_RATIO["overtraining"][0]) and hi > lo
    assert analysis.time_range("overtraining", [s, typed_run({"timings": {}, "config": {}})]) is None

"""Shadow fidelity, confounding warnings and the matched-utility view (core.experiment.fidelity)."""
from __future__ import annotations

import numpy as np
import pytest

from core.experiment.fidelity import (
    confounding_warnings,
    fidelity_warnings,
    matched_utility,
    response_stats,
    shadow_fidelity,
    utility_gap,
)
from core.experiment.fidelity_results import ShadowFidelity
from core.measurement.responses import Responses
from tests.typed_runs import typed_runs


def summary(arch, train, val, metric="accuracy", per_epoch=None, attacks_by_epoch=None, fidelity=None, epochs=30):
    per_epoch = per_epoch or [{"epoch": epochs, "utility_train": train, "utility_val": val}]
    primary = {"name": "shadow", **attack(0.5)}  # a whole summary (core.experiment.results checks every field it types)
    s = {"task": "image", "arch": arch, "params": 1000, "config": {"epochs": epochs}, "config_hash": arch * 8,
         "data": {"n_classes": 10}, "utility": {"metric": metric, "train": train, "val": val},
         "attack": primary, "attacks": {"shadow": primary}, "timings": {}, "records": {},
         "per_epoch": per_epoch, "attacks_by_epoch": attacks_by_epoch or {}}
    if fidelity is not None:
        s["shadow_fidelity"] = fidelity
    return s


def attack(auc):
    return {"auc": auc, "accuracy": auc, "advantage": 2 * auc - 1, "tpr_at_fpr": {"0.01": auc / 10, "0.001": auc / 100}}


def test_no_warning_for_a_fair_comparison():
    assert confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.93), summary("rnn", 1.0, 0.88)])) == []


def test_warns_when_a_model_did_not_learn():
    w = confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.95), summary("rnn", 0.12, 0.11)]))
    assert any("RNN" in line and "near chance" in line for line in w)
    assert any("confounded" in line for line in w)  # 0.95 vs 0.11 validation accuracy


def test_warns_on_a_validation_gap_in_bleu_points():
    w = confounding_warnings(typed_runs([summary("ffnn", 55.0, 30.0, "bleu"), summary("rnn", 40.0, 12.0, "bleu")]))
    assert len(w) == 1 and "differs by 18" in w[0]
    assert confounding_warnings(typed_runs([summary("ffnn", 55.0, 30.0, "bleu"), summary("rnn", 50.0, 24.0, "bleu")])) == []
    assert utility_gap(typed_runs([summary("ffnn", 55.0, 30.0, "bleu"), summary("rnn", 40.0, 12.0, "bleu")]))["val"] == 18.0


def stats(ml, nl):
    return {"member_loss": ml, "nonmember_loss": nl, "member_top1": 1.0, "nonmember_top1": 0.9}


def test_fidelity_block_and_its_warnings():
    block = shadow_fidelity(
        victim={5: stats(0.5, 1.0), 10: stats(3.12, 4.0)},
        shadows={5: [stats(0.55, 1.1), stats(0.5, 1.0)], 10: [stats(4.24, 4.1), stats(5.10, 4.3)]},
        metric="bleu", victim_utility={"train": 55.0, "val": 20.0},
        shadow_utility=[{"train": 20.0, "val": 5.0}, {"train": 10.0, "val": 4.0}])
    first, last = block.checkpoints
    assert first.member_loss_gap == pytest.approx(0.025 / 0.5)
    assert last.member_loss_gap == pytest.approx((4.67 - 3.12) / 3.12)
    assert block.utility.shadow_mean.to_dict() == {"train": 15.0, "val": 4.5}
    w = block.warnings
    assert len(w) == 2 and w[0].startswith("the shadows' mean member loss is off the victim's by more than 25% at "
                                           "epoch 10 (worst: epoch 10, 4.67 vs 3.12, 50% off)")
    assert "validation bleu" in w[1]
    # near-zero losses are compared against the floor, not "100 % apart"
    tiny = shadow_fidelity({5: stats(0.001, 0.5)}, {5: [stats(0.002, 0.5)]}, "accuracy",
                           {"train": 1.0, "val": 0.9}, [{"train": 1.0, "val": 0.9}])
    assert tiny.warnings == () and tiny.checkpoints[0].member_loss_gap == pytest.approx(0.001 / 0.05)
    # the comparison merges every architecture's loss lines into one warning with advice, and
    # keeps the utility line, labelled by architecture
    w = confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.9, fidelity=block), summary("rnn", 1.0, 0.9, fidelity=block)]))
    tracking = [line for line in w if "do not track" in line]
    assert len(tracking) == 1 and "FFNN member loss at epoch 10" in tracking[0] and "RNN member loss" in tracking[0]
    assert any(line.startswith("FFNN: the shadows' validation bleu") for line in w)
    assert fidelity_warnings(None) == []


def test_tracking_advice_follows_where_the_victim_lies_among_the_shadows():
    """Outside every shadow: more shadows will not help, n_eval is the advice; inside their spread: n_shadows;
    flagged only mid-training: said so (the headline numbers are read at the last epoch)."""
    def block(victim_nl, shadow_nls):
        return shadow_fidelity(victim={10: stats(0.5, victim_nl), 40: stats(0.1, 1.0)},
                               shadows={10: [stats(0.5, x) for x in shadow_nls], 40: [stats(0.1, 1.0)] * len(shadow_nls)},
                               metric="accuracy", victim_utility={"train": 1.0, "val": 0.9},
                               shadow_utility=[{"train": 1.0, "val": 0.9}] * len(shadow_nls))
    outside = confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.9, fidelity=block(1.0, [1.5, 1.6]))]))
    assert len(outside) == 1 and "outside every shadow" in outside[0] and "raise n_eval" in outside[0]
    assert "FFNN is flagged only before the last epoch" in outside[0]
    inside = confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.9, fidelity=block(1.0, [0.4, 2.6]))]))
    assert "within the shadows' own spread" in inside[0] and "raise n_shadows" in inside[0]
    assert "raise n_eval" not in inside[0]
    assert confounding_warnings(typed_runs([summary("ffnn", 1.0, 0.9, fidelity=block(1.0, [1.0, 1.05]))])) == []


def test_response_stats():
    # member answers 0.9, non-member 0.4 (rank 1 when the other class has 0.6)
    r = Responses.from_probs(np.array([[0.9, 0.1], [0.4, 0.6]]), [1, 1], np.array([0, 0]))
    s = response_stats(r, np.array([True, False]))
    assert s["member_loss"] == pytest.approx(-np.log(0.9), rel=1e-5)
    assert s["nonmember_loss"] == pytest.approx(-np.log(0.4), rel=1e-5)
    assert (s["member_top1"], s["nonmember_top1"]) == (1.0, 0.0)


def test_matched_utility_picks_the_closest_checkpoint():
    ffnn = summary("ffnn", 1.0, 0.95, per_epoch=[
        {"epoch": e, "utility_train": 1.0, "utility_val": v} for e, v in ((5, 0.70), (10, 0.86), (20, 0.92), (30, 0.95))],
        attacks_by_epoch={"5": {"shadow": attack(0.55)}, "10": {"shadow": attack(0.60)},
                          "30": {"shadow": attack(0.75), "lira": attack(0.80)}})
    rnn = summary("rnn", 1.0, 0.85, per_epoch=[
        {"epoch": e, "utility_train": 1.0, "utility_val": v} for e, v in ((5, 0.5), (10, 0.8), (30, 0.85))],
        attacks_by_epoch={"5": {"shadow": attack(0.52)}, "10": {"shadow": attack(0.70)},
                          "30": {"shadow": attack(0.72), "lira": attack(0.78)}})
    view = matched_utility(typed_runs([ffnn, rnn]))
    first, second = view.pairs
    # FFNN's checkpoint closest to the RNN's final 0.85: epoch 10 (0.86; epoch 20 has no attack results)
    assert first.matched.arch == "ffnn" and first.matched.epoch == 10
    assert first.utility_gap == pytest.approx(0.01) and first.within_tolerance
    assert first.more_leaky == {"shadow": "rnn"}  # LiRA ran at the final epoch only
    # RNN's checkpoint closest to the FFNN's final 0.95: its final epoch
    assert second.matched.epoch == 30 and second.more_leaky == {"lira": "ffnn", "shadow": "ffnn"}
    # each side carries the attacks fitted at its epoch, typed
    assert first.matched.attacks["shadow"].auc == 0.60 and set(first.reference.attacks) == {"shadow", "lira"}
    assert matched_utility(typed_runs([ffnn])) is None


TINY = dict(n_train=40, n_eval=20, epochs=3, attack_epochs=(2,), n_shadows=2, attack_train_epochs=5, batch_size=20)


def test_summary_holds_the_shadow_fidelity_block():
    from core.experiment.pipeline import run_experiment
    from core.tasks import get_task

    cfg = get_task("image").make_config("rnn", "quick", TINY)
    summary = run_experiment(cfg).summary
    block = summary["shadow_fidelity"]
    assert [c["epoch"] for c in block["checkpoints"]] == [2, 3]
    for c in block["checkpoints"]:
        assert set(c) == {"epoch", "victim", "shadows", "shadow_each", "member_loss_gap", "nonmember_loss_gap"}
        assert set(c["victim"]) == {"member_loss", "nonmember_loss", "member_top1", "nonmember_top1"}
        assert len(c["shadow_each"]) == 2
        assert _gaps_recomputed(c) == (c["member_loss_gap"], c["nonmember_loss_gap"])
        assert c["member_loss_gap"] * 1.01 != _gaps_recomputed(c)[0]  # a gap 1 % off is noticed
    # the final checkpoint's victim losses are the mean cross-entropy of the stored per-record answers
    # (stored to 6 significant digits), of the members and of the non-members
    y = np.asarray(summary["records"]["membership"], bool)
    ce = np.asarray(summary["records"]["cross_entropy"], np.float64)
    final = block["checkpoints"][-1]["victim"]
    assert final["member_loss"] == pytest.approx(ce[y].mean(), rel=1e-5)
    assert final["nonmember_loss"] == pytest.approx(ce[~y].mean(), rel=1e-5)
    assert abs(ce[y].mean() - ce[~y].mean()) > 1e-3 * ce.mean()  # the two differ: a swap would fail above
    u = block["utility"]
    assert u["metric"] == "accuracy" and len(u["shadows"]) == 2 and set(u["shadow_mean"]) == {"train", "val"}
    assert u["victim"] == {"train": summary["per_epoch"][-1]["utility_train"], "val": summary["utility"]["val"]}
    for part in ("train", "val"):
        assert u["shadow_mean"][part] == pytest.approx(np.mean([s[part] for s in u["shadows"]]), abs=1e-12)
    # each shadow's train accuracy is read on its first n_eval in-records: a whole number of them (float32)
    assert all(round(s["train"] * cfg.n_eval) == pytest.approx(s["train"] * cfg.n_eval, abs=1e-5) for s in u["shadows"])
    assert block["warnings"] == fidelity_warnings(ShadowFidelity.from_dict(block))


def _gaps_recomputed(c: dict) -> tuple[float, float]:
    """(member, non-member) loss gap of a stored checkpoint from its stored numbers: the shadows' mean of
    each shadow's loss, against the victim's, relative to max(|victim|, LOSS_FLOOR); asserts the stored
    shadow means are those means."""
    from core.experiment.fidelity import LOSS_FLOOR

    gaps = []
    for who in ("member_loss", "nonmember_loss"):
        mean = float(np.mean([s[who] for s in c["shadow_each"]]))
        assert c["shadows"][who] == pytest.approx(mean, abs=1e-12)
        victim = c["victim"][who]
        gaps.append(pytest.approx(abs(mean - victim) / max(abs(victim), LOSS_FLOOR), rel=1e-9))
    return tuple(gaps)


def test_plot_helpers_for_the_page():
    from core.views.comparison_tables import matched_utility_table, shadow_fidelity_table, strongest_attacks_table
    from core.views.run_figures import roc_loglog

    block = shadow_fidelity({10: stats(0.2, 1.0)}, {10: [stats(0.3, 1.0)]}, "accuracy",
                            {"train": 1.0, "val": 0.9}, [{"train": 1.0, "val": 0.8}])
    roc = dict(roc_fpr=[0.0, 0.004, 0.5, 1.0], roc_tpr=[0.0, 0.2, 0.9, 1.0], n_members=250, n_nonmembers=250)
    ffnn = summary("ffnn", 1.0, 0.9, fidelity=block, epochs=10,
                   per_epoch=[{"epoch": 5, "utility_val": 0.7}, {"epoch": 10, "utility_val": 0.9}],
                   attacks_by_epoch={"5": {"shadow": attack(0.6)}, "10": {"shadow": attack(0.7), "lira": attack(0.8)}})
    rnn = summary("rnn", 1.0, 0.72, epochs=10, per_epoch=[{"epoch": 5, "utility_val": 0.5}, {"epoch": 10, "utility_val": 0.72}],
                  attacks_by_epoch={"5": {"shadow": attack(0.55)}, "10": {"shadow": attack(0.75), "lira": attack(0.85)}})
    for s in (ffnn, rnn):
        s["attacks"] = {n: {**a, **roc} for n, a in s["attacks_by_epoch"]["10"].items()}
        s["attack"] = {"name": "shadow", **attack(0.5)}
    fig = roc_loglog(typed_runs([ffnn, rnn]))
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    # drawn only down to FPR = 1/n (250 non-members), the floor marked; FPR 0 is not drawn as if measured
    assert min(min(t.x) for t in fig.data[:-1]) == pytest.approx(1 / 250)
    assert [sh.x0 for sh in fig.layout.shapes] == [pytest.approx(1 / 250)]
    table = shadow_fidelity_table(typed_runs([ffnn, rnn]))
    assert list(table["epoch"]) == ["10", "final utility"] and table["tracks the victim"][0] == "no"
    pa = pytest.importorskip("pyarrow")
    pa.Table.from_pandas(table)  # one type per column: Streamlit sends it as it is (no fallback on each rerun)
    m = matched_utility_table(matched_utility(typed_runs([ffnn, rnn])))
    assert list(m["epoch"]) == [5, 10, 10, 10]  # FFNN@5 (0.7) matches RNN's final 0.72
    assert m["leaks more (AUC)"][0] == "shadow model: RNN"
    assert m["leaks more (AUC)"][2].startswith("no fair match")  # no RNN checkpoint reaches the FFNN's 0.9
    assert len(strongest_attacks_table(typed_runs([ffnn, rnn]))) == 4


def test_study_comparison_is_computed_from_the_runs():
    from core.experiment.fidelity import study_comparison

    def run(arch, acc, train, val):
        s = summary(arch, train, val)
        s["attack"]["accuracy"] = acc
        return s

    c = study_comparison(typed_runs([run("ffnn", 0.60, 1.0, 0.90), run("rnn", 0.70, 0.95, 0.88)]))
    assert c.holds is True and c.fair is True and "CIFAR-10" in c.finding
    assert c.generalization_gap["ffnn"] == pytest.approx(0.10)
    c = study_comparison(typed_runs([run("ffnn", 0.75, 1.0, 0.95), run("rnn", 0.70, 1.0, 0.60)]))
    assert c.holds is False and c.fair is False and "matched utility" in c.text
    assert study_comparison(typed_runs([run("ffnn", 0.6, 1, 0.9)])) is None  # needs one run of each architecture

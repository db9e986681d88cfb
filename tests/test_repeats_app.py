"""The app with repeats: Train & attack offers the missing repeats, then shows means with intervals,
the paired differences and the three-valued verdicts; the HTML report shows them too."""
from pathlib import Path

import pytest
from apptest_fields import set_fields
from streamlit.testing.v1 import AppTest

from core.analyses.matching import run_matched
from core.analyses.repeats import comparison_configs, repeat_configs, run_comparison
from core.experiment.pipeline import run_experiment
from core.experiment.results import RunSummary
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/1_Train_and_attack.py"
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)
WIDGETS = {**TINY, "attack_epochs": "1", "repeats": 2}


def open_page(widgets_set: dict | None = None):
    """The Train & attack page with the form's fields set (default: the tiny ``WIDGETS``)."""
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page(PAGE)
    at.run(timeout=60)
    set_fields(at, "image:quick", WIDGETS if widgets_set is None else widgets_set)
    at.run(timeout=120)
    assert not at.exception, at.exception
    return at


def test_page_offers_missing_repeats_then_shows_verdicts():
    configs = comparison_configs("image", "quick", 2, TINY)
    for c in configs.values():  # repeat 0 only
        run_experiment(repeat_configs(c)[0])
    at = open_page()
    assert any(b.label.startswith("Train the 2 missing repeat") for b in at.button)
    assert any("Repeats" in m.value for m in at.markdown)
    run_comparison(configs)  # the missing repeats, as the job queue would train them
    at = open_page()
    assert any(s.value == "FFNN vs RNN over 2 paired repeats" for s in at.subheader)
    text = " ".join(m.value for m in at.markdown)
    assert "attack accuracy" in text and "N = 2" in text
    assert any(v in text for v in ("holds", "reversed", "inconclusive"))
    assert not any(b.label.startswith("Train the") for b in at.button)
    # the resolution beside the paired comparison too, not only under the attack table
    assert sum("Resolution — " in c.value for c in at.caption) >= 2


def test_report_shows_the_paired_comparison(tiny_image_runs, monkeypatch):
    """On the shared two tiny repeats (tests/shared_runs.py: the same config as ``TINY``), read from the cache."""
    from core.experiment import roles
    from core.views.report import run_report_html as report_html
    from ui.results import repeats_view

    tiny_image_runs(2)
    # every training, one by one or as an ensemble, records its epochs: none may start here
    monkeypatch.setattr(roles.EpochRecorder, "__init__", lambda *a, **k: pytest.fail("trained: the shared runs are "
                                                                                     "not this test's config"))
    configs = comparison_configs("image", "quick", 2, TINY)
    run_comparison(configs)  # all cached: reads them
    runs = {a: [RunSummary.from_dict(run_experiment(c).summary) for c in repeat_configs(cfg)]
            for a, cfg in configs.items()}
    view = repeats_view(runs)
    page = report_html([runs["ffnn"][0], runs["rnn"][0]], list(configs.values()), {}, None, view)
    assert "FFNN vs RNN over 2 paired repeats" in page and "FFNN − RNN [95% CI]" in page
    assert "sign flip" in page and "verdicts over 2 paired repeats" in page
    # one primary metric carries the headline (one shadow: no LiRA or RMIA, so the shadow attack's AUC), the
    # others are secondary with Holm-adjusted p-values; 20 non-members: TPR @ 0.1 % is the TPR at 0 false positives
    assert "Primary — attack AUC" in page and "Holm-adjusted over" in page and "p (sign flip, Holm)" in page
    assert "TPR at 0 false positives (FPR &lt; 1/20)" in page
    assert "<th>TPR @ 0.1% FPR</th>" not in page and "<td>TPR @ 0.1% FPR</td>" not in page  # no column or row says 0.1 %
    assert page.count("one image = 0.05 of TPR") == 4  # under the attacks and under the comparison, per arch
    single = report_html([runs["ffnn"][0], runs["rnn"][0]], list(configs.values()), {})
    assert "inconclusive with one repeat per architecture" in single and "paired repeats" not in single
    assert single.count("one image = 0.05 of TPR") == 2


def test_home_demo_offers_repeats_beside_its_result_then_shows_the_verdict(monkeypatch):
    # the demo is the image quick preset: made tiny here (the page builds its configs from the preset)
    task = get_task("image")
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})
    demo = [task.make_config(a, "quick") for a in ("ffnn", "rnn")]
    for c in demo:
        run_experiment(c)
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=60)
    assert not at.exception, at.exception
    # the button offers the N at which the answer can decide at all (the Holm family's sign-flip floor)
    from core.analyses.answer import cached_answer

    floor = cached_answer("image", "quick").decidable_at
    assert floor >= 6 and any(b.label.startswith(f"➕ Run to N = {floor} repeats ({2 * (floor - 1)} runs")
                              for b in at.button)
    run_comparison({c.arch: c.with_updates({"repeats": 3}) for c in demo})
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=60)
    text = " ".join(m.value for m in at.markdown)
    assert "3 paired repeats cached" in text and "N = 3" in text
    # N = 3 cannot decide: the button still asks for the missing repeats up to the floor, never a fixed two more
    assert not any(b.label.startswith("➕ Add") for b in at.button)
    assert any(b.label.startswith(f"➕ Run to N = {floor} repeats ({2 * (floor - 3)} runs") for b in at.button)


def test_page_shows_where_each_architecture_reached_the_matched_utility():
    learning = dict(n_train=150, n_eval=40, epochs=6, n_shadows=1, attack_epochs=(), attack_train_epochs=3)
    configs = {a: c.with_updates({"match_utility": "lower"})
               for a, c in comparison_configs("image", "quick", 1, learning).items()}
    out = run_matched(configs)  # what the page's job queue would train
    at = open_page({**learning, "attack_epochs": "", "match_utility": "lower"})
    assert any(s.value == "At matched utility (by construction)" for s in at.subheader)
    table = [d.value for d in at.dataframe if "stopped at epoch" in d.value.columns][0]
    epochs = {r["architecture"]: r["stopped at epoch"] for _, r in table.iterrows()}
    assert epochs == {"FFNN": out["repeats"][0]["ffnn"]["epoch"], "RNN": out["repeats"][0]["rnn"]["epoch"]}

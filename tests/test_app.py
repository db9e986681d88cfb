"""Streamlit AppTest: each page renders, and the button trains and attacks a tiny config of each task."""
import time
from pathlib import Path

import pytest
from apptest_fields import set_field
from streamlit.testing.v1 import AppTest

from core.tasks import available_tasks, get_task
from ui.nav import page_files

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/1_Train_and_attack.py"


def train_page():
    """The Train & attack page, reached from the entry script as a user does."""
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page(PAGE)
    return at

TINY = {
    "image": {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 1, "attack_epochs": "1", "attack_train_epochs": 3},
    "translation": {"n_train": 24, "n_eval": 8, "epochs": 1, "n_shadows": 1, "attack_epochs": "", "attack_train_epochs": 2},
    "navigation": {"n_train": 2, "n_eval": 2, "epochs": 1, "n_shadows": 1, "attack_epochs": "", "attack_train_epochs": 2,
                   "frames": 2048},
    "tabular": {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 1, "attack_epochs": "", "attack_train_epochs": 3},
}
#: the sizes every task's config has; a task registered without an entry above is tried with these
TINY_DEFAULT = {"n_train": 40, "n_eval": 20, "epochs": 1, "n_shadows": 1, "attack_epochs": "", "attack_train_epochs": 2}


def tiny(task: str) -> dict:
    """The tiny settings of ``task``: its own entry in TINY, else the sizes every config has (a new
    built-in task runs with those; give it an entry when it has size fields of its own, like frames)."""
    return TINY.get(task, TINY_DEFAULT)


def test_home_page_renders():
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=30)
    assert not at.exception
    assert "MIA Explorer" in at.title[0].value
    assert any("Membership inference attacks" in m.value for m in at.markdown)
    assert any(b.label == "▶ Run the image demo" for b in at.button)  # nothing cached: one click trains it


@pytest.mark.parametrize("page", page_files())
def test_every_registered_page_renders(page):
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page(page)
    at.run(timeout=60)
    assert not at.exception, at.exception
    assert at.title, "every page has a title"


def test_pages_are_registered_only_when_their_file_exists():
    from ui.nav import PAGES

    files = page_files()
    assert files[:4] == ["app_pages/0_Home.py", "app_pages/1_Train_and_attack.py", "app_pages/6_Your_model.py",
                         "app_pages/2_Defenses.py"]
    for f, *_ in PAGES:
        assert (f in files) == (ROOT / f).is_file()


def test_a_task_link_opens_that_task():
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.query_params["task"] = "navigation"
    at.switch_page(PAGE)
    at.run(timeout=60)
    assert not at.exception
    assert at.selectbox(key="train:task").value == "navigation"
    at.selectbox(key="train:task").set_value("translation").run(timeout=60)
    assert at.query_params["task"] in ("translation", ["translation"])  # the address bar links to what is shown


def open_page(task, values):
    at = train_page().run(timeout=60)
    assert not at.exception
    if task != "image":
        at.selectbox[0].set_value(task).run(timeout=60)
    for name, value in values.items():
        set_field(at, f"{task}:quick", name, value)
    at.run(timeout=60)
    assert not at.exception, at.exception
    return at


def run_until(at, predicate, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        at.run(timeout=60)
        assert not at.exception, at.exception
        if predicate(at):
            return at
        time.sleep(0.5)
    raise AssertionError(f"page did not reach the expected state in time; errors: {[e.value for e in at.error]}")


def has_results(at):
    """Every selected architecture's results are shown (partial results say what is still to come)."""
    return any(s.value == "Overview" for s in at.subheader) and not any("still to come" in c.value for c in at.caption)


@pytest.mark.parametrize("task", available_tasks())
def test_train_page_runs_a_tiny_config_then_loads_it_from_cache(task, monkeypatch):
    at = open_page(task, tiny(task))
    [b for b in at.button if b.label == "Train & attack"][0].click()  # trains in the job queue's worker
    run_until(at, has_results)
    assert not at.error
    assert "Parameter counts differ by" in " ".join(c.value for c in at.caption)
    # the results' tabs: only the open one runs (the first: over training), another on its click
    assert not any(s.value == "Attacks" for s in at.subheader) and at.get("plotly_chart")
    at.session_state["train:results_tab"] = "Attacks"  # what a click on the tab does
    at.run(timeout=60)
    assert not at.exception, at.exception
    assert any(s.value == "Attacks" for s in at.subheader) and len(at.dataframe) >= 2
    # second visit with the same settings: straight from the cache, no button to press and nothing queued
    # (how fast a cached open is, is measured by bench/page_cpu.py's warm opens, not asserted here)
    from core.jobs.manager import JobManager
    queued = []
    submit = JobManager.submit
    monkeypatch.setattr(JobManager, "submit", lambda self, configs, *a, **k: (
        queued.extend(configs := list(configs)), submit(self, configs, *a, **k))[1])
    again = open_page(task, tiny(task))
    assert has_results(again)
    assert not [b for b in again.button if b.label == "Train & attack"]
    assert not any("Not in the cache yet" in i.value for i in again.info)
    assert queued == [], "the cached visit queued training"


def test_report_is_one_self_contained_html_file():
    from core.experiment.pipeline import run_experiment
    from core.experiment.results import RunSummary
    from core.views.report import run_report_html as report_html

    task = get_task("image")
    values = {**TINY["image"], "attack_epochs": ()}
    summaries = [RunSummary.from_dict(run_experiment(task.make_config(a, "quick", values)).summary)
                 for a in ("ffnn", "rnn")]
    page = report_html(summaries, [task.make_config(a, "quick", values) for a in ("ffnn", "rnn")],
                       {a: values for a in ("ffnn", "rnn")})
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("Plotly.newPlot") >= 4  # the figures
    assert "src=\"http" not in page and "src='http" not in page  # plotly.js embedded: opens offline
    assert summaries[0].config_hash in page and "python -m core run --task image --arch rnn" in page
    assert "Shadow-model classifier" in page  # the attack table


def test_invalid_setting_shows_a_clear_message():
    at = open_page("image", {"lr": -1.0})
    assert any("lr must be a positive number" in e.value for e in at.error)


def test_missing_dataset_folder_is_reported(monkeypatch):
    monkeypatch.setenv("MIA_DATA_ROOT", "/")  # the folder is inside the data root, it just does not exist
    at = train_page().run(timeout=60)
    at.selectbox(key="image:quick:dataset").set_value("cifar10").run(timeout=60)
    # the preset's note speaks of the dataset chosen, not of the built-in digits
    assert not any("8×8 digits" in i.value for i in at.info)
    assert any("on **cifar10**" in i.value for i in at.info)
    at.text_input(key="image:quick:data_dir").set_value("/nonexistent/cifar")
    at.run(timeout=60)
    # said before any training, with Train disabled (it was said only after a worker failed on it)
    assert any("not found" in w.value for w in at.warning)
    assert [b for b in at.button if b.label == "Train & attack"][0].disabled
    # a folder that exists but lacks the batches is said too
    at.text_input(key="image:quick:data_dir").set_value(str(ROOT / "docs")).run(timeout=60)
    assert any("lacks data_batch_1" in w.value for w in at.warning)


def test_multi30k_folder_without_files_is_explained_with_a_download_offer(tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_DATA_ROOT", str(tmp_path))
    at = train_page().run(timeout=60)
    at.selectbox[0].set_value("translation").run(timeout=60)
    at.selectbox(key="translation:quick:dataset").set_value("multi30k").run(timeout=60)
    assert any("local folder" in w.value for w in at.warning)
    at.text_input(key="translation:quick:data_dir").set_value(str(tmp_path / "m30k")).run(timeout=60)
    assert not at.exception
    assert any("lacks train.en.gz, train.de.gz" in w.value for w in at.warning)
    assert any(b.label.startswith("Download Multi30K") for b in at.button)
    assert not any(b.label == "Train & attack" for b in at.button)


def test_defenses_page_offers_training_then_moves_with_the_slider(monkeypatch):
    """Without cached models the page says which run to start; with them, the slider changes the numbers."""
    from core.experiment.pipeline import run_experiment

    tiny = {"n_train": 60, "n_eval": 30, "epochs": 8, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 10}
    task = get_task("image")
    quick = {"ffnn": task.presets["quick"], "rnn": task.presets["quick"]}
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=60)
    assert not at.exception
    assert any("not in the cache yet" in i.value for i in at.info)
    # train a tiny run of both architectures into the (isolated) cache, then let the page use it
    monkeypatch.setitem(task.presets, "quick", {**quick["ffnn"], **tiny, "rnn": {"lr": 1e-2}})
    for arch in ("ffnn", "rnn"):
        run_experiment(task.make_config(arch, "quick"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    before = [m.value for m in at.metric]
    assert any(m.label == "attack accuracy" for m in at.metric)
    at.select_slider(key="k:image").set_value(0.01).run(timeout=120)
    assert not at.exception, at.exception
    after = [m.value for m in at.metric]
    assert after != before
    assert any(m.label == "utility loss" for m in at.metric)
    # the slider's point leaves quantile regression out, and the page says where its number is
    assert any(c.value.startswith("Quantile regression is not computed at the slider's point") and "Measure" in c.value
               for c in at.caption)
    # before "Measure", the table holds the curve's attack numbers and says "not measured" for utility
    table = at.dataframe[0].value
    ours = table[table["source"].str.startswith("ours")]
    assert ours["attack acc (naive)"].notna().all() and (ours["utility"] == "not measured").any()
    assert not table.isin(["None", "nan"]).any().any()
    assert any("not measured" in c.value for c in at.caption)


def test_training_defenses_page_remembers_the_defense_across_pages():
    """Streamlit drops a page's widget state on a visit to another page: the defense picked last is
    put back (ui.widgets.remembered), not the default."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run()
    [r for r in at.radio if r.label == "Defense"][0].set_value("l2").run()
    at.switch_page("app_pages/0_Home.py")
    at.run()
    at.switch_page("app_pages/3_Training_defenses.py")
    at.run()
    assert not at.exception, at.exception
    assert [r for r in at.radio if r.label == "Defense"][0].value == "l2"


def test_defenses_page_with_models_gone_says_not_cached_and_trains_nothing(monkeypatch):
    """A run whose summary is cached but whose model is not: the page says so in one line (ui.shared.defender_for
    reads through core.experiment.pipeline.load_models) and no training starts in the server."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import run_experiment

    tiny = {"n_train": 30, "n_eval": 10, "epochs": 2, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 3}
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **tiny})
    for arch in ("ffnn", "rnn"):
        run_experiment(task.make_config(arch, "quick"))
    cache = ArtifactCache()
    cache.discard(cache.key("model", task.make_config("rnn", "quick").training_hash, "victim", "weights"), "test")

    def refuse(*args, **kwargs):
        raise AssertionError("a page trained a model")

    monkeypatch.setattr(type(task), "train", refuse)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith("Could not load the trained models:") and "victim model" in e and "not cached" in e
               for e in errors), errors


def test_defenses_measure_runs_in_a_worker_and_the_table_fills_in(monkeypatch):
    """"Measure" submits the grid as worker jobs (kind ``defense_grid``): the server never measures it (its
    Defender.full_points fails here), and the table reads each point from the cache as it lands."""
    from core.defenses.defender import Defender
    from core.experiment.pipeline import run_experiment

    tiny = {"n_train": 30, "n_eval": 10, "epochs": 2, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 3}
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **tiny})
    for arch in ("ffnn", "rnn"):
        run_experiment(task.make_config(arch, "quick"))

    def refuse(*args, **kwargs):
        raise AssertionError("the server measured the grid")

    monkeypatch.setattr(Defender, "full_points", refuse)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    [b for b in at.button if b.label.startswith("Measure ")][0].click().run(timeout=120)
    assert not at.exception, at.exception

    def measured(at):
        table = at.dataframe[0].value
        ours = table[table["source"].str.startswith("ours")]
        return not (ours["utility"] == "not measured").any()

    def offered_again(at):
        return [b for b in at.button if b.label.startswith("Measure ")]

    # the table fills in as each point lands in the cache, a moment before the job manager reports the jobs
    # done: wait for both events (asserting the button at the table's event raced the manager's status)
    run_until(at, lambda at: measured(at) and bool(offered_again(at)))
    assert not at.error, [e.value for e in at.error]
    assert measured(at) and offered_again(at)  # measured, and offered again once the jobs are done

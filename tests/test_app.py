"""Streamlit AppTest: each page renders, and the button trains and attacks a tiny config."""
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "pages" / "1_Train_and_attack.py")


def test_home_page_renders():
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=30)
    assert not at.exception
    assert "MIA Explorer" in at.title[0].value
    assert any("Membership inference attacks" in m.value for m in at.markdown)


def set_number(at, label, value):
    [w for w in at.number_input if w.label == label][0].set_value(value)


def run_until(at, predicate, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        at.run(timeout=60)
        assert not at.exception, at.exception
        if predicate(at):
            return at
        time.sleep(0.5)
    raise AssertionError("page did not reach the expected state in time")


def test_train_page_runs_a_tiny_image_config_then_loads_it_from_cache():
    at = AppTest.from_file(PAGE).run(timeout=60)
    assert not at.exception
    for label, value in (("n train", 40), ("n eval", 20), ("epochs", 2), ("n shadows", 1)):
        set_number(at, label, value)
    at.text_input(key="image:quick:attack_epochs").set_value("1")
    at.number_input(key="image:quick:attack_train_epochs").set_value(3)
    at.run(timeout=60)
    assert not at.exception
    assert any(b.label == "Train & attack" for b in at.button)
    [b for b in at.button if b.label == "Train & attack"][0].click()
    run_until(at, lambda a: any(s.value == "Attacks" for s in a.subheader))
    texts = " ".join(c.value for c in at.caption)
    assert "Parameter counts differ by" in texts
    assert len(at.dataframe) >= 2
    # second visit: straight from the cache, no button
    again = AppTest.from_file(PAGE)
    again.session_state  # noqa: B018
    at2 = again.run(timeout=60)
    for label, value in (("n train", 40), ("n eval", 20), ("epochs", 2), ("n shadows", 1)):
        set_number(at2, label, value)
    at2.text_input(key="image:quick:attack_epochs").set_value("1")
    at2.number_input(key="image:quick:attack_train_epochs").set_value(3)
    t = time.time()
    at2.run(timeout=60)
    assert any(s.value == "Attacks" for s in at2.subheader)
    assert time.time() - t < 10


def test_invalid_setting_shows_a_clear_message():
    at = AppTest.from_file(PAGE).run(timeout=60)
    set_number(at, "lr (RNN)", -1.0)
    at.run(timeout=60)
    assert not at.exception
    assert any("lr must be a positive number" in e.value for e in at.error)


def test_missing_dataset_folder_is_reported():
    at = AppTest.from_file(PAGE).run(timeout=60)
    at.selectbox(key="image:quick:dataset").set_value("cifar10")
    at.text_input(key="image:quick:data_dir").set_value("/nonexistent/cifar")
    at.run(timeout=60)
    [b for b in at.button if b.label == "Train & attack"][0].click()
    run_until(at, lambda a: any("not found" in e.value for e in a.error), timeout=60)

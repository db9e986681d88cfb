"""The real-data CPU presets: their configs, matched parameter counts on small fixtures,
the translation vocabulary cap, the evaluation set's resolution, and the GPU check's dry run."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from core.analyses.comparison_results import ComparisonResult
from core.data.translation_records import SPECIALS, Vocab
from core.models.translation import LuongSeq2Seq, TransformerSeq2Seq, match_transformer
from core.tasks import get_task
from core.tasks.base import PRESET_TIMES
from core.views.run_figures import comparison_resolution_note, resolution_note
from tests.conftest import cpu_has_bf16_lstm
from tests.test_image import write_cifar_fixture
from tests.typed_runs import typed_run, typed_runs

ROOT = Path(__file__).resolve().parent.parent

#: task -> (preset, real dataset); every real-data preset must appear here
REAL_PRESETS = {"image": ("cifar_cpu", "cifar10"), "translation": ("multi30k_cpu", "multi30k")}
#: the tasks that ship with the explorer: every preset of theirs has a row in docs/results.md's "Preset times"
BUILT_IN_TASKS = ("image", "translation", "navigation", "tabular")
#: a measured figure a note must not carry (it ages with the machine and the commit): seconds, minutes, hours, a
#: CPU-seconds count, a date, a GPU model
NOTE_FIGURE = re.compile(r"\d ?(s|min|h)\b|CPU s\b|\b20\d\d-\d\d-\d\d\b|\b[HA]100\b")


def preset_times_rows() -> dict[tuple[str, str], str]:
    """(task, preset) -> its row of the "Preset times" table in the file and section :data:`PRESET_TIMES` names."""
    path, anchor = PRESET_TIMES.split("#")
    text = (ROOT / path).read_text()
    heading = next(line for line in text.splitlines()
                   if line.startswith("## ") and re.sub(r"[^a-z0-9 -]", "", line[3:].lower()).replace(" ", "-") == anchor)
    section = text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (\w+) · `(\w+)` \|", line)
        if m:
            rows[(m.group(1), m.group(2))] = line
    return rows

_EN = ["a man in a blue shirt is standing on a ladder .", "two dogs play in the grass .",
       "a woman is reading a book in the park .", "children are running on the beach .",
       "a boy jumps into the water .", "an old man sits on a bench ."]
_DE = ["ein mann in einem blauen hemd steht auf einer leiter .", "zwei hunde spielen im gras .",
       "eine frau liest ein buch im park .", "kinder laufen am strand .",
       "ein junge springt ins wasser .", "ein alter mann sitzt auf einer bank ."]


def write_multi30k_fixture(folder: Path, n: int = 120) -> Path:
    """train.en.gz / train.de.gz of ``n`` pairs varied by a number word (Multi30K's raw layout)."""
    folder.mkdir(parents=True, exist_ok=True)
    for lang, lines in (("en", _EN), ("de", _DE)):
        text = "".join(f"{lines[i % len(lines)]} {i}\n" for i in range(n))
        with gzip.open(folder / f"train.{lang}.gz", "wt", encoding="utf-8") as fh:
            fh.write(text)
    return folder


def _fixture_overrides(task_name: str, tmp_path: Path) -> dict:
    if task_name == "image":
        write_cifar_fixture(tmp_path / "cifar", per_batch=40)
        return {"data_dir": str(tmp_path / "cifar"), "n_train": 40, "n_eval": 20}
    return {"data_dir": str(write_multi30k_fixture(tmp_path / "m30k")), "n_train": 40, "n_eval": 20}


@pytest.mark.parametrize("task_name", sorted(REAL_PRESETS))
def test_real_preset_reads_its_dataset_and_matches_parameter_counts(task_name, tmp_path):
    """Each real-data preset names its dataset, says what it needs and how long it takes, and builds
    FFNN and RNN within 5 % of each other's parameter count on a small fixture of its data."""
    task = get_task(task_name)
    preset, dataset = REAL_PRESETS[task_name]
    assert preset in task.presets and dataset in task.real_datasets
    note = task.preset_notes[preset]
    assert "data_dir" in note and PRESET_TIMES in note  # what it needs, and where its measured times are
    overrides = _fixture_overrides(task_name, tmp_path)
    counts = {}
    for arch in ("ffnn", "rnn"):
        cfg = task.make_config(arch, preset, overrides)
        assert cfg.dataset == dataset and cfg.preset == preset
        counts[arch] = task.param_count(task.build_model(cfg, task.load(cfg)))
    assert abs(counts["ffnn"] - counts["rnn"]) / max(counts.values()) <= 0.05, counts


def test_every_preset_note_points_to_its_row_of_measured_times_and_carries_no_figure():
    """A preset note says what the preset is (data, sizes) and ends with the pointer to "Preset times"; that section
    has exactly one row per built-in task and preset, each naming a commit or saying "not measured"."""
    rows = preset_times_rows()
    presets = {(t, p) for t in BUILT_IN_TASKS for p in get_task(t).presets}
    assert set(rows) == presets, (set(rows) ^ presets)
    for task_name, preset in presets:
        note = get_task(task_name).preset_notes[preset]
        assert note.endswith(f"Measured times: {PRESET_TIMES}."), (task_name, preset, note)
        assert not NOTE_FIGURE.search(note), (task_name, preset, NOTE_FIGURE.search(note))
        row = rows[(task_name, preset)]
        assert "not measured" in row or re.search(r"\b[0-9a-f]{7}\b", row), row  # a commit with its figures


def test_cifar_cpu_models_at_cifar10s_shape_are_matched():
    """On 32×32 colour images (the fixture's shape, CIFAR-10's): the counts the preset trains."""
    from core.models import count_params
    from core.models.image import ResidualCNN, match_renet, renet_param_count

    o = get_task("image").make_config("ffnn", "cifar_cpu").options
    cnn = count_params(ResidualCNN(3, 10, o.cnn_width, o.cnn_stages, o.cnn_fc))
    hidden, fc = match_renet(cnn, 3, 32, 32, 10, o.renet_patch, o.renet_layers)
    renet = renet_param_count(3, 32, 32, 10, hidden, fc, o.renet_patch, o.renet_layers)
    assert abs(cnn - renet) / max(cnn, renet) <= 0.05


@pytest.mark.parametrize("preset", ["multi30k_cpu", "multi30k_small"])
def test_multi30k_cpu_models_at_the_capped_vocabulary_are_matched(preset):
    """Real Multi30K fills the vocabulary cap on every pair: both models at that size, within 5 %
    (the cap makes the output layer the same size whichever pair is chosen)."""
    cfg = get_task("translation").make_config("rnn", preset)
    o = cfg.options
    assert o.max_vocab > 0
    lstm = LuongSeq2Seq.param_count(o.max_vocab, o.max_vocab, o.emb, o.hidden)
    d, ff = match_transformer(lstm, o.max_vocab, o.max_vocab, o.tf_heads, o.tf_layers, prefer_d=o.emb)
    tf = TransformerSeq2Seq.param_count(o.max_vocab, o.max_vocab, d, o.tf_layers, ff)
    assert abs(lstm - tf) / lstm <= 0.05


def test_vocabulary_cap_keeps_the_most_frequent_tokens():
    sentences = [["a", "b", "a", "c"], ["a", "b", "d"]]
    assert Vocab.build(sentences).itos[len(SPECIALS):] == ["a", "b", "c", "d"]
    capped = Vocab.build(sentences, max_size=len(SPECIALS) + 2)
    assert capped.itos[len(SPECIALS):] == ["a", "b"] and len(capped) == len(SPECIALS) + 2
    assert capped.encode(["c", "a"]).tolist() == [SPECIALS.index("<unk>"), capped.stoi["a"]]


def test_vocabulary_cap_enters_the_hash_only_when_set():
    task = get_task("translation")
    plain = task.make_config("rnn", "quick")
    capped = task.make_config("rnn", "quick", {"max_vocab": 500})
    assert capped.training_hash != plain.training_hash
    assert task.make_config("rnn", "quick", {"max_vocab": 0}).training_hash == plain.training_hash


def test_resolution_note_says_what_one_record_is_worth():
    summaries = [{"task": "navigation", "arch": "ffnn", "config": {"n_eval": 8},
                  "resolution": {"n_members": 8, "n_nonmembers": 8}},
                 {"task": "navigation", "arch": "rnn", "config": {"n_eval": 8}}]  # written before the field
    note = resolution_note(typed_runs(summaries))
    assert "8 + 8 maps, one map = 0.125 of TPR" in note and note.count("0.125 of TPR") == 2



def test_a_comparison_states_its_resolution_beside_the_numbers():
    from core.analyses.repeats import summary_resolution

    old = {"config": {"n_eval": 16}}  # a summary written before the resolution block
    res = {"ffnn": summary_resolution(typed_run(old)),
           "rnn": summary_resolution(typed_run({"resolution": {"n_members": 16, "n_nonmembers": 16}}))}
    note = comparison_resolution_note(ComparisonResult.from_dict({"task": "navigation", "resolution": res, "metrics": {}}))
    assert "16 + 16 maps, one map = 0.0625 of TPR" in note and note.count("0.0625 of TPR") == 2
    # a comparison written before the block
    assert comparison_resolution_note(ComparisonResult.from_dict({"task": "navigation", "metrics": {}})) is None


@pytest.mark.parametrize("arch", ["ffnn", "rnn"])
def test_gpu_check_dry_run_runs_every_step_on_the_cpu(arch, tmp_path, monkeypatch, capsys):
    """bench/gpu_check.py --tiny: every step and figure of the GPU check, on the CPU, tiny sizes. Every step's
    name but the device's and the tests' ends in its architecture, so ``--only ffnn`` / ``--only rnn`` together
    run every step once (the ffnn half also runs the tests step): the two halves are two tests, which the
    xdist workers share. The check runs in this process (``main``, as its command line calls it: torch and the
    library are loaded already); its worker-process steps still start their own processes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check_under_test", ROOT / "bench" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    folder = write_multi30k_fixture(tmp_path / "m30k", n=160)
    out = tmp_path / "gpu_check.json"
    monkeypatch.setenv("MIA_DEVICE", "cpu")  # main sets it for --tiny: restored after the test
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "c"))
    rc = gpu_check.main(["--tiny", "--multi30k", str(folder), "--json", str(out), "--only", arch,
                         *(["tests"] if arch == "ffnn" else [])])
    printed = capsys.readouterr().out
    assert rc == 0, printed[-3000:]
    result = json.loads(out.read_text())
    steps = result["steps"]
    assert steps["device"]["device"] == "cpu"
    if arch == "ffnn":
        assert steps["tests"]["rc"] == 0 and steps["tests"]["collect_only"]
    else:
        assert steps["tests"] == "not run (--only)"
    other = "rnn" if arch == "ffnn" else "ffnn"
    names = ("translation multi30k_gpu en→de {}", "image quick {}", "translation paper en→de {}",
             "translation quick {}", "bf16 image quick {}", "bf16 translation paper {}")
    for name in names:
        got = steps[name.format(arch)]
        if name.startswith("bf16") and arch == "rnn" and not cpu_has_bf16_lstm():  # the ReNet's and the LSTM's
            assert isinstance(got, str) and got.startswith("refused: ") and "precision=bf16: this CPU" in got, got
            continue
        assert isinstance(got, dict) and got["train_s"] > 0, name
        assert steps[name.format(other)] == "not run (--only)", name
    assert set(steps) == {"device", "tests", *(n.format(a) for n in names for a in ("ffnn", "rnn"))}
    for name in (f"translation paper en→de {arch}", f"translation multi30k_gpu en→de {arch}"):
        run = steps[name]  # side by side in worker processes, each model timed
        assert run["executor"] == "processes" and len(run["model_train_s"]) == run["models"]
    figures = {f["figure"] for f in result["figures"]}
    assert any("ensemble speedup" in f for f in figures) and any("attack stage" in f for f in figures)
    if arch == "ffnn" or cpu_has_bf16_lstm():  # a refused step has no figure
        assert any(f.startswith(f"bf16 translation paper {arch}") for f in figures)
    assert any(f.startswith(f"translation multi30k_gpu {arch}: BLEU") for f in figures)
    assert all(arch in f or f.startswith("CUDA-relevant tests") for f in figures), figures
    assert "TINY dry run" in printed


@pytest.mark.parametrize("task_name", sorted(REAL_PRESETS))
def test_real_preset_is_selectable_on_the_page_with_what_it_needs(task_name, tmp_path, monkeypatch):
    """Train & attack: picking the preset shows its note (data folder, where its measured times are) and asks for the
    folder of its real dataset."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MIA_DATA_ROOT", str(tmp_path))
    preset, dataset = REAL_PRESETS[task_name]
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/1_Train_and_attack.py")
    at.run(timeout=60)
    at.selectbox(key="train:task").set_value(task_name).run(timeout=60)
    [box for box in at.selectbox if box.label == "Preset"][0].set_value(preset).run(timeout=60)
    assert not at.exception, at.exception
    assert any(get_task(task_name).preset_notes[preset] in i.value for i in at.info)
    assert at.selectbox(key=f"{task_name}:{preset}:dataset").value == dataset
    assert at.text_input(key=f"{task_name}:{preset}:data_dir").value == ""

"""Run summaries imported from other machines (core.experiment.run_source): every file checked before it is read,
one failing check refuses the folder with one line, and repeats from different machines combine only under the same
config hash, labelled as mixed. The summaries are the real ones in imported_runs/ (image quick, H100 machine's CPU)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from core.analyses.answer import cached_answer
from core.analyses.findings import findings_table
from core.cli.main import main
from core.experiment.cache import ArtifactCache
from core.experiment.run_source import PROVENANCE, ImportRefused, RunSource, load_imports, write_batch

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "imported_runs" / "2026-11-27-b-h100-cpu"


def _raw(name: str) -> bytes:
    return (QUICK / name).read_bytes()


def _two_machines(folder: Path) -> Path:
    """Repeat 0 of both architectures measured on machine A, repeat 1 on machine B."""
    write_batch(folder, "a", {f"image_{a}_r0.json": _raw(f"image_{a}_r0.json") for a in ("ffnn", "rnn")},
                "machine A", "2.11.0", "aaaaaaa")
    write_batch(folder, "b", {f"image_{a}_r1.json": _raw(f"image_{a}_r1.json") for a in ("ffnn", "rnn")},
                "machine B", "2.13.0", "bbbbbbb")
    return folder


def test_repeats_from_two_machines_with_the_same_hashes_combine_and_the_row_says_it_mixes(tmp_path):
    imports = load_imports(_two_machines(tmp_path / "imports"))
    table = findings_table(("image",), "quick", cache=ArtifactCache(tmp_path / "empty"), imports=imports)
    f1 = next(r for r in table.rows if r.finding == "F1")
    assert f1.status == "measured" and f1.n == 2
    row = next(r for r in table.sources["rows"] if r["finding"] == "F1")
    assert row["mixed"] is True
    assert [o.split(",")[0] for o in row["origins"]] == ["machine A", "machine B"]
    assert [b["batch"] for b in table.to_dict()["sources"]["batches"]] == ["a", "b"]
    # the defense rows never read imported runs (their defended points and analyses are this machine's only)
    assert all(r.status == "not run" for r in table.rows if r.finding not in ("F1", "F1a"))
    # an imported run's time says nothing of this machine: no expected time is made from it — F4 queues the same
    # undefended runs (missing here, imported there) beside its DP-SGD points, and its time stays unknown
    f4 = next(r for r in table.rows if r.finding == "F4")
    assert any(m.what.startswith("undefended") for m in f4.missing) and "time unknown" in f4.missing_time
    assert all(m.seconds is None for m in f4.missing)


def test_without_imports_the_table_has_no_sources_and_reads_nothing_imported(tmp_path):
    table = findings_table(("image",), "quick", cache=ArtifactCache(tmp_path / "empty"))
    assert table.sources is None and "sources" not in table.to_dict()
    assert next(r for r in table.rows if r.finding == "F1").status == "not run"


def test_the_same_config_in_two_batches_is_one_repeat_not_two(tmp_path):
    folder = tmp_path / "imports"
    for name in ("a", "b"):
        write_batch(folder, name, {f"image_{a}_r0.json": _raw(f"image_{a}_r0.json") for a in ("ffnn", "rnn")},
                    f"machine {name}", "2.11.0", "abc1234")
    imports = load_imports(folder)
    assert len(imports.runs) == 2 and all(b == ["a", "b"] for b in imports.duplicates.values())
    answer = cached_answer("image", "quick", source=RunSource(ArtifactCache(tmp_path / "empty"), imports))
    assert answer.repeats == 1 and answer.origins == ("machine a, torch 2.11.0, commit abc1234 (imported: a)",)
    assert answer.mixed is False


def test_compare_cached_names_the_origins_of_mixed_repeats(tmp_path):
    imports = load_imports(_two_machines(tmp_path / "imports"))
    answer = cached_answer("image", "quick", source=RunSource(ArtifactCache(tmp_path / "empty"), imports))
    assert answer.repeats == 2 and answer.mixed is True and len(answer.origins) == 2
    assert answer.to_dict()["mixed"] is True


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_tampered_summary_is_refused_with_one_line(tmp_path):
    folder = _two_machines(tmp_path / "imports")
    path = folder / "b" / "image_rnn_r1.json"
    d = json.loads(path.read_text())
    d["utility"]["val"] = 0.99  # a better number, nothing else changed
    path.write_text(json.dumps(d))
    with pytest.raises(ImportRefused) as exc:
        load_imports(folder)
    assert "b/image_rnn_r1.json" in _one_line(exc) and "SHA-256" in str(exc.value)


def test_a_summary_whose_config_does_not_hash_to_its_own_hash_is_refused(tmp_path):
    d = json.loads(_raw("image_ffnn_r0.json"))
    d["config"]["n_train"] += 1  # the checksum is rewritten to match: only the config hash can tell
    with pytest.raises(ImportRefused) as exc:
        write_batch(tmp_path / "imports", "x", {"image_ffnn_r0.json": json.dumps(d).encode()}, "m", "t", "c")
    assert "hashes to" in _one_line(exc)
    folder = tmp_path / "by_hand"
    batch = folder / "x"
    batch.mkdir(parents=True)
    raw = json.dumps(d).encode()
    (batch / "image_ffnn_r0.json").write_bytes(raw)
    (batch / PROVENANCE).write_text(json.dumps({"machine": "m", "torch": "t", "commit": "c",
                                                "files": {"image_ffnn_r0.json": hashlib.sha256(raw).hexdigest()}}))
    with pytest.raises(ImportRefused, match="hashes to"):
        load_imports(folder)


@pytest.mark.parametrize("intruder, why", [("model.safetensors", "never weights"), ("extra.json", "does not list"),
                                           (None, "provenance.json is missing")])
def test_anything_but_listed_summaries_is_refused_unread(tmp_path, intruder, why):
    folder = _two_machines(tmp_path / "imports")
    if intruder is None:
        (folder / "a" / PROVENANCE).unlink()
    else:
        (folder / "a" / intruder).write_bytes(b"\x80not read")
    with pytest.raises(ImportRefused, match=why):
        load_imports(folder)


def test_a_summary_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(ImportRefused, match="not a run summary"):
        write_batch(tmp_path / "imports", "x", {"r.json": b'{"config": {}, "config_hash": "x"}'}, "m", "t", "c")


def test_the_cli_refuses_a_tampered_import_with_one_error_line(tmp_path, monkeypatch, capsys):
    folder = _two_machines(tmp_path / "imports")
    shutil.copy(QUICK / "image_ffnn_r2.json", folder / "a" / "image_ffnn_r0.json")  # another run under r0's name
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "empty"))
    for argv in (["findings", "--task", "image", "--imports", str(folder)],
                 ["compare", "--task", "image", "--cached", "--imports", str(folder)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1
        assert lines[0].startswith("error: imported runs a/image_ffnn_r0.json: SHA-256")
    assert main(["compare", "--task", "image", "--imports", str(folder)]) == 2  # compare would train: refused
    assert "needs --cached" in capsys.readouterr().err


def test_compare_cached_reads_the_imports_from_the_cli(tmp_path, monkeypatch):
    folder = _two_machines(tmp_path / "imports")
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "empty"))
    out = tmp_path / "answer.json"
    assert main(["compare", "--task", "image", "--cached", "--quiet", "--imports", str(folder), "--out", str(out)]) == 0
    printed = json.loads(out.read_text())
    assert printed["repeats"] == 2 and printed["mixed"] is True and len(printed["origins"]) == 2


def test_the_repository_imports_read_and_check(tmp_path):
    imports = load_imports(ROOT / "imported_runs")
    assert len(imports.runs) == sum(n for _, n in imports.batches) and not imports.duplicates
    assert {o.commit for o, _ in imports.batches} == {"8c77a1a", "f0f2da2", "5953d02", "4d95747", "44f5701"}


def test_a_row_names_each_machine_once_with_its_runs_and_their_load_range():
    """The load is a run's, not a machine's: runs of one machine at other loads are one machine, with the range;
    an imported run (its time not noted) still counts where it was made; one summary read twice counts once."""
    from core.analyses.findings_base import Costs
    from tests.typed_runs import typed_run

    def run(h, load, cpu="AMD EPYC", preset="cifar_cpu"):
        return typed_run({"config_hash": h, "preset": preset, "machine": {"cpu": cpu, "cores": 2, "gpu": None,
                                                                          "torch": "2.13.0+cpu", "load": load}})
    costs = Costs()
    for h, load in (("a", 3.4), ("b", 11.2), ("c", 5.0)):
        costs.note(run(h, load), "plain")
    costs.note(run("a", 3.4), "plain")  # read again by another row
    costs.note(run("d", 0.5, cpu="Xeon"), "plain", timed=False)  # imported
    costs.note(run("e", None, preset="quick"), "plain")
    assert costs.machines_of("image", "cifar_cpu") == ("AMD EPYC × 2, torch 2.13.0+cpu (3 runs, load 3.4–11.2)",
                                                       "Xeon × 2, torch 2.13.0+cpu (1 run, load 0.5)")
    assert costs.machines_of("image", "quick") == ("AMD EPYC × 2, torch 2.13.0+cpu (1 run)",)
    assert costs.machines_of("image", "none") is None

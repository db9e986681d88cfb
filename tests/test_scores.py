"""Just the scores: `python -m core score` on files the tests write.

A planted leak is found and a file without one is not; LiRA and RMIA with reference losses beat the
loss threshold where records differ in difficulty; thresholds are fitted on the other half; TPR at
an FPR the non-members cannot resolve is labelled and left without a verdict; every bad input is one
`error:` line and exit 2, before anything is computed; the command never imports torch.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.analyses import scores_file
from core.analyses.scores import halves, lira_offline, score_file, score_table, youden_threshold
from core.analyses.scores_file import ScoresFileError, read_scores
from core.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
#: few resamples: the tests check behaviour, not the third decimal
BOOT = 200


def write_csv(path: Path, columns: dict[str, np.ndarray | list]) -> Path:
    names = list(columns)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row in zip(*(columns[n] for n in names)):
            w.writerow(row)
    return path


def difficulty_case(n: int = 1200, k: int = 16, seed: int = 0, gap: float = 1.0) -> dict[str, np.ndarray]:
    """Losses with a per-record difficulty every model shares (σ = 1.5) and a training effect
    ``gap`` on the logit scale: the loss alone confuses easy non-members with members; references
    trained on other data see the same difficulty and cancel it. Reference k trained on record i
    with probability ½ (``ref_in``)."""
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    difficulty = rng.normal(0, 1.5, n)

    def loss(trained: np.ndarray) -> np.ndarray:
        return np.log1p(np.exp(difficulty - gap * trained + rng.normal(0, 0.3, n)))  # −log σ(−logit)

    ref_in = rng.random((n, k)) < 0.5
    ref = np.stack([loss(ref_in[:, j]) for j in range(k)], 1)
    cols: dict[str, np.ndarray] = {"member": member.astype(int), "loss": loss(member)}
    cols.update({f"ref_loss_{j}": ref[:, j] for j in range(k)})
    cols.update({f"ref_in_{j}": ref_in[:, j].astype(int) for j in range(k)})
    cols["slice"] = np.where(np.arange(n) % 3 == 0, "rare", "common")
    return cols


def no_leak(n: int = 600, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"member": (rng.random(n) < 0.5).astype(int), "loss": rng.exponential(1.0, n)}


# ---------------------------------------------------------------------------- findings
def test_a_planted_leak_is_found_with_an_interval_above_chance(tmp_path):
    result = score_table(read_scores(write_csv(tmp_path / "leak.csv", difficulty_case())), n_boot=BOOT)
    loss = result.attack("loss")
    assert loss.auc.ci_low > 0.55 and loss.finding == "leak"
    assert loss.auc.n == 1200 and "N = 1200" in loss.reason
    assert loss.advantage.ci_low > 0  # the cross-fitted decisions, not in-sample ones
    assert result.attack("lira_offline").epsilon.lower_bound > 1.0


def test_no_leak_gives_an_interval_that_covers_chance(tmp_path):
    result = score_table(read_scores(write_csv(tmp_path / "noleak.csv", no_leak())), n_boot=BOOT)
    loss = result.attack("loss")
    assert loss.auc.ci_low < 0.5 < loss.auc.ci_high
    assert loss.finding == "inconclusive" and "contains 0.5" in loss.reason
    assert loss.advantage.ci_low < 0 < loss.advantage.ci_high
    assert [a.name for a in result.attacks] == ["loss"]  # no references: no LiRA/RMIA, and a note says why
    assert any("ref_loss" in n for n in result.notes)


def test_lira_and_rmia_with_references_beat_the_loss_threshold_on_per_record_difficulty(tmp_path):
    result = score_table(read_scores(write_csv(tmp_path / "hard.csv", difficulty_case())), n_boot=BOOT)
    diffs = {c.a: c for c in result.comparisons}
    assert set(diffs) == {"lira_offline", "lira_online", "rmia"}
    for name, c in diffs.items():
        assert c.difference.ci_low > 0.05 and c.verdict == f"{name} higher", c.to_dict()
    assert result.attack("lira_offline").auc.mean > result.attack("loss").auc.mean + 0.1
    # a record whose every reference trained on it has no OUT reference: left out of offline LiRA, counted
    assert result.attack("lira_offline").auc.n <= result.n_records


def test_thresholds_are_fitted_on_the_other_half_not_on_the_scored_records(tmp_path):
    cols = no_leak(n=200, seed=7)  # noise on which the best in-sample threshold finds a spurious advantage
    table = read_scores(write_csv(tmp_path / "noise.csv", cols))
    member, scores = table.member, -table.loss
    half = halves(member, 0)
    assert abs(int(member[half == 0].sum()) - int(member[half == 1].sum())) <= 1  # stratified
    a = score_table(table, n_boot=BOOT).attack("loss")
    assert a.thresholds == (youden_threshold(scores[half == 0], member[half == 0]),
                            youden_threshold(scores[half == 1], member[half == 1]))
    # on pure noise the in-sample best threshold shows an advantage; the cross-fitted one does not
    t_in = youden_threshold(scores, member)
    in_sample = (scores[member] >= t_in).mean() - (scores[~member] >= t_in).mean()
    assert in_sample > 0.05
    assert abs(a.advantage.mean) < in_sample and a.advantage.ci_low < 0 < a.advantage.ci_high
    assert a.epsilon.lower_bound == 0.0


def test_tpr_at_an_fpr_below_one_over_n_is_labelled_and_has_no_verdict(tmp_path):
    small = score_table(read_scores(write_csv(tmp_path / "small.csv", no_leak(n=150))), n_boot=BOOT)
    rows = {r.fpr: r for r in small.attack("loss").low_fpr}
    n0 = small.n_nonmembers
    assert n0 < 100
    for fpr in (0.01, 0.001):
        assert not rows[fpr].resolved and rows[fpr].verdict is None
        assert rows[fpr].label.startswith(f"TPR at 0 false positives (FPR < 1/{n0}")
    rng = np.random.default_rng(6)
    member = np.r_[np.ones(1000), np.zeros(1100)].astype(int)
    loss = rng.exponential(1.0, 2100) * np.where(member == 1, 0.05, 1.0)  # members: a far lower loss
    big = score_table(read_scores(write_csv(tmp_path / "big.csv", {"member": member, "loss": loss})), n_boot=BOOT)
    rows = {r.fpr: r for r in big.attack("loss").low_fpr}
    for fpr, label in ((0.01, "TPR at 1.0% FPR"), (0.001, "TPR at 0.1% FPR")):  # 1100 non-members resolve both
        assert rows[fpr].resolved and rows[fpr].label == label and rows[fpr].verdict == "above chance"


def test_slices_json_and_the_drawing_helpers(tmp_path):
    result = score_table(read_scores(write_csv(tmp_path / "s.csv", difficulty_case(n=600))), n_boot=BOOT)
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))  # no NaN anywhere
    assert d["kind"] == "scores" and d["n_records"] == 600 and set(d["attacks"]) >= {"loss", "lira_offline", "rmia"}
    sliced = {(attack, s.slice) for attack, s in result.slices}
    assert ("loss", "rare") in sliced and ("rmia", "common") in sliced
    fpr, tpr = result.roc("loss")
    assert fpr[0] == 0 and fpr[-1] == 1 and np.all(np.diff(fpr) >= 0) and len(fpr) == len(tpr)
    first = result.attacks[0]
    assert first.name == "loss" and first.auc.ci_low <= first.auc.mean <= first.auc.ci_high
    assert [r["attack"] for r in d["slices"]] == [attack for attack, _ in result.slices]  # the JSON's rows, in order
    assert d["method"]["thresholds"].startswith("cross-fitted")


def test_logits_in_an_npz_give_the_entropy_attack(tmp_path):
    rng = np.random.default_rng(4)
    n = 400
    member = rng.random(n) < 0.5
    label = rng.integers(0, 3, n)
    logits = rng.normal(0, 1, (n, 3))
    logits[np.arange(n), label] += 2.5 * member  # members: confident on their label
    path = tmp_path / "logits.npz"
    np.savez(path, member=member, logits=logits, label=label, slice=np.array(["x", "y"] * (n // 2)))
    result = score_table(read_scores(path), n_boot=BOOT)
    assert {a.name for a in result.attacks} == {"loss", "entropy"}
    assert result.attack("loss").finding == "leak" and result.attack("entropy").auc.ci_low > 0.5
    assert {s.slicing for _, s in result.slices} == {"slice", "label"}


def test_lira_on_a_file_equals_lira_on_the_models_answers():
    """The file path and the model path share one implementation (core.measurement.reference_math)."""
    from core.experiment.reference_attacks import lira_scores
    from core.measurement.responses import Responses

    rng = np.random.default_rng(5)
    n, k = 50, 4

    def answers(phi: np.ndarray) -> Responses:  # one-step records; label = class 0
        return Responses.from_logits(np.c_[phi, np.zeros_like(phi)], np.ones(n, np.int64), np.zeros(n, np.int64))

    target, refs = answers(rng.normal(1, 1, n)), [answers(rng.normal(0, 1, n)) for _ in range(k)]
    table = scores_file.ScoresTable("x.csv", rng.random(n) < 0.5, target.cross_entropy.astype(np.float64), "loss", None,
                                    None, np.stack([r.cross_entropy for r in refs], 1).astype(np.float64),
                                    np.zeros((n, k), bool), False, None, None)
    np.testing.assert_allclose(lira_offline(table), lira_scores(target, refs), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------- the CLI
def test_the_cli_writes_json_and_a_report_without_importing_torch(tmp_path):
    src = write_csv(tmp_path / "leak.csv", difficulty_case(n=400, k=4))
    code = ("import sys; from core.cli.main import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-c", code, "score", "--in", str(src), "--out", str(out), "--report",
                           str(report), "--bootstrap", "100"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(out.read_text())
    assert d["attacks"]["loss"]["finding"] == "leak" and d["method"]["bootstrap"] == 100
    page = report.read_text()
    assert "Findings" in page and "lira_offline" in page and "log-log" in page and page.rstrip().endswith("</html>")


def npz_with_objects(path: Path) -> None:
    np.savez(path, member=np.array([0, 1] * 20), loss=np.array([object()] * 40, dtype=object))


BAD_INPUTS = {
    "nan loss": ({"member": [0, 1] * 20, "loss": ["nan"] + ["0.5"] * 39}, "finite number"),
    "inf loss": ({"member": [0, 1] * 20, "loss": ["0.5"] * 39 + ["inf"]}, "line 41"),
    "member 2": ({"member": [0, 1] * 19 + [2, 1], "loss": [0.5] * 40}, "member must be 0 or 1"),
    "one class": ({"member": [1] * 40, "loss": [0.5] * 40}, "every record has member = 1"),
    "too few": ({"member": [0] * 30 + [1] * 5, "loss": [0.5] * 35}, "at least 10 of each"),
    "no member": ({"loss": [0.5] * 40}, "no 'member' column"),
    "no loss": ({"member": [0, 1] * 20, "label": [0] * 40}, "none found"),
    "loss and logits": ({"member": [0, 1] * 20, "loss": [1] * 40, "logit_0": [1] * 40, "logit_1": [0] * 40,
                         "label": [0] * 40}, "not both"),
    "unknown column": ({"member": [0, 1] * 20, "Loss": [0.5] * 40}, "unknown column 'Loss'"),
    "empty cell": ({"member": [0, 1] * 20, "loss": [""] + [0.5] * 39}, "an empty cell"),
    "text": ({"member": [0, 1] * 20, "loss": ["abc"] + [0.5] * 39}, "'abc', not a number"),
    "huge loss": ({"member": [0, 1] * 20, "loss": [1e300] + [0.5] * 39}, "values up to 1e+06"),
    "negative loss": ({"member": [0, 1] * 20, "loss": [-1] + [0.5] * 39}, "≥ 0"),
    "logits without label": ({"member": [0, 1] * 20, "logit_0": [1] * 40, "logit_1": [0] * 40}, "need a 'label'"),
    "label out of range": ({"member": [0, 1] * 20, "logit_0": [1] * 40, "logit_1": [0] * 40, "label": [2] + [0] * 39},
                           "lies in 0…1"),
    "gap in refs": ({"member": [0, 1] * 20, "loss": [0.5] * 40, "ref_loss_0": [1] * 40, "ref_loss_2": [1] * 40},
                    "no ref_loss_1"),
    "masks for some refs": ({"member": [0, 1] * 20, "loss": [0.5] * 40, "ref_loss_0": [1] * 40,
                             "ref_loss_1": [1] * 40, "ref_in_0": [0] * 40}, "one mask per reference"),
    "mask 3": ({"member": [0, 1] * 20, "loss": [0.5] * 40, "ref_loss_0": [1] * 40, "ref_in_0": [3] * 40},
               "ref_in must be 0 or 1"),
    "nan reference": ({"member": [0, 1] * 20, "loss": [0.5] * 40, "ref_loss_0": [1] * 40,
                       "ref_loss_1": [1] * 5 + ["nan"] + [1] * 34}, "'ref_loss_1', line 7"),
}


def _one_error_line(capsys, argv: list[str]) -> str:
    try:
        rc = main(argv)
    except SystemExit as stop:  # argparse's own refusals exit from the parser
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_every_bad_csv_is_one_line_and_exit_2(tmp_path, capsys, case):
    columns, expected = BAD_INPUTS[case]
    path = write_csv(tmp_path / "bad.csv", columns)
    line = _one_error_line(capsys, ["score", "--in", str(path), "--out", str(tmp_path / "r.json")])
    assert expected in line, line
    assert not (tmp_path / "r.json").exists()


def test_every_bad_file_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    good = write_csv(tmp_path / "good.csv", no_leak(n=60))
    cases: list[tuple[Path, str]] = []
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(bytes(range(256)) * 10)
    cases.append((garbage, "binary content"))
    latin = tmp_path / "latin.csv"
    latin.write_bytes("member,loss\n1,0.5\n0,caf\xe9\n".encode("latin-1"))
    cases.append((latin, "not UTF-8 text (line 3)"))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    cases.append((empty, "empty file"))
    header_only = tmp_path / "header.csv"
    header_only.write_text("member,loss\n")
    cases.append((header_only, "no records"))
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("member,loss\n1,0.5\n0\n")
    cases.append((ragged, "line 3 has 1 fields"))
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(["member", "loss"] + [f"ref_loss_{i}" for i in range(scores_file.MAX_COLUMNS)]) + "\n")
    cases.append((wide, "columns; at most"))
    objects = tmp_path / "objects.npz"
    npz_with_objects(objects)
    cases.append((objects, "Python objects"))
    fake_npz = tmp_path / "fake.npz"
    fake_npz.write_bytes(b"member,loss\n")
    cases.append((fake_npz, "not an npz file"))
    broken_npz = tmp_path / "broken.npz"
    broken_npz.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    cases.append((broken_npz, "damaged npz"))
    shapes = tmp_path / "shapes.npz"
    np.savez(shapes, member=np.array([0, 1] * 20), loss=np.ones(39))
    cases.append((shapes, "has 39 rows"))
    extra = tmp_path / "extra.npz"
    np.savez(extra, member=np.array([0, 1] * 20), loss=np.ones(40), weights=np.ones(3))
    cases.append((extra, "unknown array 'weights'"))
    link = tmp_path / "link.csv"
    link.symlink_to(good)
    cases.append((link, "symbolic link"))
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    cases.append((folder, "not a regular file"))
    cases.append((tmp_path / "scores.txt", "give a .csv or .npz"))
    cases.append((tmp_path / "missing.csv", "no such file"))
    for path, expected in cases:
        line = _one_error_line(capsys, ["score", "--in", str(path)])
        assert expected in line, (path.name, line)
    # the caps: a file too large, too many rows (lowered here so the fixture stays tiny)
    monkeypatch.setattr(scores_file, "MAX_FILE_BYTES", 100)
    assert "at most 100 are read" in _one_error_line(capsys, ["score", "--in", str(good)])
    monkeypatch.setattr(scores_file, "MAX_FILE_BYTES", 2**20)
    monkeypatch.setattr(scores_file, "MAX_ROWS", 50)
    assert "more than 50 rows" in _one_error_line(capsys, ["score", "--in", str(good)])
    # an npz that would unpack to more than the cap is refused from its zip directory
    monkeypatch.setattr(scores_file, "MAX_UNPACKED_BYTES", 1000)
    big = tmp_path / "big.npz"
    np.savez_compressed(big, member=np.zeros(10_000), loss=np.zeros(10_000))
    assert "unpacks to" in _one_error_line(capsys, ["score", "--in", str(big)])


def test_arguments_are_checked_before_the_file_is_scored(tmp_path, capsys):
    good = write_csv(tmp_path / "good.csv", no_leak(n=60))
    assert "folder" in _one_error_line(capsys, ["score", "--in", str(good), "--out", str(tmp_path / "no" / "r.json")])
    assert "100..10000" in _one_error_line(capsys, ["score", "--in", str(good), "--bootstrap", "5"])
    assert "same file" in _one_error_line(capsys, ["score", "--in", str(good), "--out", str(tmp_path / "r"),
                                                   "--report", str(tmp_path / "r")])
    assert "twice" in _one_error_line(capsys, ["score", "--in", str(good), "--in", str(good)])


def test_score_file_stays_under_the_data_root(tmp_path, monkeypatch):
    inside, outside = tmp_path / "root", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    target = write_csv(outside / "s.csv", no_leak(n=60))
    monkeypatch.setenv("MIA_DATA_ROOT", str(inside))
    with pytest.raises(ScoresFileError, match="outside the data root"):
        score_file(target, n_boot=100)
    with pytest.raises(ScoresFileError, match="outside the data root"):
        score_file(inside / ".." / "elsewhere" / "s.csv", n_boot=100)
    (inside / "sub").symlink_to(outside)  # a link in a parent folder that leads out
    with pytest.raises(ScoresFileError, match="outside the data root"):
        score_file(inside / "sub" / "s.csv", n_boot=100)
    os.replace(target, inside / "s.csv")
    assert score_file(inside / "s.csv", n_boot=100).n_records == 60
    assert score_file("s.csv", n_boot=100).n_records == 60  # relative: to the data root, as the app's folders

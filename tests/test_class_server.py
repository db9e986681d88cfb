"""One server, a class of sessions: uploads and runs on uploaded data are the uploading session's, the caps agree
(the browser's upload limit and the largest kind's cap), and without MIA_DATA_ROOT the home's hidden files are out
of reach."""
from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.foundations.errors import ConfigError
from core.foundations.paths import resolve_data_dir
from core.foundations.user_files import UPLOAD_FOLDER, UPLOAD_KINDS, read_user_file, store_upload
from ui.ownership import OWNERS_FILE, RunOwners, UploadLedger

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/6_Your_model.py"


def test_the_servers_upload_limit_is_the_largest_upload_the_app_keeps():
    config = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == max(limit for _, limit in UPLOAD_KINDS.values())


def test_without_a_data_root_the_homes_hidden_files_are_refused(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret")
    (home / "data").mkdir()
    (home / "data" / "m.txt").write_text("1\n2\n")
    monkeypatch.delenv("MIA_DATA_ROOT", raising=False)
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(ConfigError, match=r"hidden '\.ssh'.*MIA_DATA_ROOT"):
        read_user_file("~/.ssh/id_ed25519", "members", 1000)
    with pytest.raises(ConfigError, match=r"hidden '\.ssh'"):
        resolve_data_dir("~/data/../.ssh")
    assert read_user_file("~/data/m.txt", "members", 1000) == b"1\n2\n"
    monkeypatch.setenv("MIA_DATA_ROOT", str(home))  # the operator chose the root: names are not refused
    assert read_user_file(str(home / ".ssh" / "id_ed25519"), "members", 1000) == b"secret"


def test_runs_on_user_data_are_listed_to_the_sessions_that_made_them(tmp_path):
    owners = RunOwners(tmp_path)
    csv_run = {"dataset": "csv", "data_dir": "/data/private.csv"}
    preset_run = {"dataset": "digits", "data_dir": ""}
    owners.add(["h-csv"], "session:alice")
    assert owners.visible(csv_run, "h-csv", "session:alice", False)
    assert not owners.visible(csv_run, "h-csv", "session:bob", False)
    assert owners.visible(csv_run, "h-csv", "session:bob", True)  # a lecturer
    assert owners.visible(preset_run, "h-digits", "session:bob", False)  # built-in data: everybody's
    assert owners.visible({"target_weights": "w.safetensors"}, "h-cli", "session:bob", False)  # the server's own
    again = RunOwners(tmp_path)  # a restarted server reads the record back
    assert not again.visible(csv_run, "h-csv", "session:bob", False)
    (tmp_path / OWNERS_FILE).write_text("{not json")
    broken = RunOwners(tmp_path)  # an unreadable record: private runs listed to nobody but a lecturer
    assert not broken.visible(csv_run, "h-csv", "session:alice", False)
    assert broken.visible(preset_run, "h-digits", "session:alice", False)
    (tmp_path / OWNERS_FILE).write_text(json.dumps({"h": "not a list"}))
    assert not RunOwners(tmp_path).visible(csv_run, "h-csv", "session:alice", False)


def test_each_session_has_its_own_upload_quota():
    ledger = UploadLedger(per_session=2)
    ledger.add("a", "/r/1.txt")
    ledger.add("a", "/r/2.txt")
    with pytest.raises(ConfigError, match="uploaded 2 files"):
        ledger.check_room("a", "/r/3.txt")
    ledger.check_room("a", "/r/1.txt")  # the same file again costs nothing
    ledger.check_room("b", "/r/3.txt")
    assert ledger.of("a") == ["/r/1.txt", "/r/2.txt"] and ledger.of("b") == []
    small = UploadLedger(per_session=5, bytes_per_session=100)
    small.add("a", "/r/1.bin", 60)
    small.add("a", "/r/1.bin", 60)  # the same file again: counted once
    small.check_room("a", "/r/2.bin", 40)
    with pytest.raises(ConfigError, match="past 0 MiB in all"):
        small.check_room("a", "/r/2.bin", 41)


def _scores(path: Path) -> bytes:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["member", "loss"])
        w.writerows([(i % 2, f"{0.2 + (i % 2) + i / 100:.3f}") for i in range(40)])
    return path.read_bytes()


def test_a_session_cannot_name_another_sessions_upload(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    theirs = store_upload(_scores(tmp_path / "s.csv"), "scores_csv")  # another session's upload, by its path
    assert theirs.parent == root / UPLOAD_FOLDER
    at = AppTest.from_file(str(ROOT / PAGE))
    at.session_state["_mia_session_id"] = "bob"
    at.run(timeout=60)
    at.radio(key="yours:way").set_value("Just the scores").run(timeout=60)
    at.text_input(key="scores:path").set_value(str(theirs)).run(timeout=60)
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "not one of this session" in at.error[0].value
    assert not at.success  # nothing was scored

"""Import run summaries made on another machine into an imports folder (:mod:`core.experiment.run_source`).

    .venv/bin/python bench/import_runs.py ARCHIVE.tgz IMPORTS_DIR BATCH --machine TEXT --torch VERSION --commit C \
        [--source TEXT] [--only PATTERN]

Reads only the members of ARCHIVE named ``*.json`` that parse as run summaries (``--only``: an fnmatch pattern on
the member's file name, e.g. ``*_r[0-9].json``); every other member (logs, weights, anything) is skipped unread. The
tar archive is never extracted: each member's bytes are read from the stream, so no path in it is followed. Each
summary is checked as ``findings --imports`` checks it before the batch is written (``write_batch``).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.experiment.run_source import MAX_SUMMARY_BYTES, write_batch  # noqa: E402


def summaries_in(archive: Path, only: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            name = Path(member.name).name
            if not member.isfile() or not fnmatch.fnmatch(name, only) or member.size > MAX_SUMMARY_BYTES:
                continue
            fh = tar.extractfile(member)
            raw = fh.read() if fh is not None else b""
            try:
                d = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                continue
            if isinstance(d, dict) and "config_hash" in d and "config" in d:
                if name in out:
                    raise SystemExit(f"error: two members named {name} in {archive}")
                out[name] = raw
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archive", type=Path)
    p.add_argument("imports", type=Path)
    p.add_argument("batch")
    p.add_argument("--machine", required=True)
    p.add_argument("--torch", required=True)
    p.add_argument("--commit", required=True)
    p.add_argument("--source", default="")
    p.add_argument("--only", default="*.json")
    a = p.parse_args(argv)
    found = summaries_in(a.archive, a.only)
    if not found:
        print(f"error: no run summary in {a.archive} matches {a.only}", file=sys.stderr)
        return 2
    batch = write_batch(a.imports, a.batch, found, a.machine, a.torch, a.commit, a.source)
    print(f"{len(found)} summaries → {batch}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

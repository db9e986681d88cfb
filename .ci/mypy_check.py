"""mypy on the app's code (core/, ui/, app_pages/, mia_explorer/, app.py) against a baseline that may only shrink.

The errors mypy reports (pyproject.toml's [tool.mypy]) are compared with .ci/mypy_baseline.txt, keyed by file,
message and code (not line: an edit above an error must not count as a new one). An error beyond the baseline
fails, naming it; fewer errors pass and say so (``--update`` then writes the smaller baseline; it refuses to
write a larger one).

    .venv/bin/python .ci/mypy_check.py [--update]
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "mypy_baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def current() -> Counter[str]:
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context",
                          "--no-pretty", "--show-error-codes"], cwd=ROOT, capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit(f"mypy failed (exit {run.returncode})")
    found: Counter[str] = Counter()
    for line in run.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            found[f"{m['path']}: {' '.join(m['message'].split())}"] += 1
    return found


def baseline() -> Counter[str]:
    out: Counter[str] = Counter()
    if BASELINE.is_file():
        for line in BASELINE.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                count, _, key = line.partition("\t")
                out[key] = int(count)
    return out


def write(found: Counter[str]) -> None:
    lines = ["# mypy errors accepted for now (count<TAB>file: message [code]); only ever shrinks: "
             ".ci/mypy_check.py --update"]
    lines += [f"{n}\t{key}" for key, n in sorted(found.items())]
    BASELINE.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    found = current()
    if not BASELINE.is_file():
        write(found)
        print(f"mypy: baseline written, {sum(found.values())} errors")
        return 0
    known = baseline()
    new = {key: n - known[key] for key, n in found.items() if n > known[key]}
    total, allowed = sum(found.values()), sum(known.values())
    if new:
        for key, n in sorted(new.items()):
            print(f"new mypy error{'s' * (n > 1)} ({n}): {key}")
        print(f"mypy: {len(new)} kind(s) of error beyond the baseline (.ci/mypy_baseline.txt): fix them")
        return 1
    if "--update" in argv:
        write(found)
        print(f"mypy: baseline written, {total} errors")
    elif total < allowed:
        print(f"mypy: {total} errors, {allowed - total} fewer than the baseline: .ci/mypy_check.py --update "
              "records the smaller one")
    else:
        print(f"mypy: {total} errors, none beyond the baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Every commit the README and docs cite exists in this repository: a figure that names a commit no
clone can check out has no provenance.

Which tokens are commits — an explicit rule, tested below on the kinds of token the docs hold:
7–40 lowercase hex digits standing alone (not part of a longer word or hash) with at least one letter
a–f and one digit, or all digits where a commit is named (in backticks, or right after "commit",
"at", "of", "since", "as": `9469674`, "at 1234567"; elsewhere an all-digit token is a number: seeds,
counts; an all-letter one is a word such as "effaced"), and not

* a config hash: "config" or "hash" in the 40 characters before it on its line, or cut short with "…";
* a colour: right after "#".

The check needs the history: it skips only where the checkout has none (no git, or a shallow clone or
a tarball); CI runs on a full clone, so it runs there.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"(?<![#\w])[0-9a-f]{7,40}(?![\w…])")
NOT_A_COMMIT_BEFORE = re.compile(r"config|hash", re.IGNORECASE)
COMMIT_PLACE = re.compile(r"\b(?:commits?|at|of|since|as)\s+`?$")


def cited_commits(text: str) -> list[tuple[int, str]]:
    """(line number, token) of every commit-looking token of ``text`` (the module docstring's rule)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for m in TOKEN.finditer(line):
            token = m.group()
            if not re.search(r"\d", token):
                continue  # a word
            if not re.search(r"[a-f]", token) and not (COMMIT_PLACE.search(line[:m.start()])
                                                       or line[m.end():m.end() + 1] == "`"):
                continue  # a number
            if NOT_A_COMMIT_BEFORE.search(line[max(0, m.start() - 40):m.start()]):
                continue
            found.append((number, token))
    return found


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def test_the_rule_tells_commits_from_other_hex():
    text = ("on a clean clone of e89630d; trained at `ea66249`; | 63e1ab3 (after) |; commits db4df58 and c7397db\n"
            "seeds 0, 3964924996, 3141116543; config `9b83ee45660ef4bc7e5c`, trained at `ea66249`\n"
            "config hashes are those of the runs, 70e58279… and dfde8129…; colour #1f77b4cc; 99999999999999999999\n"
            "sha256 " + "ab12" * 16 + "; the effaced label; at `9469674` and `1234567`, commit 7654321; 1234567 runs")
    assert [t for _, t in cited_commits(text)] == ["e89630d", "ea66249", "63e1ab3", "db4df58", "c7397db", "ea66249",
                                                   "9469674", "1234567", "7654321"]


def test_every_commit_cited_in_readme_and_docs_exists():
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("no git history here (a tarball): the commits cannot be checked")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone: older commits are missing by construction")
    missing = []
    for doc in documents():
        for number, token in cited_commits(doc.read_text()):
            if git("cat-file", "-e", f"{token}^{{commit}}").returncode != 0:
                missing.append(f"{doc.relative_to(ROOT)}:{number}: {token}")
    assert not missing, "commits cited but not in this repository:\n" + "\n".join(missing)

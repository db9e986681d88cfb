"""Count literal result-key look-ups outside ``to_dict``/``from_dict`` (issue 29's measure of "typed from birth").

    python bench/result_key_lookups.py [--list] [--keys-at COMMIT] [DIR ...]      (default: core app_pages ui)

A *result key* is a field name of a dataclass that has ``to_dict`` or ``from_dict`` (or subclasses one that
has), or a string key written inside a ``to_dict``/``from_dict``/``*_for_json`` function, anywhere in ``core/``.
A *look-up* is ``x["key"]`` (read, not written) or ``x.get("key")`` with such a key, outside those functions; subscripts of
``session_state``, ``environ``, ``os.environ`` and ``query_params`` are not results and are not counted.
The count is per folder; ``--list`` prints every look-up as ``path:line key``. Typing more results adds result
keys (and so counts look-ups of them that were there before): ``--keys-at COMMIT`` takes the key set from that
commit's ``core/`` instead, so counts at two commits compare on one key set.
"""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERIALIZERS = ("to_dict", "from_dict", "_from_dict", "as_dict")
NOT_RESULTS = ("session_state", "environ", "query_params", "headers")


def _is_serializer(name: str) -> bool:
    return name in SERIALIZERS or name.endswith("_for_json") or name.startswith("from_dict")


def _sources(core: Path, commit: str | None) -> list[str]:
    """The text of every ``core/**/*.py``: the working tree's, or ``commit``'s (``git show``)."""
    if commit is None:
        return [p.read_text(encoding="utf-8") for p in sorted(core.rglob("*.py"))]
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "core"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return [subprocess.run(["git", "show", f"{commit}:{n}"], cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout for n in names if n.endswith(".py")]


def result_keys(core: Path, commit: str | None = None) -> set[str]:
    """Field names of serialisable dataclasses and keys written by serialisers in ``core`` (at ``commit``)."""
    keys: set[str] = set()
    for text in _sources(core, commit):
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                typed = bool(methods & set(SERIALIZERS)) or bool(bases & {"TypedJson", "JsonRecord"})
                if typed:
                    for n in node.body:
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                            keys.add(n.target.id)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_serializer(node.name):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Dict):
                        keys.update(k.value for k in sub.keys
                                    if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return {k for k in keys if not k.startswith("_")}


def _target_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def lookups(path: Path, keys: set[str]) -> list[tuple[int, str]]:
    """(line, key) of each literal result-key look-up in ``path`` outside serialisers."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_serializer(node.name):
            skip.update(id(sub) for sub in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        key = None
        # a write (``x["k"] = v``, ``del x["k"]``) builds a dict, it does not read a result
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str) and _target_name(node.value) not in NOT_RESULTS:
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and _target_name(node.func.value) not in NOT_RESULTS:
            key = node.args[0].value
        if key is not None and key in keys:
            found.append((node.lineno, key))
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", default=["core", "app_pages", "ui"])
    parser.add_argument("--list", action="store_true", help="print every look-up")
    parser.add_argument("--keys-at", metavar="COMMIT", help="take the result keys from this commit's core/")
    args = parser.parse_args(argv)
    keys = result_keys(ROOT / "core", args.keys_at)
    total = 0
    for d in args.dirs:
        per_file: Counter[str] = Counter()
        for path in sorted((ROOT / d).rglob("*.py")) if (ROOT / d).is_dir() else [ROOT / d]:
            for line, key in lookups(path, keys):
                per_file[str(path.relative_to(ROOT))] += 1
                if args.list:
                    print(f"{path.relative_to(ROOT)}:{line} {key}")
        count = sum(per_file.values())
        total += count
        print(f"{d}: {count}" + "".join(f"\n  {f}: {c}" for f, c in per_file.most_common(12)) if not args.list
              else f"{d}: {count}")
    print(f"total: {total} ({len(keys)} result keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One layer per job: the import graph read from the code (AST), not by eye.

* no circle among the project's modules — counting every import: module level, inside functions
  and under ``TYPE_CHECKING`` alike (an import hidden in a function is still a dependency);
* so no import runs back up: with no circle, the modules stack into floors and every arrow
  points down;
* no import inside a function, except (a) in the two entry points, whose refusals and start-up
  must not wait for torch (``core/cli/``: the parser and its subcommands parse and validate before importing the library;
  ``core/jobs/worker.py`` starts warm workers before the first job), and (b) of optional heavy
  third-party dependencies that most runs never need.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "ui")
#: files that may import lazily (see the module docstring)
ENTRY_POINTS = {*(f"core/cli/{p.name}" for p in (ROOT / "core" / "cli").glob("*.py")), "core/jobs/worker.py"}
#: third-party packages a function may import lazily: each loads only for the configs that need it
OPTIONAL_HEAVY = {"ray", "opacus", "sklearn", "scipy", "gymnasium", "minigrid", "PIL", "torch", "playwright",
                  "transformers", "onnxruntime"}


def project_files() -> list[Path]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    files += sorted((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]
    return [p for p in files if "__pycache__" not in p.parts]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, modules: set[str]) -> list[tuple[str, int, bool, str]]:
    """``(imported module, line, inside a function, top-level package)`` for each import."""
    me = module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    inside: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(node, me, path.name == "__init__.py")
            # "from pkg import mod" imports the submodule when there is one
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        else:
            continue
        for name in names:
            out.append((name, node.lineno, id(node) in inside, name.split(".")[0]))
    return out


def graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int, str]]]]:
    files = project_files()
    modules = {module_name(p) for p in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    lazy: dict[str, list[tuple[str, int, str]]] = {}
    for path in files:
        me = module_name(path)
        for name, line, in_function, top in imports_of(path, modules):
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != me and not me.startswith(target + "."):  # not its own package
                edges[me].add(target)
            if in_function:
                lazy.setdefault(str(path.relative_to(ROOT)), []).append((name, line, top))
    return edges, lazy


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_reader_finds_a_planted_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_project():
    edges, _ = graph()
    assert "core.experiment.pipeline" in edges and "core.experiment.roles" in edges["core.experiment.pipeline"]  # the reader sees imports
    assert circles(edges) == []


def test_every_import_points_down_a_floor():
    edges, _ = graph()
    floor: dict[str, int] = {}

    def floor_of(m: str, seen: tuple[str, ...] = ()) -> int:
        if m not in floor:
            assert m not in seen, f"circle through {m}"
            floor[m] = 1 + max((floor_of(d, seen + (m,)) for d in edges[m]), default=0)
        return floor[m]

    for m in edges:
        for d in edges[m]:
            assert floor_of(d) < floor_of(m), f"{m} imports {d}, which is not below it"
    # the layers the architecture describes
    assert floor_of("core.experiment.roles") < floor_of("core.experiment.pipeline")
    for above_roles in ("core.experiment.executor", "core.experiment.reference_attacks", "core.experiment.fidelity"):
        assert floor_of("core.experiment.roles") < floor_of(above_roles) < floor_of("core.cli.main")
    assert floor_of("core.training.dpsgd") < floor_of("core.training.loop")


def test_no_import_inside_a_function_except_entry_points_and_optional_heavy_dependencies():
    _, lazy = graph()
    offending = {
        f"{file}:{line} {name}"
        for file, found in lazy.items() if file not in ENTRY_POINTS
        for name, line, top in found if top in PACKAGES or top not in OPTIONAL_HEAVY
    }
    assert sorted(offending) == []


#: the packages of ``core`` from the bottom floor up (docs/architecture.md, "Layers"); a package may
#: import only the packages below it
CORE_LAYERS = ("foundations", "measurement", "models", "data", "training", "attacks", "tasks", "experiment",
               "defenses", "analyses", "views", "jobs", "cli")


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "core" and len(parts) > 2 or (len(parts) == 2 and parts[1] in CORE_LAYERS) \
        else None


def test_core_packages_import_only_the_packages_below_them():
    edges, _ = graph()
    floor = {name: i for i, name in enumerate(CORE_LAYERS)}
    upward = sorted(
        f"{m} imports {d}"
        for m, deps in edges.items() for d in deps
        if package_of(m) in floor and package_of(d) in floor and floor[package_of(d)] > floor[package_of(m)]
    )
    assert upward == []
    # the reader sees the packages: a planted upward arrow would be caught
    assert any(package_of(m) == "experiment" and package_of(d) == "tasks" for m, deps in edges.items() for d in deps)


def test_core_never_imports_streamlit():
    """``core`` is the library (the CLI, notebooks, the app's worker processes): Streamlit stays in ``ui/`` and the pages."""
    files = [p for p in (ROOT / "core").rglob("*.py") if "__pycache__" not in p.parts]
    assert ROOT / "core" / "jobs" / "manager.py" in files  # the job queue the pages hold is read too
    found = sorted(f"{p.relative_to(ROOT)}:{line}" for p in files
                   for _, line, _, top in imports_of(p, set()) if top == "streamlit")
    assert found == []
    streamlit_side = [p for p in (ROOT / "ui").glob("*.py") if any(top == "streamlit" for *_, top in imports_of(p, set()))]
    assert streamlit_side  # the reader sees a Streamlit import where there is one


def test_core_shows_its_layers_as_packages():
    loose = sorted(p.name for p in (ROOT / "core").glob("*.py"))
    assert len(loose) <= 4, loose  # __init__, __main__, audit (the notebook's door) and room for one
    packages = sorted(p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists())
    assert packages == sorted(CORE_LAYERS)
    for name in packages:  # each package says its job and what it may import
        doc = ast.get_docstring(ast.parse((ROOT / "core" / name / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), name

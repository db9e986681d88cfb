"""Browser check of the app: clicks through the pages in headless Chromium and records the time
from each click to the page's first chart (time-to-first-chart), cold (first visit after the
server started) and warm (later visits); with ``--demo``, the time from the Home page's
"Run the image demo" click to the results, beside the CLI's time for the same two runs (each from an
empty cache); ``--slider`` times the Defenses page's Gaussian σ slider, one step at a time (``--slider-mechanism
dirichlet``: the Dirichlet k slider; ``--slider-mode right``: every step to a value not computed before).

Each page visit starts from the Home page at rest (its script run ended), and records beside the wall
time the CPU seconds the browser (Playwright's Chromium) and the app server (its process tree) spent
up to the first chart and up to the whole page drawn: on a loaded machine the wall time mostly
measures the other jobs, the CPU time what the page costs.

At the end it prints every figure against the app's page-speed targets: each page's first chart within 1 s
warm (median), a slider step (σ or k) within 0.25 s median — to its first numbers and to all its draws'
numbers —, the demo within 1.1× the CLI. On a machine whose 1-minute load average exceeds its cores the output
says "measured under load".

Needs Playwright's Python package and a Chromium (the system one by default); without them it
prints ``skipped: ...`` and exits 0 (:func:`chromium_path`, which bench/presenter.py and bench/class_load.py
share). It does not import the project, so any interpreter with Playwright runs it:

    /tmp/pwenv/bin/python bench/app_browser.py                      # serves the app itself (port 8597)
    /tmp/pwenv/bin/python bench/app_browser.py --url http://127.0.0.1:8501   # an app already running
    MIA_CACHE_DIR=/tmp/empty /tmp/pwenv/bin/python bench/app_browser.py --demo  # click → results, cold cache
    MIA_CACHE_DIR=/tmp/cached /tmp/pwenv/bin/python bench/app_browser.py --slider  # + the σ slider steps
    MIA_CACHE_DIR=/tmp/cached /tmp/pwenv/bin/python bench/app_browser.py --visits 1 --slider \
        --slider-mechanism dirichlet --slider-mode right                               # k steps to new values

Prints one JSON object (seconds). A benchmark, not a test: timings depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
CHART = ".js-plotly-plot .main-svg"
#: marks the charts on screen before a click, so that only a chart of the new page counts
MARK_OLD = "() => document.querySelectorAll('[data-testid=stPlotlyChart]').forEach(e => e.dataset.old = '1')"
NEW_CHART = ("() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')]"
             ".some(e => !e.dataset.old && e.querySelector('.js-plotly-plot .main-svg'))")
#: sidebar label -> the page's title (None: only wait for the chart); pages not registered are skipped
PAGES = {"Train & attack": "Train & attack", "Defenses": "Defenses after training", "Training defenses": None,
         "Analyses": None}
#: Streamlit marks the app element while a script run is in progress
RUNNING = "() => document.querySelector('[data-testid=stApp]')?.dataset.testScriptState === 'running'"
IDLE = "() => document.querySelector('[data-testid=stApp]')?.dataset.testScriptState !== 'running'"
#: the Defenses page's label while a new value shows draw 1 alone; only its alerts are read
#: (not the whole page's text: cheap enough to poll every 10 ms without slowing the page it times)
ONE_DRAW = ("[...document.querySelectorAll('[data-testid=stAlert]')]"
            ".some(e => e.textContent.includes('the rest are computing'))")
#: a step's first numbers are on screen: draw 1's (the label is filled in after the cards) or the whole run ended
FIRST_NUMBERS = f"() => {ONE_DRAW} || {IDLE[6:]}"
#: a step's full numbers are on screen: the run ended (its rerun with every draw too) and no label is left
FULL_NUMBERS = f"() => !({ONE_DRAW}) && {IDLE[6:]}"
PAGE_TARGET_S, SLIDER_TARGET_S, DEMO_TARGET_RATIO = 1.0, 0.25, 1.1
#: --slider-mechanism: (the radio's label, the name the output's keys carry)
SLIDERS = {"gpm": ("Gaussian (weights)", "gaussian_sigma"), "dirichlet": ("Dirichlet (outputs)", "dirichlet_k")}


#: how to put Playwright into the project's interpreter (any interpreter that has it runs these scripts)
PLAYWRIGHT_INSTALL = ".venv/bin/pip install playwright==1.65.2"


def chromium_path(chromium: str) -> str | None:
    """The Chromium to launch for ``--chromium`` (a command on the PATH or a file), or None after printing why the
    check cannot run — "skipped: …" when Playwright's package or that Chromium is missing. The browser checks
    (this one, bench/presenter.py, bench/class_load.py) then exit 0: no browser is not a failure of the app."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(f"skipped: the playwright package is not installed ({PLAYWRIGHT_INSTALL})")
        return None
    found = shutil.which(chromium) or (chromium if Path(chromium).exists() else None)
    if found is None:
        print(f"skipped: no Chromium at {chromium}")
    return found


def median(values: list[float]) -> float | None:
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def load_note() -> str:
    """How loaded the machine was: timings on a loaded machine are upper bounds, and say so."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    state = "measured under load (other jobs running)" if load > cores else "machine not overloaded"
    return f"{state}: 1-minute load average {load:.1f} on {cores} cores"


def cli_seconds(python: str, task: str = "image", preset: str = "quick") -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -m core run`` for FFNN then RNN of the demo's preset, from an
    empty cache (the same two runs the Home demo submits); CPU: user + system of those processes."""
    import resource
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mia_bench_cli_") as tmp:
        env = dict(os.environ, MIA_CACHE_DIR=tmp)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.time()
        for arch in ("ffnn", "rnn"):
            subprocess.run([python, "-m", "core", "run", "--task", task, "--arch", arch, "--preset", preset, "--quiet",
                            "--out", str(Path(tmp) / f"{arch}.json")], cwd=ROOT, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        wall = time.time() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree(root: int) -> list[int]:
    """``root`` and every process below it (from /proc; empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def cpu_seconds(pids: list[int]) -> float | None:
    """User + system CPU seconds of processes ``pids`` so far (None without /proc). Processes that
    ended are not counted (Chromium keeps its renderer for the session; the server its workers)."""
    if not Path("/proc/self/stat").exists():
        return None
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / _TICK


def split_cpu(server: "subprocess.Popen | None") -> tuple[float | None, float | None]:
    """(browser, server) CPU seconds so far: the app server's process tree when this script started
    it, and every other process under this one (Playwright's driver and Chromium). CPU time is the
    work a page open costs, which the machine's load inflates far less than it inflates wall time."""
    mine = os.getpid()
    server_tree = set(_tree(server.pid)) if server is not None else set()
    browser = [pid for pid in _tree(mine) if pid != mine and pid not in server_tree]
    return cpu_seconds(browser), (cpu_seconds(sorted(server_tree)) if server is not None else None)


def free_port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


def serve(port: int) -> subprocess.Popen:
    streamlit = ROOT / ".venv" / "bin" / "streamlit"
    proc = subprocess.Popen([str(streamlit), "run", "app.py", "--server.headless", "true", "--server.port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the app did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an app already running (default: start one)")
    parser.add_argument("--port", type=int, default=8597)
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--visits", type=int, default=3, help="visits per page (the first is cold)")
    parser.add_argument("--pages", default=",".join(PAGES),
                        help="the pages to time, comma-separated sidebar labels (empty: none, e.g. with --slider alone)")
    parser.add_argument("--demo", action="store_true", help="time the Home page's demo click → results")
    parser.add_argument("--task", default="image", help="the task the Train & attack page shows (?task=)")
    parser.add_argument("--chart-timeout", type=float, default=60, help="seconds to wait for a page's first chart")
    parser.add_argument("--slider", action="store_true", help="time slider steps on the Defenses page")
    parser.add_argument("--slider-mechanism", choices=sorted(SLIDERS), default="gpm",
                        help="the slider --slider times: gpm (σ, the default) or dirichlet (k)")
    parser.add_argument("--slider-mode", choices=("alt", "right"), default="alt",
                        help="alt: right, left, right … (every other step returns to a value computed before); "
                             "right: every step one stop right, to a value not computed before")
    parser.add_argument("--steps", type=int, default=6, help="slider steps to time")
    parser.add_argument("--no-cli", action="store_true", help="with --demo: do not time the CLI for the ratio")
    parser.add_argument("--training-defense", metavar="LABEL",
                        help="pick this defense on the Training defenses page before timing it (e.g. 'L2 penalty λ': "
                             "the page then opens on it, and draws a chart if that sweep is cached)")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"),
                        help="the project's interpreter, for the CLI's time")
    args = parser.parse_args()
    chromium = chromium_path(args.chromium)
    if chromium is None:
        return 0
    from playwright.sync_api import sync_playwright

    server = None
    url = args.url
    if url is None:
        port = free_port(args.port)
        t = time.time()
        server = serve(port)
        url = f"http://127.0.0.1:{port}"
        startup = time.time() - t
    else:
        startup = None
    out: dict = {"url": url, "server_start_s": startup, "pages": {}}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            t = time.time()
            page.goto(url + "/")
            page.wait_for_selector("h1:has-text('MIA Explorer')", timeout=120_000)
            out["home_first_load_s"] = round(time.time() - t, 2)
            sidebar = page.locator("[data-testid=stSidebar]")

            def go_home() -> float:
                t = time.time()
                sidebar.get_by_role("link", name="Home", exact=True).click()
                page.wait_for_selector("h1:has-text('MIA Explorer')", timeout=60_000)
                page.wait_for_timeout(300)
                return time.time() - t

            if args.demo:
                page.evaluate(MARK_OLD)
                t = time.time()
                page.wait_for_selector("button:has-text('Run the image demo'), button:has-text('Open the image demo')",
                                       timeout=120_000)
                button = page.get_by_role("button", name="▶ Run the image demo")
                if button.count() == 0:
                    out["demo"] = "skipped: the image demo is cached already (use an empty MIA_CACHE_DIR)"
                else:
                    c0 = split_cpu(server)
                    button.click()
                    page.wait_for_selector("h1:has-text('Train & attack')", timeout=120_000)
                    out["demo_click_to_page_s"] = round(time.time() - t, 2)
                    # every architecture's results (partial results say what is "still to come")
                    page.wait_for_function("() => [...document.querySelectorAll('h3')].some(h => h.innerText === "
                                           "'Overview') && !document.body.innerText.includes('still to come')",
                                           timeout=3_600_000, polling=250)
                    page.wait_for_function(NEW_CHART, timeout=60_000)
                    out["demo_click_to_results_s"] = round(time.time() - t, 1)
                    # the work behind it (server, its training worker, browser): comparable with the CLI's
                    # CPU on a shared machine, where the two halves' wall times see different loads
                    out["demo_cpu_s"] = _cpu_delta(c0, split_cpu(server))
                go_home()

            if args.training_defense:  # the page keeps the defense picked last (ui.widgets.remembered)
                sidebar.get_by_role("link", name="Training defenses", exact=True).click()
                page.get_by_text(args.training_defense, exact=True).click(timeout=60_000)
                page.wait_for_timeout(500)
                page.wait_for_function(IDLE, timeout=60_000)
                out["training_defense"] = args.training_defense
            timed = [p.strip() for p in args.pages.split(",") if p.strip()]
            for label, title in PAGES.items():
                if label not in timed:
                    continue
                link = sidebar.get_by_role("link", name=label, exact=True)
                if link.count() == 0:
                    continue
                times, cpu_first, cpu_page = [], [], []
                for _ in range(args.visits):
                    go_home()
                    page.wait_for_function(IDLE, timeout=60_000)
                    page.evaluate(MARK_OLD)
                    c0 = split_cpu(server)
                    t = time.time()
                    link.click()
                    if title:
                        page.wait_for_selector(f"h1:has-text('{title}')", timeout=120_000)
                    try:
                        page.wait_for_function(NEW_CHART, timeout=args.chart_timeout * 1000)
                        times.append(round(time.time() - t, 2))
                    except Exception:  # a page that draws no chart for what is cached
                        times.append(None)
                        break
                    c1 = split_cpu(server)
                    # the whole page: its script run ended and the browser drew the rest (0.5 s quiet)
                    page.wait_for_function(IDLE, timeout=60_000)
                    page.wait_for_timeout(500)
                    c2 = split_cpu(server)
                    cpu_first.append(_cpu_delta(c0, c1))
                    cpu_page.append(_cpu_delta(c0, c2))
                out["pages"][label] = {"cold_s": times[0], "warm_s": times[1:],
                                       "cpu_to_first_chart_s": cpu_first, "cpu_whole_page_s": cpu_page}
            if args.slider and sidebar.get_by_role("link", name="Defenses", exact=True).count():
                label, name = SLIDERS[args.slider_mechanism]
                out["slider"] = {"mechanism": args.slider_mechanism, "mode": args.slider_mode, "key": name}
                try:
                    (out[f"{name}_step_s"], out[f"{name}_step_to_run_start_s"], out[f"{name}_missed_presses"],
                     out[f"{name}_first_numbers_s"], out[f"{name}_one_draw_first"]) = slider_steps(
                        page, sidebar, label, args.steps, args.chart_timeout, args.slider_mode)
                except Exception as exc:  # a page that did not offer the slider in time: say so, keep the rest
                    out[f"{name}_step_s"] = f"not measured: {type(exc).__name__}: {str(exc).splitlines()[0]}"
            # the same page again through a deep link (a full page load)
            t = time.time()
            page.goto(f"{url}/Train_and_attack?task={args.task}")
            try:
                page.wait_for_selector(CHART, timeout=args.chart_timeout * 1000)
                out["deep_link_full_load_s"] = round(time.time() - t, 2)
            except Exception:
                out["deep_link_full_load_s"] = None  # nothing cached for that task
            browser.close()
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
    if args.demo and not args.no_cli and isinstance(out.get("demo_click_to_results_s"), float):
        wall, cpu = cli_seconds(args.python)
        out["cli_same_two_runs_s"], out["cli_cpu_s"] = round(wall, 1), round(cpu, 1)
    out["targets"] = targets(out)
    out["note"] = load_note()
    print(json.dumps(out, indent=1))
    return 0


def slider_steps(page, sidebar, label: str, steps: int, timeout_s: float, mode: str = "alt"
                 ) -> tuple[list[float], list[float | None], int, list[float], list[bool]]:
    """Defenses page, mechanism ``label`` (the radio's text): each slider step (arrow key on the focused thumb) to the
    end of the script run that redraws every number; each step's key press → the run's start (the
    widget's own delay and the message to the server); and how many key presses started no run
    within 3 s (the thumb had lost its focus to a redraw still in progress): such a press is not a
    step — it is counted, and pressed again, instead of being timed as a 3 s step. ``mode`` "alt" steps right,
    left, right …; "right" steps right every time (each step to a stop not visited before; the Dirichlet curve's
    grid holds every fourth stop, so three in four of those are computed by the step).

    Per step two times: to the first numbers on screen (draw 1's, labelled "1 of N draws — the rest are
    computing", where the page shows them first; else the whole run's) and to the full numbers (the run ended,
    and its rerun with every draw too: no label left) — the first list returned is the latter (the step's time);
    and whether the step showed draw 1 first."""
    sidebar.get_by_role("link", name="Defenses", exact=True).click()
    page.wait_for_selector("h1:has-text('Defenses after training')", timeout=120_000)
    page.get_by_text(label, exact=True).click(timeout=timeout_s * 1000)
    page.wait_for_function(IDLE, timeout=timeout_s * 1000)
    page.wait_for_function(NEW_CHART, timeout=timeout_s * 1000)
    thumb = page.locator("[data-testid=stSlider] input[type=range]").first  # the page's only slider
    thumb.wait_for(timeout=timeout_s * 1000)
    times, starts, missed, firsts, one_draw = [], [], 0, [], []
    for i in range(steps):
        for _ in range(3):
            thumb.focus()
            before = thumb.input_value()
            t = time.time()
            page.keyboard.press("ArrowLeft" if i % 2 and mode == "alt" else "ArrowRight")
            try:
                page.wait_for_function(RUNNING, timeout=3000, polling=10)
                start = round(time.time() - t, 3)
                break
            except Exception:  # no run seen in 3 s
                if thumb.input_value() != before:  # the slider moved: a step, however slow (timed as one)
                    start = None
                    break
                missed += 1  # the slider did not move: the press never reached it
        else:
            raise RuntimeError("three key presses in a row started no script run")
        starts.append(start)
        page.wait_for_function(FIRST_NUMBERS, timeout=timeout_s * 1000, polling=10)
        firsts.append(round(time.time() - t, 3))
        one_draw.append(bool(page.evaluate(f"() => {ONE_DRAW}")))
        page.wait_for_function(FULL_NUMBERS, timeout=timeout_s * 1000, polling=10)
        times.append(round(time.time() - t, 3))
    return times, starts, missed, firsts, one_draw


def _cpu_delta(before: tuple, after: tuple) -> dict | None:
    """{"browser": s, "server": s} of CPU spent between two :func:`split_cpu` readings (the 0.5 s
    pause after a page is included: idle processes spend next to nothing)."""
    if before[0] is None:
        return None
    return {"browser": round(after[0] - before[0], 2),
            "server": None if before[1] is None else round(after[1] - before[1], 2)}


def targets(out: dict) -> dict:
    """Every figure against its target (None: not measured in this call)."""
    rows = {}
    for label, r in out.get("pages", {}).items():
        warm = median(r.get("warm_s") or [])
        row = {"value": warm, "target": PAGE_TARGET_S, "met": None if warm is None else warm <= PAGE_TARGET_S}
        cpu = [c for c in (r.get("cpu_to_first_chart_s") or [])[1:] if c]  # the warm visits
        if cpu:  # what the open cost in CPU (browser, server): the part of the wall time load cannot explain
            row["cpu_to_first_chart_warm_median_s"] = {k: median([c[k] for c in cpu if c[k] is not None])
                                                       for k in ("browser", "server")}
        rows[f"{label}: first chart, warm median (s)"] = row
    slider = out.get("slider") or {}
    for name, what in (("gaussian_sigma", "Gaussian σ"), ("dirichlet_k", "Dirichlet k")):
        steps = out.get(f"{name}_step_s")
        firsts = out.get(f"{name}_first_numbers_s")
        if isinstance(firsts, list) and firsts:
            m = median(firsts)
            rows[f"{what} step, first numbers on screen, median (s)"] = {
                "value": m, "worst": max(firsts), "target": SLIDER_TARGET_S, "met": m <= SLIDER_TARGET_S,
                "mode": slider.get("mode"), "steps_showing_draw_1_first": sum(out.get(f"{name}_one_draw_first") or [])}
        if isinstance(steps, list) and steps:
            m = median(steps)
            rows[f"{what} step, all draws' numbers on screen, median (s)"] = {
                "value": m, "worst": max(steps), "target": SLIDER_TARGET_S, "met": m <= SLIDER_TARGET_S,
                # alt: the first step goes to a value not computed before, the rest alternate between two values
                # computed once (redraw, not compute); right: every step to a value not visited before
                "mode": slider.get("mode"), "first_step_new_value_s": steps[0],
                "missed_presses": out.get(f"{name}_missed_presses")}
    demo, cli = out.get("demo_click_to_results_s"), out.get("cli_same_two_runs_s")
    if isinstance(demo, float) and cli:
        ratio = demo / cli
        rows["demo click → results / CLI same two runs"] = {"value": round(ratio, 2), "demo_s": demo, "cli_s": cli,
                                                           "target": DEMO_TARGET_RATIO, "met": ratio <= DEMO_TARGET_RATIO}
        demo_cpu, cli_cpu = out.get("demo_cpu_s"), out.get("cli_cpu_s")
        if demo_cpu and demo_cpu.get("server") is not None and cli_cpu:
            total = demo_cpu["server"] + demo_cpu["browser"]
            rows["demo CPU (server + worker + browser) / CLI CPU"] = {"value": round(total / cli_cpu, 2),
                                                                      "demo_cpu_s": round(total, 1), "cli_cpu_s": cli_cpu}
    return rows


if __name__ == "__main__":
    sys.exit(main())

"""A class on one server: N browser sessions at once on the Defenses page (a load test, never a timed test).

Starts the app (or uses ``--url``), then

1. **reference**: one session alone walks the slider over a window of stops and records, per value, the numbers
   its cards show (the page's ``stMetric`` texts under the value's heading);
2. **class**: N sessions (headless Chromium, one process each) open the page at once, each clicks the grid tab's
   "Measure" (a small worker job, the same for every session: it is shared, not queued N times) and walks the
   same window, each from another phase (so neighbours step to different values at the same moment), for
   ``--seconds``.

It reports page exceptions and browser errors (goal 0), every step whose numbers differ from the reference's for
the same value (lost or mixed results, goal 0), each session's step latency (key press → the run that redraws
every number ended) median and 95th percentile, the jobs each session saw in its sidebar, and the server's memory
(resident set of its process tree, workers included: peak and last). Prints one JSON object.

``--tiny`` serves the image task's quick preset at the test suite's tiny size (``tests/shared_runs.TINY_IMAGE``),
trained first into ``$MIA_CACHE_DIR`` if missing: a load test of the server, not of the model sizes. Without it,
the quick preset's runs must be in the cache (``python -m core run --task image --arch ffnn --preset quick`` and
``--arch rnn``).

    MIA_CACHE_DIR=/tmp/class-cache nice -n 10 .venv/bin/python bench/class_load.py --tiny --sessions 4 --seconds 60

Needs Playwright (``.venv/bin/pip install playwright==1.65.2``) and a Chromium (``/usr/bin/chromium``).
On a machine whose load average exceeds its cores the output says "measured under load".
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_browser import CHROMIUM_ARGS, FULL_NUMBERS, IDLE, NEW_CHART, RUNNING, SLIDERS, _tree, free_port, load_note  # noqa: E402

#: the numbers a step shows: the value's heading and every card (label, value, delta) of the main area
READ_NUMBERS = """() => {
  const main = document.querySelector('[data-testid=stMain]') || document;
  const head = [...main.querySelectorAll('h3')].map(h => h.textContent.trim()).find(t => t.includes(' = ')) || '';
  const cards = [...main.querySelectorAll('[data-testid=stMetric]')].map(m => m.innerText.replace(/\\s+/g, ' ').trim());
  return {value: head, cards: cards};
}"""
EXCEPTIONS = "() => document.querySelectorAll('[data-testid=stException]').length"
SIDEBAR_JOBS = """() => {
  const side = document.querySelector('[data-testid=stSidebar]');
  return side ? side.innerText : '';
}"""


# ---------------------------------------------------------------------------- the server
def serve(port: int, tiny: bool) -> subprocess.Popen:
    """The app on 127.0.0.1:``port`` (``--tiny``: through :func:`tiny_server` in a process of its own)."""
    if tiny:
        cmd = [str(ROOT / ".venv/bin/python"), __file__, "--serve-tiny", str(port)]
    else:
        cmd = [str(ROOT / ".venv/bin/streamlit"), "run", "app.py", "--server.headless", "true",
               "--server.port", str(port)]
    log = open(Path(tempfile.gettempdir()) / f"class_load_server_{port}.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 1800  # --tiny trains its runs first
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app ended (exit {proc.returncode}); see {log.name}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the app did not start")


def tiny_server(port: int) -> None:
    """Serve the app with the image quick preset at the test suite's tiny size (its runs trained first)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    os.chdir(ROOT)
    from shared_runs import TINY_IMAGE

    from core.experiment.pipeline import cached_summary, run_experiment
    from core.tasks import get_task

    task = get_task("image")
    task.presets["quick"] = {**task.presets["quick"], **TINY_IMAGE}
    for arch in ("ffnn", "rnn"):
        cfg = task.make_config(arch, "quick")
        if cached_summary(cfg) is None:
            run_experiment(cfg)
    from streamlit.web import cli as stcli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true", "--server.port", str(port)]
    stcli.main()


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (the server and its worker processes), MiB."""
    total = 0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


# ---------------------------------------------------------------------------- one browser session
def session(url: str, chromium: str, label: str, positions: list[int], deadline: float, start_at: float,
            measure: bool, timeout_s: float) -> dict:
    """One browser session: open the Defenses page, pick the mechanism, (``measure``) click "Measure", then step
    the slider through ``positions`` (stops relative to the default, repeated) until ``deadline``."""
    from playwright.sync_api import sync_playwright

    out: dict = {"steps": [], "errors": [], "exceptions": 0, "sidebar": ""}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--headless", *CHROMIUM_ARGS])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda e: out["errors"].append(str(e)[:300]))
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_function(IDLE, timeout=timeout_s * 1000)
        while time.time() < start_at:
            time.sleep(0.05)
        sidebar = page.locator("[data-testid=stSidebar]")
        sidebar.get_by_role("link", name="Defenses", exact=True).click()
        page.wait_for_selector("h1:has-text('Defenses after training')", timeout=timeout_s * 1000)
        page.get_by_text(label, exact=True).click(timeout=timeout_s * 1000)
        page.wait_for_function(IDLE, timeout=timeout_s * 1000)
        page.wait_for_function(NEW_CHART, timeout=timeout_s * 1000)
        page.wait_for_function(FULL_NUMBERS, timeout=timeout_s * 1000, polling=20)
        out["steps"].append({"position": 0, "s": None, **page.evaluate(READ_NUMBERS)})
        if measure:
            button = page.get_by_role("button", name="Measure", exact=False).first
            if button.count():
                button.click()
                page.wait_for_function(IDLE, timeout=timeout_s * 1000)
                out["measured"] = True
        thumb = page.locator("[data-testid=stSlider] input[type=range]").first  # the page's only slider
        position, i = 0, 0
        while time.time() < deadline:
            target = positions[i % len(positions)]
            i += 1
            if target == position:
                continue
            key = "ArrowRight" if target > position else "ArrowLeft"
            thumb.focus()
            t = time.time()
            page.keyboard.press(key)
            try:
                page.wait_for_function(RUNNING, timeout=3000, polling=10)
            except Exception:  # noqa: BLE001 — the press did not reach the slider (a redraw took its focus): again
                i -= 1
                continue
            position += 1 if key == "ArrowRight" else -1
            page.wait_for_function(FULL_NUMBERS, timeout=timeout_s * 1000, polling=10)
            out["steps"].append({"position": position, "s": round(time.time() - t, 3), **page.evaluate(READ_NUMBERS)})
            out["exceptions"] = max(out["exceptions"], page.evaluate(EXCEPTIONS))
        out["sidebar"] = page.evaluate(SIDEBAR_JOBS)
        out["exceptions"] = max(out["exceptions"], page.evaluate(EXCEPTIONS))
        browser.close()
    return out


def zigzag(width: int, phase: int, length: int = 64) -> list[int]:
    """Stops 0 → width → 0 → … (relative to the slider's default), started ``phase`` stops into the walk."""
    cycle = list(range(0, width + 1)) + list(range(width - 1, 0, -1))
    return [cycle[(k + phase) % len(cycle)] for k in range(length)]


def percentile(values: list[float], q: float) -> float | None:
    v = sorted(values)
    if not v:
        return None
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return round(v[lo] + (v[hi] - v[lo]) * (k - lo), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an app already running (default: start one)")
    parser.add_argument("--port", type=int, default=8598)
    parser.add_argument("--tiny", action="store_true", help="serve the quick preset at the tests' tiny size")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the sessions step at once")
    parser.add_argument("--width", type=int, default=3, help="the stops of the window each session walks")
    parser.add_argument("--mechanism", choices=sorted(SLIDERS), default="dirichlet")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for any one page state")
    parser.add_argument("--serve-tiny", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--session", help=argparse.SUPPRESS)  # JSON arguments of one session (a child process)
    args = parser.parse_args()
    if args.serve_tiny:
        tiny_server(args.serve_tiny)
        return 0
    if args.session:
        a = json.loads(args.session)
        print(json.dumps(session(**a)))
        return 0
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("skipped: Playwright is not installed (.venv/bin/pip install playwright==1.65.2)")
        return 0
    if not Path(args.chromium).exists():
        print(f"skipped: no Chromium at {args.chromium}")
        return 0
    label = SLIDERS[args.mechanism][0]
    server = None
    url = args.url
    if url is None:
        port = free_port(args.port)
        server = serve(port, args.tiny)
        url = f"http://127.0.0.1:{port}"
    memory: list[float] = []
    try:
        def run_sessions(n: int, seconds: float, measure: bool) -> list[dict]:
            start_at = time.time() + 15  # every browser up and on the Home page first: then all open the page at once
            procs = []
            for i in range(n):
                a = {"url": url, "chromium": args.chromium, "label": label,
                     "positions": zigzag(args.width, 0 if n == 1 else i), "start_at": start_at,
                     "deadline": start_at + seconds, "measure": measure, "timeout_s": args.timeout}
                procs.append(subprocess.Popen([sys.executable, __file__, "--session", json.dumps(a)],
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            results = []
            while any(p.poll() is None for p in procs):
                if server is not None:
                    memory.append(rss_mb(server.pid))
                time.sleep(1.0)
            for p in procs:
                stdout, stderr = p.communicate()
                try:
                    results.append(json.loads(stdout.strip().splitlines()[-1]))
                except (ValueError, IndexError):
                    results.append({"steps": [], "errors": [f"session failed: {stderr.strip()[-500:]}"],
                                    "exceptions": 0, "sidebar": ""})
            return results

        # 1. one session alone: the numbers of every value of the window
        alone = run_sessions(1, seconds=max(20.0, 6.0 * 2 * args.width), measure=False)[0]
        reference: dict[str, list[str]] = {}
        for s in alone["steps"]:
            reference.setdefault(s["value"], s["cards"])
        # 2. the class
        results = run_sessions(args.sessions, args.seconds, measure=True)
    finally:
        if server is not None:
            last = rss_mb(server.pid)
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
    mixed, unknown = [], 0
    per_session = []
    for i, r in enumerate(results):
        lat = [s["s"] for s in r["steps"] if s["s"] is not None]
        for s in r["steps"]:
            want = reference.get(s["value"])
            if not s["cards"] or not s["value"]:  # a step that drew no numbers: lost
                mixed.append({"session": i, "value": s["value"], "got": s["cards"], "alone": want})
            elif want is None:
                unknown += 1
            elif s["cards"] != want:
                mixed.append({"session": i, "value": s["value"], "got": s["cards"], "alone": want})
        per_session.append({"steps": len(lat), "median_s": round(statistics.median(lat), 3) if lat else None,
                            "p95_s": percentile(lat, 0.95), "exceptions": r["exceptions"],
                            "browser_errors": r["errors"], "measured": r.get("measured", False),
                            "sidebar_lists_a_job": "Your jobs" in r["sidebar"]})
    all_lat = [s["s"] for r in results for s in r["steps"] if s["s"] is not None]
    out = {
        "sessions": args.sessions, "seconds": args.seconds, "mechanism": args.mechanism, "tiny": args.tiny,
        "reference_values": sorted(reference), "alone_median_s": round(statistics.median(
            [s["s"] for s in alone["steps"] if s["s"] is not None]), 3) if len(alone["steps"]) > 1 else None,
        "exceptions": sum(p["exceptions"] for p in per_session) + sum(len(p["browser_errors"]) for p in per_session),
        "mixed_or_lost": len(mixed), "steps_at_values_not_in_reference": unknown,
        "median_s": round(statistics.median(all_lat), 3) if all_lat else None, "p95_s": percentile(all_lat, 0.95),
        "per_session": per_session, "server_rss_mb": {"peak": round(max(memory), 1) if memory else None,
                                                      "last": round(last, 1) if server is not None else None},
        "load": load_note(), "mixed": mixed[:5],
    }
    print(json.dumps(out, indent=1))
    return 0 if out["exceptions"] == 0 and not mixed else 1


if __name__ == "__main__":
    sys.exit(main())

"""A class on one server: N browser sessions at once on the Defenses page (a load test, never a timed test).

Starts the app (or uses ``--url``), then

1. **reference**: one session alone walks the slider over a window of stops and records, per value, the numbers
   its cards show (the page's ``stMetric`` texts under the value's heading);
2. **class**: N sessions open the page, each clicks the grid tab's "Measure" (a small worker job, the same for
   every session: it is shared, not queued N times) and, once every session is open, all walk the same window,
   each from another phase (so neighbours step to different values at the same moment), for ``--seconds``.

Every session is a browser context (its own cookies and storage: its own Streamlit session) of **one** headless
Chromium, driven from one asyncio loop: N Chromium processes, each with its own browser, GPU and network
processes, would load a small machine's cores before the server is loaded, and the test would measure the browsers.
The opens are staggered (``--stagger`` seconds apart:
a class does not press Enter in the same millisecond, and N cold opens at once measure the browsers). A step
waits on the page's own events, not on polling or fixed sleeps: a script installed in every page counts the
script runs that start (the app element's ``data-test-script-state`` turning ``running``, seen by a
MutationObserver) and notes the time of the last key press; a step presses, waits until a new run started (else
the press missed the slider and is pressed again), then until every number is drawn. Its latency is the page's
own clock from the key press to the moment the last number was drawn.

It reports page exceptions and browser errors (goal 0), sessions that never opened the page, every step whose
numbers differ from the reference's for the same value (lost or mixed results, goal 0), the step latency median
and 95th percentile per class size and per session, the jobs each session saw in its sidebar, and the server's
memory (resident set of its process tree, workers included: peak and last), one block per class size
(``--sessions 4,8,16`` runs the three in turn on one server, one reference). Prints one JSON object.

``--tiny`` serves the image task's quick preset at the test suite's tiny size (``tests/shared_runs.TINY_IMAGE``),
trained first into ``$MIA_CACHE_DIR`` if missing: a load test of the server, not of the model sizes. Without it,
the quick preset's runs must be in the cache (``python -m core run --task image --arch ffnn --preset quick`` and
``--arch rnn``).

    MIA_CACHE_DIR=/tmp/class-cache nice -n 10 .venv/bin/python bench/class_load.py --tiny --sessions 4,8,16 --seconds 60

Needs Playwright (``app_browser.PLAYWRIGHT_INSTALL``, or any folder of it on ``PYTHONPATH``) and a
Chromium (``/usr/bin/chromium``); without either it prints ``skipped: ...`` and exits 0. On a machine whose load average exceeds its cores the output says "measured
under load".
"""
from __future__ import annotations

import argparse
import asyncio
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
from app_browser import (  # noqa: E402
    CHROMIUM_ARGS,
    FULL_NUMBERS,
    IDLE,
    NEW_CHART,
    SLIDERS,
    _tree,
    chromium_path,
    free_port,
    load_note,
)

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
#: installed in every page before its own scripts: ``__runs`` counts the script runs that started (every change
#: of the app element's data-test-script-state to 'running', changes coalesced into one callback included: the
#: value after a record is the next record's old value), ``__pressed`` is the page's time of the last key press
WATCH = """(() => {
  window.__runs = 0;
  window.__pressed = 0;
  new MutationObserver(records => {
    records = records.filter(r => r.target.dataset && r.target.dataset.testid === 'stApp');
    records.forEach((r, i) => {
      const now = i + 1 < records.length ? records[i + 1].oldValue : r.target.getAttribute(r.attributeName);
      if (now === 'running' && r.oldValue !== 'running') window.__runs++;
    });
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
  document.addEventListener('keydown', () => { window.__pressed = performance.now(); }, true);
})();"""
#: resolves with the page's time at which the condition (a function's source) first held, checked now and on
#: every change of the page (a MutationObserver: no polling); rejects after ``ms``
WHEN = """([cond, ms]) => new Promise((resolve, reject) => {
  const test = (0, eval)('(' + cond + ')');
  if (test()) { resolve(performance.now()); return; }
  const obs = new MutationObserver(() => {
    if (test()) { obs.disconnect(); clearTimeout(timer); resolve(performance.now()); }
  });
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const timer = setTimeout(() => { obs.disconnect(); reject(new Error('not within ' + ms + ' ms: ' + cond)); }, ms);
})"""
#: how long a key press may take to start a run before it counts as missed (a redraw took the slider's focus)
PRESS_S = 3.0


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


# ---------------------------------------------------------------------------- one session: a browser context
async def when(page, condition: str, timeout_s: float) -> float:
    """The page's time (ms) at which ``condition`` (a JavaScript function's source) first held (:data:`WHEN`)."""
    return await page.evaluate(WHEN, [condition, int(timeout_s * 1000)])


class Class:
    """What the sessions of one class share: every session signals when it is open (or gave up opening), and
    all step from the moment the last one did, for ``seconds``."""

    def __init__(self, n: int, seconds: float) -> None:
        self.waiting, self.seconds = n, seconds
        self.all_open = asyncio.Event()
        self.deadline = 0.0

    def opened(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.deadline = time.time() + self.seconds
            self.all_open.set()


async def session(browser, url: str, label: str, positions: list[int], delay: float, group: Class,
                  measure: bool, timeout_s: float) -> dict:
    """One session in a context of its own: (after ``delay``) open the Home page, go to Defenses, pick the
    mechanism, (``measure``) click "Measure"; once the whole class is open, step the slider through
    ``positions`` (stops relative to the default, repeated) until the class's deadline."""
    out: dict = {"steps": [], "errors": [], "exceptions": 0, "sidebar": "", "opened": False, "open_s": None,
                 "missed_presses": 0}
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(timeout_s * 1000)
    await context.add_init_script(WATCH)
    page = await context.new_page()
    page.on("pageerror", lambda e: out["errors"].append(str(e)[:300]))
    try:
        await asyncio.sleep(delay)  # staggered: session i opens i × --stagger seconds after the first
        t = time.time()
        try:
            await page.goto(url)
            await page.wait_for_selector("[data-testid=stApp]")
            await when(page, IDLE, timeout_s)
            await page.locator("[data-testid=stSidebar]").get_by_role("link", name="Defenses", exact=True).click()
            await page.wait_for_selector("h1:has-text('Defenses after training')")
            await page.get_by_text(label, exact=True).click()
            await when(page, IDLE, timeout_s)
            await when(page, NEW_CHART, timeout_s)
            await when(page, FULL_NUMBERS, timeout_s)
            out["steps"].append({"position": 0, "s": None, **await page.evaluate(READ_NUMBERS)})
            if measure:
                button = page.get_by_role("button", name="Measure", exact=False).first
                if await button.count():
                    runs = await page.evaluate("() => window.__runs")
                    await button.click()
                    await when(page, f"() => window.__runs > {runs} && ({IDLE})()", timeout_s)
                    out["measured"] = True
            out["opened"], out["open_s"] = True, round(time.time() - t, 2)
        except Exception as exc:  # noqa: BLE001 — a session that cannot open is reported, the class goes on
            out["errors"].append(f"did not open the page: {str(exc).splitlines()[0][:300]}")
        finally:
            group.opened()
        await group.all_open.wait()
        if not out["opened"]:
            return out
        thumb = page.locator("[data-testid=stSlider] input[type=range]").first  # the page's only slider
        position, i = 0, 0
        while time.time() < group.deadline:
            target = positions[i % len(positions)]
            i += 1
            if target == position:
                continue
            key = "ArrowRight" if target > position else "ArrowLeft"
            runs = await page.evaluate("() => window.__runs")
            await thumb.focus()
            await page.keyboard.press(key)
            try:  # a run started by this press: else the press missed the slider (a redraw took its focus)
                await when(page, f"() => window.__runs > {runs}", PRESS_S)
            except Exception:  # noqa: BLE001
                out["missed_presses"] += 1
                i -= 1
                continue
            position += 1 if key == "ArrowRight" else -1
            done = await when(page, FULL_NUMBERS, timeout_s)
            pressed = await page.evaluate("() => window.__pressed")
            out["steps"].append({"position": position, "s": round((done - pressed) / 1000, 3),
                                 **await page.evaluate(READ_NUMBERS)})
            out["exceptions"] = max(out["exceptions"], await page.evaluate(EXCEPTIONS))
        out["sidebar"] = await page.evaluate(SIDEBAR_JOBS)
        out["exceptions"] = max(out["exceptions"], await page.evaluate(EXCEPTIONS))
    except Exception as exc:  # noqa: BLE001 — a step that timed out ends this session, not the class
        out["errors"].append(f"session ended: {str(exc).splitlines()[0][:300]}")
    finally:
        await context.close()
    return out


async def run_class(browser, url: str, label: str, n: int, seconds: float, width: int, stagger: float,
                    measure: bool, timeout_s: float, server: subprocess.Popen | None, memory: list[float]) -> list[dict]:
    """``n`` sessions of one browser at once (one class), the server's memory sampled every second meanwhile."""
    group = Class(n, seconds)
    tasks = [asyncio.create_task(session(browser, url, label, zigzag(width, 0 if n == 1 else i), i * stagger, group,
                                         measure, timeout_s)) for i in range(n)]
    while not all(t.done() for t in tasks):
        if server is not None:
            memory.append(rss_mb(server.pid))
        await asyncio.wait(tasks, timeout=1.0)
    return [t.result() for t in tasks]


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


def summary(n: int, results: list[dict], reference: dict[str, list[str]], memory: list[float]) -> dict:
    """One class's block of the output: exceptions, sessions that never opened, lost or mixed steps against the
    reference, latency median / p95 (all steps and per session), the server's memory while it ran."""
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
        per_session.append({"opened": r["opened"], "open_s": r["open_s"], "steps": len(lat),
                            "missed_presses": r["missed_presses"],
                            "median_s": round(statistics.median(lat), 3) if lat else None,
                            "p95_s": percentile(lat, 0.95), "exceptions": r["exceptions"],
                            "browser_errors": r["errors"], "measured": r.get("measured", False),
                            "sidebar_lists_a_job": "Your jobs" in r["sidebar"]})
    all_lat = [s["s"] for r in results for s in r["steps"] if s["s"] is not None]
    return {"sessions": n, "opened": sum(p["opened"] for p in per_session),
            "exceptions": sum(p["exceptions"] for p in per_session) + sum(len(p["browser_errors"]) for p in per_session),
            "mixed_or_lost": len(mixed), "steps": len(all_lat), "steps_at_values_not_in_reference": unknown,
            "median_s": round(statistics.median(all_lat), 3) if all_lat else None, "p95_s": percentile(all_lat, 0.95),
            "server_rss_mb_peak": round(max(memory), 1) if memory else None, "load": load_note(),
            "per_session": per_session, "mixed": mixed[:5]}


async def load_test(args: argparse.Namespace, url: str, server: subprocess.Popen | None) -> dict:
    from playwright.async_api import async_playwright

    label = SLIDERS[args.mechanism][0]
    sizes = [int(n) for n in str(args.sessions).split(",")]
    out: dict = {"mechanism": args.mechanism, "tiny": args.tiny, "seconds": args.seconds, "stagger_s": args.stagger,
                 "browser": "one Chromium, one context per session"}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=args.chromium, headless=True,
                                          args=["--headless", *CHROMIUM_ARGS])
        try:
            # 1. one session alone: the numbers of every value of the window
            alone = (await run_class(browser, url, label, 1, max(20.0, 6.0 * 2 * args.width), args.width, 0.0,
                                     False, args.timeout, server, []))[0]
            reference: dict[str, list[str]] = {}
            for s in alone["steps"]:
                reference.setdefault(s["value"], s["cards"])
            lat = [s["s"] for s in alone["steps"] if s["s"] is not None]
            out.update({"reference_values": sorted(reference), "alone_steps": len(lat),
                        "alone_median_s": round(statistics.median(lat), 3) if lat else None,
                        "alone_errors": alone["errors"]})
            # 2. each class in turn
            out["classes"] = []
            for n in sizes:
                memory: list[float] = []
                results = await run_class(browser, url, label, n, args.seconds, args.width, args.stagger, True,
                                          args.timeout, server, memory)
                out["classes"].append(summary(n, results, reference, memory))
        finally:
            await browser.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an app already running (default: start one)")
    parser.add_argument("--port", type=int, default=8598)
    parser.add_argument("--tiny", action="store_true", help="serve the quick preset at the tests' tiny size")
    parser.add_argument("--sessions", default="4", help="the class sizes, comma-separated (each in turn): 4,8,16")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long a class steps once all are open")
    parser.add_argument("--stagger", type=float, default=1.0, help="seconds between two sessions' opens")
    parser.add_argument("--width", type=int, default=3, help="the stops of the window each session walks")
    parser.add_argument("--mechanism", choices=sorted(SLIDERS), default="dirichlet")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for any one page state")
    parser.add_argument("--serve-tiny", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_tiny:
        tiny_server(args.serve_tiny)
        return 0
    args.chromium = chromium_path(args.chromium)
    if args.chromium is None:
        return 0
    server = None
    url = args.url
    if url is None:
        port = free_port(args.port)
        server = serve(port, args.tiny)
        url = f"http://127.0.0.1:{port}"
    try:
        out = asyncio.run(load_test(args, url, server))
    finally:
        if server is not None:
            last = rss_mb(server.pid)
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
    out["server_rss_mb_last"] = round(last, 1) if server is not None else None
    print(json.dumps(out, indent=1))
    bad = [c for c in out["classes"] if c["exceptions"] or c["mixed_or_lost"] or c["opened"] < c["sessions"]]
    return 1 if bad or out["alone_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

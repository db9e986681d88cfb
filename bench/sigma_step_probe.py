"""Where a Defenses σ step's time goes, in the browser and on the server (issue 23).

Serves the app (``MIA_CACHE_DIR`` with the image quick runs cached), opens Defenses → Gaussian in
headless Chromium and times slider steps one by one, each after a short pause (a user's pace):

* ``wall``: arrow key → the end of the script run (as ``bench/app_browser.py --slider``);
* ``start``: arrow key → the run's start;
* ``browser_task``: the page's main-thread busy time over the step (Chrome's ``TaskDuration``:
  scripts, style, layout, paint), ``browser_script`` its JavaScript part;
* ``server_cpu``: CPU seconds of the server process over the step.

``--mode alt`` steps right, left, right … (every step after the first returns to a σ computed
before: the cost of redrawing); ``--mode right`` steps right only (a σ not computed before each
time: the cost of computing). ``--plotly`` also times, in a bare page, Plotly drawing the Defenses
page's two charts as the server sends them and as they would be drawn if they started with the
narrow margins figures had before (``l = r = 10``: Plotly's automargin then widens them and draws
the whole figure again).

    MIA_CACHE_DIR=<copy of a cache> /tmp/pwenv/bin/python bench/sigma_step_probe.py --steps 12 [--mode right] [--plotly]

Prints one JSON object: every step, and the medians. A benchmark, not a test (needs Playwright and
Chromium; prints ``skipped: ...`` without them). It imports ``bench/app_browser.py`` for serving and
waiting, and for ``--plotly`` the project (through ``.venv/bin/python``) to get the charts' specs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import app_browser as ab  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: the Defenses page's chart specs as the server sends them (run under the project's interpreter)
SPECS_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=600)
at.query_params["task"] = "image"
at.run()
at.switch_page("app_pages/2_Defenses.py"); at.run()
next(r for r in at.radio if "gpm" in r.options or "Gaussian (weights)" in r.options).set_value("gpm").run()
at.session_state["defenses:below:gpm"] = "Defended outputs' entropy"; at.run()
print(json.dumps([e.proto.spec for e in at.get("plotly_chart")]))
"""

PLOTLY_DRAW = """async ([specs, narrow]) => {
  const out = [];
  for (let k = 0; k < 12; k++) {
    for (const [i, id] of ['a', 'b'].entries()) {
      const s = JSON.parse(specs[i]);
      if (narrow) { s.layout.margin.l = 10; s.layout.margin.r = 10; }
      Plotly.purge(id);
      const t = performance.now();
      await Plotly.newPlot(id, s.data, s.layout, {});
      out.push([i, performance.now() - t]);
    }
  }
  const med = i => { const v = out.filter(o => o[0] == i).slice(2).map(o => o[1]).sort((a, b) => a - b);
                     return v[Math.floor(v.length / 2)]; };
  return [med(0), med(1)];
}"""


def median(values):
    v = sorted(x for x in values if x is not None)
    return None if not v else (v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2)


def plotly_draw_ms(browser, python: str) -> dict:
    """Median ms of Plotly.newPlot for the Defenses charts (curves, entropy), as sent and with narrow margins."""
    got = subprocess.run([python, "-c", SPECS_SCRIPT.format(root=str(ROOT), app=str(ROOT / "app.py"))], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    if got.returncode != 0:
        return {"error": got.stderr.strip().splitlines()[-1] if got.stderr.strip() else f"rc {got.returncode}"}
    specs = json.loads(got.stdout.strip().splitlines()[-1])
    if len(specs) != 2:
        return {"error": f"expected the page's two charts, got {len(specs)}"}
    # the plotly package's own plotly.js (the project's interpreter has it): not the build Streamlit
    # bundles, but the same drawing code, here without Streamlit's React around it
    where = subprocess.run([python, "-c", "import plotly, os; print(os.path.dirname(plotly.__file__))"],
                           capture_output=True, text=True, timeout=120).stdout.strip()
    js = (Path(where) / "package_data" / "plotly.min.js").read_text()
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.set_content("<div id=a style='width:700px'></div><div id=b style='width:700px'></div>")
    page.add_script_tag(content=js)
    sent = page.evaluate(PLOTLY_DRAW, [specs, False])
    narrow = page.evaluate(PLOTLY_DRAW, [specs, True])
    page.close()
    return {"curves_ms": round(sent[0], 1), "entropy_ms": round(sent[1], 1),
            "curves_narrow_margins_ms": round(narrow[0], 1), "entropy_narrow_margins_ms": round(narrow[1], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--mode", choices=("alt", "right"), default="alt")
    parser.add_argument("--pause-ms", type=int, default=400, help="pause before each step (a user's pace)")
    parser.add_argument("--plotly", action="store_true", help="also time Plotly drawing the page's charts alone")
    parser.add_argument("--port", type=int, default=8611)
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: the playwright package is not installed")
        return 0
    if not Path(args.chromium).exists():
        print(f"skipped: no Chromium at {args.chromium}")
        return 0
    port = ab.free_port(args.port)
    server = ab.serve(port)
    out: dict = {"mode": args.mode, "pause_ms": args.pause_ms, "steps": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=ab.CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")

            def metrics() -> dict:
                m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
                return {"browser_task": m["TaskDuration"], "browser_script": m["ScriptDuration"]}

            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("h1:has-text('MIA Explorer')", timeout=120_000)
            sidebar = page.locator("[data-testid=stSidebar]")
            sidebar.get_by_role("link", name="Defenses", exact=True).click()
            page.wait_for_selector("h1:has-text('Defenses after training')", timeout=600_000)
            page.get_by_text("Gaussian (weights)", exact=True).click(timeout=600_000)
            page.wait_for_function(ab.IDLE, timeout=600_000)
            page.wait_for_function(ab.NEW_CHART, timeout=600_000)
            thumb = page.locator("[data-testid=stSlider] input[type=range]").first
            if args.mode == "alt":  # both σ of the alternation computed once, outside the timed steps
                for key in ("ArrowRight", "ArrowLeft"):
                    thumb.focus()
                    page.keyboard.press(key)
                    page.wait_for_timeout(300)
                    page.wait_for_function(ab.IDLE, timeout=600_000, polling=10)
            for i in range(args.steps):
                page.wait_for_timeout(args.pause_ms)
                thumb.focus()
                m0, c0, t = metrics(), ab.cpu_seconds([server.pid]), time.time()
                page.keyboard.press("ArrowLeft" if args.mode == "alt" and i % 2 else "ArrowRight")
                try:
                    page.wait_for_function(ab.RUNNING, timeout=3000, polling=10)
                    start = round(time.time() - t, 3)
                except Exception:
                    start = None
                page.wait_for_function(ab.IDLE, timeout=600_000, polling=10)
                wall = round(time.time() - t, 3)
                m1, c1 = metrics(), ab.cpu_seconds([server.pid])
                out["steps"].append({"wall": wall, "start": start, **{k: round(m1[k] - m0[k], 3) for k in m0},
                                     "server_cpu": None if c0 is None else round(c1 - c0, 3)})
            if args.plotly:
                out["plotly_draw"] = plotly_draw_ms(browser, args.python)
            browser.close()
    finally:
        try:
            os.killpg(server.pid, 15)
        except ProcessLookupError:
            pass
    out["median"] = {k: median([s[k] for s in out["steps"]]) for k in ("wall", "start", "browser_task",
                                                                        "browser_script", "server_cpu")}
    out["note"] = ab.load_note()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

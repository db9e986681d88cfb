"""Browser check of the app: clicks through the pages in headless Chromium and records the time
from each click to the page's first chart (time-to-first-chart), cold (first visit after the
server started) and warm (later visits); with ``--demo``, the time from the Home page's
"Run the image demo" click to the results.

Needs Playwright's Python package and a Chromium (the system one by default); without them it
prints ``skipped: ...`` and exits 0. It does not import the project, so any interpreter with
Playwright runs it:

    /tmp/pwenv/bin/python bench/app_browser.py                      # serves the app itself (port 8597)
    /tmp/pwenv/bin/python bench/app_browser.py --url http://127.0.0.1:8501   # an app already running
    MIA_CACHE_DIR=/tmp/empty /tmp/pwenv/bin/python bench/app_browser.py --demo  # click → results, cold cache

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
    parser.add_argument("--demo", action="store_true", help="time the Home page's demo click → results")
    parser.add_argument("--task", default="image", help="the task the Train & attack page shows (?task=)")
    parser.add_argument("--chart-timeout", type=float, default=60, help="seconds to wait for a page's first chart")
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: the playwright package is not installed")
        return 0
    chromium = shutil.which(args.chromium) or (args.chromium if Path(args.chromium).exists() else None)
    if chromium is None:
        print(f"skipped: no Chromium at {args.chromium}")
        return 0

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
                    button.click()
                    page.wait_for_selector("h1:has-text('Train & attack')", timeout=120_000)
                    out["demo_click_to_page_s"] = round(time.time() - t, 2)
                    # every architecture's results (partial results say what is "still to come")
                    page.wait_for_function("() => [...document.querySelectorAll('h3')].some(h => h.innerText === "
                                           "'Attacks') && !document.body.innerText.includes('still to come')",
                                           timeout=3_600_000, polling=250)
                    page.wait_for_function(NEW_CHART, timeout=60_000)
                    out["demo_click_to_results_s"] = round(time.time() - t, 1)
                go_home()

            for label, title in PAGES.items():
                link = sidebar.get_by_role("link", name=label, exact=True)
                if link.count() == 0:
                    continue
                times = []
                for _ in range(args.visits):
                    go_home()
                    page.evaluate(MARK_OLD)
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
                out["pages"][label] = {"cold_s": times[0], "warm_s": times[1:]}
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
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

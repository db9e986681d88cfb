"""Screenshots of the Your model page (issue 33) as a user drives it, written as PNG into ``docs/``:

    python docs/make_your_model_screenshots.py            # serves the app on a free port, then photographs it

It writes a small data root of its own (a CSV table with a planted attribute, a scores file with a planted leak),
serves the app from this checkout with that root and a fresh cache, and drives the page in headless Chromium
(Playwright with ``--chromium``, default ``/usr/bin/chromium``): "Just the scores" on the scores file, and "Your
data" on the CSV table (what was found, and the split). Nothing is trained.
"""
from __future__ import annotations

import argparse
import csv
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_fixtures(root: Path) -> None:
    rng = np.random.default_rng(0)
    n = 600
    member = np.r_[np.ones(n // 2, int), np.zeros(n // 2, int)]
    loss = np.abs(rng.normal(0.6, 0.5, n)) + 0.8 * (1 - member) * rng.random(n)
    refs = [np.abs(rng.normal(0.6, 0.5, n)) + 0.8 * rng.random(n) for _ in range(4)]
    with (root / "scores.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["member", "loss", *(f"ref_loss_{k}" for k in range(4)), "slice"])
        for i in range(n):
            w.writerow([member[i], f"{loss[i]:.5f}", *(f"{r[i]:.5f}" for r in refs), "even" if i % 2 else "odd"])
    with (root / "patients.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["age", "bmi", "smoker", "region", "outcome"])
        for i in range(1500):
            age, bmi = rng.normal(50, 12), rng.normal(26, 4)
            smoker = rng.random() < 0.3
            risk = 0.04 * (age - 50) + 0.1 * (bmi - 26) + (1.2 if smoker else 0) + rng.normal(0, 1)
            w.writerow([f"{age:.0f}", "" if i % 37 == 0 else f"{bmi:.1f}", "yes" if smoker else "no",
                        ["north", "south", "east", "west"][i % 4], "high" if risk > 0.5 else "low"])


def wait_for(url: str, seconds: float = 120) -> None:
    end = time.time() + seconds
    while time.time() < end:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"error: the app did not answer at {url}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        write_fixtures(root)
        port = free_port()
        env = {**os.environ, "MIA_DATA_ROOT": str(root), "MIA_CACHE_DIR": str(Path(tmp) / "cache")}
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                   "--server.headless", "true"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/Your_model"
            wait_for(f"http://127.0.0.1:{port}/_stcore/health")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 1500})
                page.goto(url)
                page.get_by_text("What do you bring?").wait_for(timeout=60_000)
                page.get_by_text("Just the scores").click()
                box = page.get_by_label("Scores file (.csv or .npz) under the data root")
                box.fill(str(root / "scores.csv"))
                box.press("Enter")
                page.get_by_text("Download the report (HTML)").wait_for(timeout=120_000)
                page.wait_for_timeout(1500)  # plotly's first draw
                page.screenshot(path=str(args.out / "your_model_scores.png"), full_page=True)

                page.goto(url)
                page.get_by_text("What do you bring?").wait_for(timeout=60_000)
                page.get_by_text("Resize images to").wait_for(timeout=60_000)  # the default layout's settings
                page.locator('[data-testid="stSelectbox"]').first.click()
                page.wait_for_timeout(1000)
                page.get_by_role("option", name="A CSV table").click()
                page.wait_for_timeout(1000)
                page.locator('input[aria-label="Label column"]').wait_for(timeout=60_000)
                page.locator('input[aria-label="Label column"]').fill("outcome")
                page.locator('input[aria-label="Label column"]').press("Enter")
                box = page.locator('input[aria-label="Folder or file"]')
                box.fill(str(root / "patients.csv"))
                box.press("Enter")
                page.get_by_text("Found:").wait_for(timeout=120_000)
                page.wait_for_timeout(1000)
                page.screenshot(path=str(args.out / "your_model_data.png"), full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {args.out / 'your_model_scores.png'} and {args.out / 'your_model_data.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

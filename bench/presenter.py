"""Presenter check: every page of the app as a class would see it on a projector — at 1280×720 and 1920×1080 in
headless Chromium —, one screenshot each, and a failure for what such a screen must not show and a script can see:

* an exception on the page (Streamlit's exception box);
* a card (``st.metric``) whose label or value is cut ("vacu…": its text wider than its box);
* a chart legend that leaves its chart's box, or two legend entries drawn over each other.

It serves the app itself (on the cache of ``$MIA_CACHE_DIR``: run the image quick preset first, e.g.
`python -m core compare --task image --preset quick --repeats 2`, so every page has something to draw) or
checks one already running (``--url``). It does not import the project: any interpreter with Playwright runs it.

    /tmp/pwenv/bin/python bench/presenter.py --out /tmp/presenter     # screenshots and report.json there
    /tmp/pwenv/bin/python bench/presenter.py --sizes 1280x720 --pages Home,Defenses

Prints one JSON object (the problems found per page and size) and exits 1 when there is any. Not a timing: the
page's own speed is `bench/app_browser.py`'s and `bench/defenses_open.py`'s.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_browser import CHROMIUM_ARGS, IDLE, chromium_path, free_port, serve  # noqa: E402

#: the pages by their URL path (ui/nav.py's url_path: the file's name without its number) and the query they open on
PAGES = {"Home": "", "Train & attack": "Train_and_attack?task=image", "Your model": "Your_model",
         "Defenses": "Defenses", "Training defenses": "Training_defenses", "Analyses": "Analyses",
         "Findings": "Findings"}
SIZES = ("1280x720", "1920x1080")

#: cards whose label or value is wider than its box (the browser cuts it with "…")
CUT_CARDS = """() => [...document.querySelectorAll('[data-testid=stMetric]')].flatMap(card => {
  const out = [];
  for (const part of card.querySelectorAll('[data-testid=stMetricLabel], [data-testid=stMetricValue]')) {
    for (const el of [part, ...part.querySelectorAll('*')]) {
      if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
        out.push((part.dataset.testid === 'stMetricLabel' ? 'label: ' : 'value: ') + part.innerText.trim());
        break;
      }
    }
  }
  return out;
})"""
#: legends outside their chart's box, entries cut at its edge, and entries whose names run into another entry
BAD_LEGENDS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
  const out = [];
  const box = plot.getBoundingClientRect();
  const title = ((plot.querySelector('.gtitle') || {}).textContent || '(untitled chart)').slice(0, 60);
  const legend = plot.querySelector('g.legend');
  if (!legend || box.width === 0) return out;
  const lb = legend.getBoundingClientRect();
  if (lb.width > 0 && (lb.left < box.left - 1 || lb.top < box.top - 1 || lb.bottom > box.bottom + 1))
    out.push(`legend outside its chart: ${title}`);
  const items = [...legend.querySelectorAll('g.traces')].map(t => {
    const text = t.querySelector('.legendtext');
    const sym = t.querySelector('.layers');  // the entry's line and marker
    return text ? {r: text.getBoundingClientRect(), s: sym ? sym.getBoundingClientRect() : null,
                   name: text.textContent} : null;
  }).filter(x => x && x.r.width > 0);
  const hit = (a, b) => b && Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2
                        && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
  const bg = legend.querySelector('rect.bg');  // the legend's own box: plotly cuts what runs past it
  const edge = Math.min(box.right, bg ? bg.getBoundingClientRect().right : box.right);
  for (const it of items) {
    if (it.r.right > edge + 1) { out.push(`legend entry cut at the chart's edge: ${title}: "${it.name}"`); break; }
  }
  outer: for (let i = 0; i < items.length; i++) {
    for (let j = 0; j < items.length; j++) {
      if (i !== j && (hit(items[i].r, items[j].r) || hit(items[i].r, items[j].s))) {
        out.push(`legend entries overlap: ${title}: "${items[i].name}" / "${items[j].name}"`); break outer;
      }
    }
  }
  return out;
})"""
EXCEPTIONS = "() => [...document.querySelectorAll('[data-testid=stException]')].map(e => e.innerText.slice(0, 300))"


#: placeholders Streamlit draws while a page's elements are still to come
PENDING = "() => document.querySelectorAll('[data-testid=stSkeleton], .stSpinner, [data-testid=stSpinner]').length"


def settle(page, timeout_s: float) -> None:
    """Wait for the script run to end with nothing pending (no skeleton, no spinner), twice a second apart, then a
    second more for Plotly to lay its charts out."""
    deadline = time.time() + timeout_s
    page.wait_for_timeout(1000)
    calm = 0
    while time.time() < deadline and calm < 2:
        calm = calm + 1 if page.evaluate(IDLE) and not page.evaluate(PENDING) else 0
        page.wait_for_timeout(500)
    page.wait_for_timeout(1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an app already running (default: start one)")
    parser.add_argument("--port", type=int, default=8598)
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--sizes", default=",".join(SIZES), help="viewports, comma-separated WIDTHxHEIGHT")
    parser.add_argument("--pages", default=",".join(PAGES), help="page names, comma-separated")
    parser.add_argument("--out", default="presenter_shots", help="folder for the screenshots and report.json")
    parser.add_argument("--timeout", type=float, default=180, help="seconds a page may take to settle")
    args = parser.parse_args()
    chromium = chromium_path(args.chromium)
    if chromium is None:
        return 0
    from playwright.sync_api import sync_playwright

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    server = None
    url = args.url
    if url is None:
        server = serve(free_port(args.port))
        url = f"http://127.0.0.1:{server.args[server.args.index('--server.port') + 1]}"
    report: dict = {"url": url, "pages": {}}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--headless", *CHROMIUM_ARGS])
            for size in args.sizes.split(","):
                w, h = (int(x) for x in size.lower().split("x"))
                page = browser.new_page(viewport={"width": w, "height": h})
                for name in args.pages.split(","):
                    path = PAGES[name.strip()]
                    t = time.time()
                    page.goto(f"{url}/{path}")
                    page.wait_for_selector("[data-testid=stApp]", timeout=120_000)
                    settle(page, args.timeout)
                    stem = f"{name.strip().replace(' & ', '_').replace(' ', '_').lower()}_{w}x{h}"
                    page.screenshot(path=str(out_dir / f"{stem}.png"))  # the screen the class sees first
                    # the whole page: Streamlit scrolls inside its main block, so the window is made as tall as it
                    tall = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                                         "'[data-testid=stMain], [data-testid=stAppViewContainer], section')]"
                                         ".map(e => e.scrollHeight), document.body.scrollHeight)")
                    page.set_viewport_size({"width": w, "height": min(int(tall) + 40, 9000)})
                    page.wait_for_timeout(1500)
                    page.screenshot(path=str(out_dir / f"{stem}_full.png"))
                    page.set_viewport_size({"width": w, "height": h})
                    page.wait_for_timeout(500)
                    problems = ([f"exception: {e}" for e in page.evaluate(EXCEPTIONS)]
                                + [f"cut card {c}" for c in page.evaluate(CUT_CARDS)]
                                + page.evaluate(BAD_LEGENDS))
                    report["pages"][f"{name.strip()} {size}"] = {"problems": problems,
                                                                 "seconds": round(time.time() - t, 1)}
                page.close()
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except Exception:  # noqa: BLE001 — a server that will not stop is killed
                server.kill()
    failed = {k: v["problems"] for k, v in report["pages"].items() if v["problems"]}
    report["failed"] = failed
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

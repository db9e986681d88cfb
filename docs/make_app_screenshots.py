"""Screenshots of the app itself for issue 32's points that only the eye can check, written as PNG into ``docs/``:
the Defenses table before "Measure" (32.9), a σ step's draw 1 and then every draw in its place (32.16), the ROC legends and the matched-utility table (32.12), a long
analysis' button with its time (32.13) and a missing CIFAR-10 folder (32.14). Re-make them when those parts change.

    MIA_CACHE_DIR=/tmp/cache streamlit run app.py --server.port 8765 --server.headless true &   # image quick cached
    python docs/make_app_screenshots.py --url http://localhost:8765

Drives a running app in headless Chromium through Playwright (``pip install playwright``; ``--chromium`` names the
browser binary, default ``/usr/bin/chromium``). Each picture is the page cropped around the part it shows.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1400, 3200


def settle(page: Page, timeout_s: float = 180.0) -> None:
    """Wait until Streamlit has finished running the page (its status widget is gone), then for Plotly to draw."""
    deadline = time.monotonic() + timeout_s
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_s * 1000)
    time.sleep(2.0)  # the status widget appears a moment after the page's first paint
    while page.locator("[data-testid='stStatusWidget']").count() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2.0)
    if page.locator("[data-testid='stException']").count() or page.get_by_text("This app has encountered an error").count():
        raise SystemExit(f"the page at {page.url} shows an error: see the server's log (a server started before a "
                         "change to core/ or ui/ runs the old modules: restart it)")


def crop(page: Page, anchor: str, png: Path, height: int, above: int = 20) -> None:
    """The page's full width from ``above`` px over the first element showing ``anchor``, ``height`` px tall."""
    box = page.get_by_text(anchor, exact=False).first.bounding_box()
    if box is None:
        raise SystemExit(f"{anchor!r} is not on the page: is the image quick run cached?")
    y = max(box["y"] - above, 0)
    page.screenshot(path=str(png), clip={"x": 0, "y": y, "width": WIDTH, "height": min(height, HEIGHT - y)})
    print(f"wrote {png.relative_to(ROOT)}")


def open_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    settle(page)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://localhost:8765")
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(f"{args.url}/Defenses")
        settle(page)
        open_tab(page, "Table over the grid")
        crop(page, "Dirichlet: the grid", args.out / "issue32_defenses_table.png", 700)
        # 32.16: a σ step to a value not computed before shows draw 1 labelled, then every draw's mean in its place
        page.get_by_text("Gaussian (weights)", exact=True).click()
        settle(page)
        page.locator("[data-testid=stSlider] input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
        page.get_by_text("the rest are computing").first.wait_for(timeout=60_000)
        crop(page, "σ = ", args.out / "issue32_sigma_draw1.png", 560)
        page.get_by_text("the rest are computing").first.wait_for(state="detached", timeout=120_000)
        settle(page)
        crop(page, "σ = ", args.out / "issue32_sigma_all_draws.png", 500)
        page.goto(f"{args.url}/Train_and_attack?task=image")
        settle(page)
        open_tab(page, "Attacks")
        crop(page, "ROC of the attacks", args.out / "issue32_roc_legends.png", 760)
        open_tab(page, "Strongest attacks & why")
        crop(page, "At matched utility", args.out / "issue32_matched_table.png", 300)
        page.goto(f"{args.url}/Analyses")
        settle(page)
        open_tab(page, "Memorization")
        crop(page, "The studies:", args.out / "issue32_analysis_time.png", 260)
        page.goto(f"{args.url}/Train_and_attack?task=image")
        settle(page)
        page.get_by_label("Data").first.click()
        page.get_by_role("option", name="cifar10").click()
        settle(page)
        page.get_by_role("textbox", name="Local cifar10 folder").fill(str(Path.home() / "no-such-cifar-folder"))
        page.keyboard.press("Enter")
        settle(page)
        crop(page, "Preset quick", args.out / "issue32_cifar_missing.png", 460)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Screenshot of a review page (``rageval judge POOL --review PAGE``), for the README.

    python scripts/screenshot_review.py review.html [--out docs/img/review-page.png]
        [--grades GRADES.jsonl]

Opens the page in headless Chromium (Debian's chromium and chromedriver), enters a judge name,
clicks the grades of a saved grades file (``--grades``: the records a review page saved, matched
to passages by query, document and start) or none, scrolls to the first query and saves the
viewport as a PNG.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "review-page.png")
    ap.add_argument("--grades", type=Path, help="grades to click (a file the page saved)")
    ap.add_argument("--judge", default="rageval-maintainers")
    args = ap.parse_args()
    chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chrome and driver):
        print("needs chromium and chromedriver (apt-get install chromium chromium-driver)")
        return 2
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1100"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    try:
        d.get(args.page.resolve().as_uri())
        d.find_element("id", "judge").send_keys(args.judge)
        grades = {}
        if args.grades:
            for line in args.grades.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                grades[(r["query_id"], r["doc"], r["start"])] = r["grade"]
        records = json.loads(d.find_element("id", "records").get_attribute("textContent"))
        for li in d.find_elements("css selector", "li.passage"):
            r = records[int(li.get_attribute("data-q"))][int(li.get_attribute("data-p"))]
            grade = grades.get((r["query_id"], r["doc"], r["start"]))
            if grade is not None:
                li.find_element("css selector", f"label.g{grade}").click()
        d.execute_script("document.querySelector('details.scale').open = false; scrollTo(0, 0)")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(args.out))
    finally:
        d.quit()
    print(f"screenshot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

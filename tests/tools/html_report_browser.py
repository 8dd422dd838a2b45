#!/usr/bin/env python3
"""relo-replay --html in a real headless Chromium, driven by Selenium.

Writes the report of a small trace that relocates (relo seed and dense, and
the PyTorch baseline, on one timeline), opens it from disk and checks what
the page shows after hovers, clicks, zooms and a drag; saves a screenshot
(report.png) in OUT_DIR.

usage: html_report_browser.py RELO_REPLAY TRACE OUT_DIR
Prints SKIP and exits 77 when Selenium, Chromium or chromedriver is absent.
"""
import os
import re
import shutil
import subprocess
import sys

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
except ImportError:
    print("SKIP: python3-selenium not installed")
    sys.exit(77)

failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def find_browser():
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    return browser, driver


def main():
    tool, trace, out = sys.argv[1], sys.argv[2], sys.argv[3]
    browser, driver_path = find_browser()
    if not browser or not driver_path:
        print("SKIP: chromium or chromedriver not found")
        return 77
    os.makedirs(out, exist_ok=True)
    page = os.path.join(out, "report.html")
    # The seed policy on a device charging plain bytes: the tiny trace's
    # growth then relocates under pressure, which the page must show.
    p = subprocess.run([tool, "--quiet", "--policy", "seed", "--granule", "1", "--capacity", "40M",
                        "--baseline", "pytorch", "--html", page, trace],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"relo-replay --html exits 0 (got {p.returncode}: {p.stderr.strip()})")
    text = open(page, encoding="utf-8").read()
    check(not re.search(r'(src|href)\s*=\s*["\']?\s*(https?:)?//', text, re.I), "the page loads nothing from the network")
    check("<script src" not in text and "<link" not in text, "no external script or style")

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1600"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        d.get("file://" + os.path.abspath(page))
        by_id = lambda i: d.find_element(By.ID, i)
        check("tiny" in d.title, f"title names the trace ({d.title!r})")

        legend = by_id("legend").text
        for name in ("relo seed", "relo dense", "pytorch"):
            check(name in legend, f"legend lists {name}")
        check(len(d.find_elements(By.CSS_SELECTOR, "#plot path.reserved")) == 3, "three reserved lines drawn")
        check(len(d.find_elements(By.CSS_SELECTOR, "#plot path.live")) == 1, "live area drawn")
        check(len(d.find_elements(By.CSS_SELECTOR, "#plot .reloc-tick")) >= 1, "relocation ticks on the axis")
        full = by_id("range").text
        check(full == "events 1 - 14", f"range shows every event ({full!r})")

        plot = by_id("plot")
        ActionChains(d).move_to_element_with_offset(plot, 0, 0).perform()
        tip = by_id("tooltip")
        check(tip.is_displayed() and "event" in tip.text and "live" in tip.text and "pytorch" in tip.text,
              f"hover shows event, live and every run ({tip.text[:80]!r})")
        # Hover over the relocation (event 5): the tooltip says what moved.
        found_move = False
        for dx in range(-450, 450, 15):
            ActionChains(d).move_to_element_with_offset(plot, dx, 0).perform()
            if "allocation #1" in tip.text:
                found_move = True
                break
        check(found_move, "hover near the relocation names the allocation that moved")

        by_id("zoom-in").click()
        zoomed = by_id("range").text
        check(zoomed != full, f"zoom in narrows the range ({zoomed!r})")
        ActionChains(d).move_to_element_with_offset(plot, 100, 0).click_and_hold().move_by_offset(-200, 0).release().perform()
        panned = by_id("range").text
        check(panned != zoomed, f"drag pans the range ({panned!r})")
        ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(plot, 0, 0), 0, -300).perform()
        check(by_id("range").text != panned, "the wheel zooms")
        by_id("reset").click()
        check(by_id("range").text == full, "reset shows every event again")

        rows = d.find_elements(By.CSS_SELECTOR, "#relocations tbody tr")
        check(len(rows) >= 1, f"relocations listed ({len(rows)})")
        if rows:
            check("allocation #1" in rows[0].text, f"the row says what moved ({rows[0].text!r})")
            rows[0].click()
            check("relocation" in by_id("map-title").text, f"clicking it shows the map after it ({by_id('map-title').text!r})")
            check(len(d.find_elements(By.CSS_SELECTOR, "#map .slice.moved")) >= 1, "the moved allocation is marked")
        sel = Select(by_id("snapshot"))
        check(len(sel.options) >= 3, f"several page maps kept ({len(sel.options)})")
        # Event 3: the 10 MiB allocation grew the arena; its first page is outdated.
        sel.select_by_index(2)
        check(by_id("map-title").text.startswith("at event 3"), f"choosing a map shows it ({by_id('map-title').text!r})")
        pages = d.find_elements(By.CSS_SELECTOR, "#map .page")
        slices = d.find_elements(By.CSS_SELECTOR, "#map .slice")
        check(len(pages) == 3 and len(slices) == 3, f"map shows 3 pages ({len(pages)}) and 3 slices ({len(slices)})")
        rows_text = [x.text for x in d.find_elements(By.CSS_SELECTOR, "#map .page-row")]
        check(all("free, largest" in x for x in rows_text), f"pages show their free room ({rows_text[:1]})")
        outdated = d.find_elements(By.CSS_SELECTOR, "#map .page.outdated .slice")
        check(len(outdated) == 1 and "allocation #1:" in outdated[0].get_attribute("title"),
              "the outdated page is marked and holds allocation #1")
        check(all("allocation #" in s.get_attribute("title") for s in slices), "every slice names its allocation")

        sel.select_by_index(0)
        check(by_id("map-title").text.startswith("at event 1"), f"choosing the first shows event 1 ({by_id('map-title').text!r})")
        # Clicking the plot's right end picks the last kept map.
        ActionChains(d).move_to_element_with_offset(plot, 490, 0).click().perform()
        check("event 14" in by_id("map-title").text, f"clicking the plot picks the nearest map ({by_id('map-title').text!r})")

        boxes = d.find_elements(By.CSS_SELECTOR, "#legend input")
        boxes[2].click()
        check(len(d.find_elements(By.CSS_SELECTOR, "#plot path.run-2")) == 0, "unticking a run hides it")
        boxes[2].click()

        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errors, f"no script errors ({errors[:2]})")
        shot = os.path.join(out, "report.png")
        d.save_screenshot(shot)
        check(os.path.getsize(shot) > 10000, f"screenshot saved: {shot}")
    finally:
        d.quit()
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""relo-replay --html in a real headless Chromium, driven by Selenium.

Writes the report of a small trace that relocates (relo adaptive and packed, and
the PyTorch baseline, on one timeline), opens it from disk and checks what
the page shows after hovers, clicks, zooms and a drag; saves a screenshot
(report.png) in OUT_DIR.

Then the report of GROWING (a trace that grows) at relo's fit capacity with
both PyTorch baselines (verdict.html), where the baselines run out of
memory, and checks:
- the summary table says, for relo's two placements and each baseline, what
  relo-replay --json says of the same runs: fit capacity and ratio, the
  event each ran out of memory at, and peak, time-averaged and end holding,
  bytes moved and device allocations per 1,000 events (for one that ran out
  of memory, those of its run on its fit capacity); the summary's sentences
  name each fit ratio and each such event;
- every label on the plot lies inside it and meets no other, before and
  after zooming, and every run that ran out of memory has one;
- every tooltip counts exactly the moves it lists (listed + "more"), lists
  at least one where it counts a relocation, and the relocations table adds
  up to relo-replay --json's count.

usage: html_report_browser.py RELO_REPLAY TRACE OUT_DIR [GROWING]
Prints SKIP and exits 77 when Selenium, Chromium or chromedriver is absent.
"""
import json
import os
import re
import shutil
import subprocess
import sys

from figures import bytes_match, number_match

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


def replay_json(tool, args):
    p = subprocess.run([tool, "--json"] + args, capture_output=True, text=True)
    return json.loads(p.stdout)["traces"][0]


def expected_rows(tool, growing, j):
    """The summary's rows, from relo-replay --json: relo's placement, the other
    placement on the same device (with its own fit search), each baseline."""
    other = "adaptive" if j["placement"] == "packed" else "packed"
    js = replay_json(tool, ["--fit", "--placement", other, "--capacity", str(j["capacity"]), growing])
    rows = []
    for x in (j, js):
        fig = None
        src = x if x["ok"] else x["at_fit"]
        if src and src["ok"]:
            fig = (src["peak_reserved_bytes"], src["time_avg_reserved_ratio"], src["end_reserved_bytes"],
                   src["bytes_moved"], src["backend_allocs_per_1k_events"])
        rows.append({"name": "relo " + x["placement"], "fit": x["fit"], "ok": x["ok"], "failed_event": x["failed_event"],
                     "figures": fig})
    for b in j["baselines"]:
        run = b
        if not b["ok"] and b["fit"]["capacity"]:
            run = replay_json(tool, ["--capacity", str(b["fit"]["capacity"]), "--baseline", b["name"], growing])
            run = run["baselines"][0]
        fig = None
        if run["ok"]:
            fig = (run["peak_reserved_bytes"], run["time_avg_reserved_ratio"], run["end_reserved_bytes"], None,
                   run["device_allocs_per_1k_events"])
        rows.append({"name": b["name"], "fit": b["fit"], "ok": b["ok"], "failed_event": b["failed_event"],
                     "figures": fig})
    return rows


def check_summary(d, tool, growing, j):
    rows = expected_rows(tool, growing, j)
    drawn = d.execute_script("""
        return [...document.querySelectorAll('#verdict-table tbody tr')].map(tr => {
          const o = {};
          for (const td of tr.querySelectorAll('td')) o[td.dataset.k] = td.textContent.trim();
          return o;
        });""")
    check(len(drawn) == len(rows), f"the summary has a row per allocator ({len(drawn)}, --json: {len(rows)})")
    text = d.find_element(By.ID, "verdict").text
    check(re.search(r"\bfit\b", text) is not None, "the summary speaks of fit")
    line = d.find_element(By.ID, "summary").text
    check(f"relo's {j['placement']} placement" in line,
          f"the line under the title names the placement, {j['placement']} ({line!r})")
    for want, got in zip(rows, drawn):
        n = want["name"]
        check(got.get("name") == n, f"summary row {n!r} ({got.get('name')!r})")
        f = want["fit"]
        check(bytes_match(got.get("fit_capacity", ""), f["capacity"]),
              f"{n}: fit capacity {got.get('fit_capacity')!r} is --json's {f['capacity']}")
        check(number_match(got.get("fit_ratio", ""), f["ratio"], 3),
              f"{n}: fit ratio {got.get('fit_ratio')!r} is --json's {f['ratio']}")
        check(f"{n} {got.get('fit_capacity')} (fit ratio {got.get('fit_ratio')})" in text,
              f"{n}: the summary's sentence names its fit capacity and ratio")
        out = got.get("outcome", "")
        if want["ok"]:
            check(out == "completed", f"{n}: completed ({out!r})")
        else:
            m = re.match(r"out of memory at event ([0-9,]+) of ([0-9,]+)", out)
            ev = int(m.group(1).replace(",", "")) if m else None
            check(ev == want["failed_event"] + 1,
                  f"{n}: out of memory at event {ev}, --json: {want['failed_event'] + 1}")
            check(m is not None and f"{n} out of memory at event {m.group(1)}" in text,
                  f"{n}: the summary's sentence says where it ran out of memory")
        fig = want["figures"]
        if fig is None:
            check(got.get("peak") == "-", f"{n}: no figures where no run completed")
            continue
        peak, avg, end, moved, allocs = fig
        check(bytes_match(got.get("peak", ""), peak), f"{n}: peak held {got.get('peak')!r} is --json's {peak}")
        check(number_match(got.get("avg", ""), avg, 3), f"{n}: time-averaged held / live {got.get('avg')!r} is --json's {avg}")
        check(bytes_match(got.get("end", ""), end), f"{n}: held at the end {got.get('end')!r} is --json's {end}")
        if moved is None:
            check(got.get("moved") == "never moves", f"{n}: a model never moves ({got.get('moved')!r})")
        else:
            check(bytes_match(got.get("moved", ""), moved), f"{n}: bytes moved {got.get('moved')!r} is --json's {moved}")
        check(number_match(got.get("allocs", ""), allocs, 2),
              f"{n}: device allocations per 1,000 events {got.get('allocs')!r} is --json's {allocs}")


def check_labels(d, when, failed_runs=None):
    got = d.execute_script("""
        const area = document.querySelector('#plot rect.plot-area').getBoundingClientRect();
        const boxes = [...document.querySelectorAll('#plot .plot-label')].map(t => {
          const r = t.getBoundingClientRect();
          return {text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
        });
        const grounds = [...document.querySelectorAll('#plot .plot-label-ground')].map(t => {
          const r = t.getBoundingClientRect();
          return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
        });
        return {area: {x0: area.left, y0: area.top, x1: area.right, y1: area.bottom}, boxes, grounds};""")
    a = got["area"]
    outside = [b.get("text", "ground") for b in got["boxes"] + got["grounds"]
               if b["x0"] < a["x0"] - 0.5 or b["y0"] < a["y0"] - 0.5 or b["x1"] > a["x1"] + 0.5 or b["y1"] > a["y1"] + 0.5]
    check(got["boxes"] and not outside, f"{when}: {len(got['boxes'])} labels, all inside the plot ({outside[:2]})")
    meet = []
    for group in (got["boxes"], got["grounds"]):
        for i in range(len(group)):
            for k in range(i + 1, len(group)):
                p, q = group[i], group[k]
                if p["x0"] < q["x1"] and q["x0"] < p["x1"] and p["y0"] < q["y1"] and q["y0"] < p["y1"]:
                    meet.append((p.get("text"), q.get("text")))
    check(not meet, f"{when}: no two labels overlap ({meet[:1]})")
    if failed_runs is not None:
        labelled = [b["text"] for b in got["boxes"] if "out of memory" in b["text"]]
        for r in failed_runs:
            check(any(t.startswith(r + ":") for t in labelled), f"{when}: {r} has its out-of-memory label")


def check_tooltips(d, j):
    tips = d.execute_script("""
        const plot = document.getElementById('plot'), tip = document.getElementById('tooltip');
        const r = plot.getBoundingClientRect(), out = [];
        for (let x = 80; x < r.width - 12; x += 1) {
          plot.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + x, clientY: r.top + 100, bubbles: true}));
          const c = tip.querySelector('.reloc-count');
          if (!c) continue;
          const more = tip.querySelector('.more-count');
          out.push({x, count: c.textContent, moved: tip.querySelector('.move-count').textContent,
                    listed: tip.querySelectorAll('.move').length, more: more ? more.textContent : '0',
                    text: tip.innerText});
        }
        return out;""")
    num = lambda s: int(re.match(r"[0-9,]+", s).group(0).replace(",", ""))
    check(len(tips) > 20, f"hovering the plot shows relocations in {len(tips)} tooltips")
    bad = [t for t in tips if num(t["moved"]) != t["listed"] + num(t["more"])]
    check(not bad, f"every tooltip's count of moves is what it lists plus 'more' ({bad[:1]})")
    empty = [t for t in tips if num(t["count"]) > 0 and t["listed"] == 0]
    check(not empty, f"no tooltip counts a relocation and lists no move ({empty[:1]})")
    total = d.execute_script("return D.relocations.reduce((a, r) => a + r.relocations, 0) + D.relocations_unlisted;")
    check(total == j["relocations"], f"the relocations listed add up to --json's {j['relocations']} ({total})")


def verdict_page(d, tool, growing, out):
    page = os.path.join(out, "verdict.html")
    args = ["--fit", "--capacity", "auto", "--baseline", "pytorch", "--baseline", "pytorch-expandable", growing]
    p = subprocess.run([tool, "--quiet", "--html", page] + args, capture_output=True, text=True)
    check(p.returncode == 0, f"relo-replay --html at the fit capacity exits 0 (got {p.returncode}: {p.stderr.strip()})")
    j = replay_json(tool, args)
    d.get("file://" + os.path.abspath(page))
    check_summary(d, tool, growing, j)
    failed = d.execute_script("return D.runs.filter(r => !r.ok).map(r => r.name);")
    check(len(failed) >= 2, f"the baselines run out of memory at relo's fit capacity ({failed})")
    check_labels(d, "full view", failed)
    check_tooltips(d, j)
    plot = d.find_element(By.ID, "plot")
    for k in range(3):
        ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(plot, 330, 0), 0, -300).perform()
        check_labels(d, f"zoomed in {k + 1} times")
    d.find_element(By.ID, "reset").click()
    for box in d.find_elements(By.CSS_SELECTOR, "#legend input")[1:3]:
        box.click()
    check_labels(d, "with two runs hidden")
    errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script errors on the verdict page ({errors[:2]})")
    d.save_screenshot(os.path.join(out, "verdict.png"))


def main():
    tool, trace, out = sys.argv[1], sys.argv[2], sys.argv[3]
    growing = sys.argv[4] if len(sys.argv) > 4 else None
    browser, driver_path = find_browser()
    if not browser or not driver_path:
        print("SKIP: chromium or chromedriver not found")
        return 77
    os.makedirs(out, exist_ok=True)
    page = os.path.join(out, "report.html")
    # The adaptive placement on a device charging plain bytes: the tiny trace's
    # growth then relocates under pressure, which the page must show.
    p = subprocess.run([tool, "--quiet", "--placement", "adaptive", "--granule", "1", "--capacity", "40M",
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
        for name in ("relo adaptive", "relo packed", "pytorch"):
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
        if growing:
            verdict_page(d, tool, growing, out)
    finally:
        d.quit()
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

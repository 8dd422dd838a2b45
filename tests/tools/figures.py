"""Reading the figures relo-replay's pages and pictures print, as the
checks of the HTML report (html_report_browser.py) and of the SVG
(check_svg.py) compare them with --json: a printed figure matches a value
when it is that value written to the digits it shows."""
import re

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def bytes_match(text, value):
    """Whether "94.0 MiB" is value written to the digits it shows."""
    m = re.fullmatch(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)", text.strip())
    if not m:
        return False
    digits = m.group(1)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    unit = UNITS[m.group(2)]
    return abs(float(digits) * unit - value) <= 0.5 * 10 ** -decimals * unit + 1e-9


def number_match(text, value, decimals):
    """Whether text is value written with decimals digits after the point."""
    try:
        return abs(float(text) - value) <= 0.5 * 10 ** -decimals + 1e-9
    except ValueError:
        return False

"""The speed figures the README and docs/performance.md (en, zh) quote are read back from
bench/RESULTS.md: each quoted range is the lowest and highest run of the newest measured
section (generation's tokens/s ratio at batch 1, the Trainer's and the plain script's step
ratios, interleaved and each arm alone)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def _newest_section():
    """The first dated section of RESULTS.md with a generation table and a step table."""
    for section in re.split(r"\n(?=## 20)", _read("bench", "RESULTS.md"))[1:]:
        if "| after / torch |" in section and "(Trainer's model) / torch" in section:
            return section
    raise AssertionError("bench/RESULTS.md has no section with both tables")


def _rows(section, header_mark):
    lines = section.split("\n")
    start = next(i for i, line in enumerate(lines) if header_mark in line)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _first_number(cell):
    return float(re.search(r"\d+\.\d+", cell).group())


def measured_ranges():
    section = _newest_section()
    generation = [_first_number(r[-1]) for r in _rows(section, "| after / torch |")
                  if "--batch 8" not in r[0]]
    steps = _rows(section, "(Trainer's model) / torch")
    trainer = [_first_number(r[1]) for r in steps]
    plain = [_first_number(r[2]) for r in steps]
    alone = re.findall(r"tinygradx / torch (\d\.\d\d) \[[^\]]*\],\s+plain\s+(\d\.\d\d)", section)
    assert alone, "the each-arm-alone sentence (tinygradx / torch ..., plain ...) is missing"
    trainer += [float(t) for t, _ in alone]
    plain += [float(p) for _, p in alone]
    return {name: f"{min(v):.2f}-{max(v):.2f}" for name, v in
            (("generation", generation), ("trainer", trainer), ("plain", plain))}


def test_quoted_speed_ranges_are_the_measured_ones():
    ranges = measured_ranges()
    for page in (("README.md",), ("docs", "performance.md"), ("docs", "zh", "performance.md")):
        text = _read(*page)
        for name, quoted in ranges.items():
            assert quoted in text, f"{os.path.join(*page)} does not quote {name} {quoted}"

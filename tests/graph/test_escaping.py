"""Hostile module names in DOT, SVG and the HTML page: each format escapes them, the picture
renders, the page parses as a browser parses it and its script still runs (docs/graphs.md,
"Names in pictures")."""
from __future__ import annotations

import json
import shutil
import warnings
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

pytest.importorskip("graphviz")
import tinygradx as tgx  # noqa: E402
from tinygradx import nn  # noqa: E402
from tinygradx.graph import page, viz  # noqa: E402

NAMES = ["<script>alert(1)</script>", "x<!--", "<b>bold</b>", "end\\", 'q"uote\'s',
         "new\nline", "]]>", "</script>", "a&amp;b", "\\N\\G", "x & y", "a-->b", "cr\rhere"]


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x) + x


class Hostile(nn.Module):
    def __init__(self):
        super().__init__()
        for name in NAMES:
            setattr(self, name, Inner())

    def forward(self, x):
        for name in NAMES:
            x = getattr(self, name)(x)
        return x.sum()


def shown(name):
    """What a picture shows of a name: its lines (a line break is one in DOT)."""
    return [part for part in name.replace("\r", "\n").split("\n") if part]


@pytest.fixture(scope="module")
def model_and_out():
    tgx.manual_seed(0)
    model = Hostile()
    out = model(tgx.randn(1, 2))
    out.backward(retain_graph=True)
    return model, out


def renderers():
    found = []
    for name in ("dot", "graphviz-pure"):
        try:
            viz.find_renderer(name)
            found.append(name)
        except viz.RendererNotFound:
            pass
    return found


@pytest.mark.parametrize("depth", [None, 1, 2])
def test_dot_source_is_valid_and_names_are_plain_text(model_and_out, depth):
    model, out = model_and_out
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # graphviz warns of a string DOT cannot scan
        src = viz.to_dot_source(out, params=model, depth=depth, title='t"\\')
    labels = [line for line in src.splitlines() if "label=" in line]
    assert labels and all("label=<" not in line for line in labels)   # never HTML-like
    assert "\\N\\G" not in src.replace("\\\\", "")    # no DOT escape left live
    assert 'digraph "t\\"\\\\"' in src                 # the title quoted and escaped


@pytest.mark.parametrize("renderer", ["dot", "graphviz-pure"])
@pytest.mark.parametrize("depth", [None, 2])
def test_svg_renders_and_shows_every_name(model_and_out, renderer, depth):
    if renderer not in renderers():
        pytest.skip(f"{renderer} not installed")
    model, out = model_and_out
    svg = viz.pipe(viz.to_dot(out, params=model, depth=depth), "svg", renderer=renderer)
    root = ET.fromstring(svg)                      # well-formed XML
    texts = "\n".join(e.text or "" for e in root.iter()
                      if e.tag.rsplit("}", 1)[-1] in ("text", "title"))
    for name in NAMES:
        for part in shown(name):
            assert part in texts, (renderer, name)
    tags = {e.tag.rsplit("}", 1)[-1] for e in root.iter()}
    assert "script" not in tags and "b" not in tags


class _Page(HTMLParser):
    """What a browser's parser makes of the page: elements, script blocks, visible text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self.text, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("script", "style"):
            self._in = tag
            if tag == "script":
                self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1][1] += data
        elif self._in is None:
            self.text.append(data)


@pytest.fixture(scope="module")
def hostile_page():
    if not renderers():
        pytest.skip("no Graphviz renderer installed")
    tgx.manual_seed(0)
    model = Hostile()
    with tgx.trace(graph=True) as t:
        model(tgx.randn(1, 2))
    return page.trace_page(t, params=model, depth=2, title="</title><b>t</b>")


def test_html_page_parses_with_names_as_text(hostile_page):
    p = _Page()
    p.feed(hostile_page)
    p.close()
    # the page's own four: node data, backward steps, opened pictures (JSON) and its code
    assert p.tags.count("script") == 4 and "b" not in p.tags     # no element from a name
    (data_attrs, data), *json_blocks, (_, code) = p.scripts
    assert data_attrs.get("id") == "node-data"
    info = json.loads(data)                                     # the data block is whole
    assert all(isinstance(json.loads(block), (list, dict)) for _, block in json_blocks)
    scopes = "\n".join(d["scope"] for d in info.values())
    assert "var L = " in code and code.rstrip().endswith("})();")
    text = "".join(p.text)
    for name in NAMES:
        assert name.split(".")[0] in scopes or any(s in text for s in shown(name)), name
        for part in shown(name):
            assert part in text, name               # the table and the SVG show it as text
    assert "</title><b>t</b>" in text


def test_script_json_escapes_markup():
    text = page.script_json({"a": "</script><!-- & >"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & >"}


CHROMIUM = next(filter(None, map(shutil.which, ["chromium", "chromium-browser",
                                                "google-chrome"])), None)
DRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason="chromium/chromedriver not found")
def test_page_in_a_browser_shows_names_and_runs_its_script(hostile_page, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.common.exceptions import NoAlertPresentException
    path = tmp_path / "hostile.html"
    path.write_text(hostile_page, encoding="utf-8")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER),
                              options=opts)
    try:
        driver.get(path.as_uri())
        with pytest.raises(NoAlertPresentException):
            _ = driver.switch_to.alert.text                      # nothing ran from a name
        assert driver.execute_script("return document.scripts.length") == 4
        assert driver.execute_script("return document.getElementsByTagName('b').length") == 0
        body = driver.execute_script("return document.body.textContent")
        for name in NAMES:
            for part in shown(name):
                assert part in body, name
        # the page's own script ran: the data parsed and collapse-all collapses every frame
        assert driver.execute_script("return typeof L === 'object' && L.grad !== undefined")
        driver.execute_script("document.getElementById('collapse-all').click()")
        assert driver.execute_script(
            "return document.querySelectorAll('#graph g.cluster.collapsed').length") > 0
    finally:
        driver.quit()

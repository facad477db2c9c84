"""The page of `tinygradx graph --out x.html` in a real headless browser: Debian's chromium and
chromium-driver (`.ci/browser.sh` installs them as root), driven with selenium (the `browser`
extra). Hover a node -> the tooltip shows its formula and shapes; click a row -> its node is
highlighted; click a module frame -> it collapses. Skips, saying why, only when chromium,
chromedriver or selenium cannot be found."""
from __future__ import annotations

import shutil

import pytest

pytest.importorskip("graphviz")
from tinygradx.graph import viz  # noqa: E402
from tinygradx.models.apps.inspect_models import build_graph_for_cli  # noqa: E402

CHROMIUM = next(filter(None, map(shutil.which, ["chromium", "chromium-browser",
                                                "google-chrome"])), None)
DRIVER = shutil.which("chromedriver")

try:
    viz.find_renderer()
    RENDERER = True
except viz.RendererNotFound:
    RENDERER = False

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not found (apt-get install chromium)"),
    pytest.mark.skipif(DRIVER is None,
                       reason="chromedriver not found (apt-get install chromium-driver)"),
    pytest.mark.skipif(not RENDERER, reason="no Graphviz renderer (dot or graphviz-pure)"),
]


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="selenium not installed "
                                    "(pip install tinygradx[browser])")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1000"]:
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER),
                              options=opts)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "gpt.html"
    build_graph_for_cli("gpt", None, 1, None, str(out), log=None)     # every op drawn
    return out


def test_hover_click_and_collapse(browser, page):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    browser.get(page.as_uri())
    assert browser.execute_script("return document.querySelectorAll('g.node').length") > 20
    # hover the attention weights' softmax node
    softmax = browser.execute_script("""
        var d = JSON.parse(document.getElementById('node-data').textContent);
        for (var id in d) if (d[id].op === 'softmax') return id;""")
    node = browser.find_element(By.ID, softmax)
    browser.execute_script("arguments[0].scrollIntoView({block:'center'})", node)
    ActionChains(browser).move_to_element(node).perform()
    tip = browser.find_element(By.ID, "tooltip")
    assert tip.is_displayed()
    text = tip.text
    assert "A = softmax(QKᵀ/√d_k + M)" in text and "(B, h, T, T)" in text
    assert "(2, 3, 5, 5)" in text and "grad" in text
    # click the row of the c_attn projection: its node is highlighted
    row = browser.find_element(By.XPATH,
                               "//tr[td[contains(., '[Q K V] = LayerNorm(x_0)·[W^Q W^K W^V]')]]")
    row.click()
    target = row.get_attribute("data-node")
    assert "highlight" in browser.find_element(By.ID, target).get_attribute("class")
    assert "selected" in row.get_attribute("class")
    assert "[Q K V]" in browser.find_element(By.ID, "info").text
    # collapse the attention module's frame, then expand it again
    hidden = "return document.querySelectorAll('g.node.hidden').length"
    frame = browser.execute_script("""
        var cs = document.querySelectorAll('g.cluster');
        for (var i = 0; i < cs.length; i++)
          if (cs[i].querySelector('title').textContent === 'cluster_transformer.h.0.attn')
            return cs[i];""")
    browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", frame)
    assert "collapsed" in frame.get_attribute("class")
    assert browser.execute_script(hidden) > 5
    browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", frame)
    assert browser.execute_script(hidden) == 0
    browser.find_element(By.ID, "collapse-all").click()
    assert browser.execute_script(hidden) > 20
    browser.find_element(By.ID, "expand-all").click()
    assert browser.execute_script(hidden) == 0


@pytest.fixture(scope="module")
def default_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "default.html"
    build_graph_for_cli("gpt", None, 2, 4, str(out), log=None)       # the command's defaults
    return out


def test_backward_step_through(browser, default_page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    browser.get(default_page.as_uri())
    steps = browser.execute_script(
        "return JSON.parse(document.getElementById('step-data').textContent)")
    assert len(steps) > 30 and steps[0]["name"] == "loss"
    lit = "return document.querySelectorAll('#graph g.node.lit').length"
    browser.find_element(By.ID, "step-next").click()
    text = browser.find_element(By.ID, "step").text
    assert text.startswith(f"step 1/{len(steps)}  loss") and "||g|| = 1.000e+00  ()" in text
    assert browser.execute_script(lit) == 1
    current = "return document.querySelector('#graph g.node.current').id"
    assert browser.execute_script(current) == steps[0]["id"]
    # walk on with the keyboard to the first residual add: its VJP is Add's line (vjps.py)
    body = browser.find_element(By.TAG_NAME, "body")
    k = next(i for i, s in enumerate(steps) if s["op"] == "add")
    for _ in range(k):
        body.send_keys(Keys.ARROW_RIGHT)
    text = browser.find_element(By.ID, "step").text
    assert text.startswith(f"step {k + 1}/") and "VJP: d(a + b) = (g, g)" in text
    assert browser.execute_script(current) == steps[k]["id"]
    # the residual path is lit only up to where the gradient has arrived
    seen = {s["id"] for s in steps[:k + 1] if s["residual"]}
    assert browser.execute_script(lit) == len(seen)
    assert browser.execute_script("return document.querySelectorAll('#graph g.edge.lit')"
                                  ".length") >= 1
    body.send_keys(Keys.ARROW_LEFT)
    assert browser.find_element(By.ID, "step").text.startswith(f"step {k}/")
    for _ in range(len(steps)):
        browser.find_element(By.ID, "step-next").click()
    all_lit = {s["id"] for s in steps if s["residual"]}
    assert browser.execute_script(lit) == len(all_lit)


def test_no_column_cut_off_at_1280_px(browser, default_page):
    browser.set_window_size(1280, 900)
    try:
        browser.get(default_page.as_uri())
        over = browser.execute_script("""
            var side = document.getElementById('side').getBoundingClientRect();
            var out = [];
            document.querySelectorAll('#trace-table th, #trace-table td').forEach(function(c){
              var r = c.getBoundingClientRect();
              if (r.right > side.right + 1) out.push(c.textContent); });
            return out;""")
        assert over == []
        assert browser.execute_script(
            "var s = document.getElementById('side'); return s.scrollWidth <= s.clientWidth")
    finally:
        browser.set_window_size(1600, 1000)


ENDS_OK = """
    // every visible edge starts and ends at a visible node or at a collapsed frame's box
    function vis(e){ for (; e && e.tagName !== 'svg'; e = e.parentNode)
                       if (e.classList && e.classList.contains('hidden')) return false;
                     return true; }
    var boxes = [];
    document.querySelectorAll('#graph g.node').forEach(function(n){
      if (vis(n)) boxes.push(n.getBoundingClientRect()); });
    document.querySelectorAll('#graph g.cluster.collapsed').forEach(function(c){
      if (vis(c)) boxes.push(c.querySelector('polygon').getBoundingClientRect()); });
    function near(p){ return boxes.some(function(b){
      return p.x >= b.left - 14 && p.x <= b.right + 14 && p.y >= b.top - 14 &&
             p.y <= b.bottom + 14; }); }
    var bad = [];
    document.querySelectorAll('#graph g.edge').forEach(function(e){
      var path = e.querySelector('path');
      if (!vis(e) || !path) return;
      var m = path.getScreenCTM(), len = path.getTotalLength();
      [0, len].forEach(function(at){
        var q = path.getPointAtLength(at), p = {x: m.a * q.x + m.c * q.y + m.e,
                                               y: m.b * q.x + m.d * q.y + m.f};
        if (!near(p)) bad.push(e.querySelector('title').textContent); });
    });
    return bad;"""


def test_collapsing_a_frame_lays_the_picture_out_again(browser, page):
    browser.get(page.as_uri())
    height = "return document.querySelector('#graph svg').getBoundingClientRect().height"
    before = browser.execute_script(height)
    assert browser.execute_script(ENDS_OK) == []
    frame = browser.execute_script("""
        var cs = document.querySelectorAll('g.cluster');
        for (var i = 0; i < cs.length; i++)
          if (cs[i].querySelector('title').textContent === 'cluster_transformer.h.0.attn')
            return cs[i];""")
    browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", frame)
    after = browser.execute_script(height)
    assert after < 0.8 * before, (before, after)         # the frame's height is given back
    assert browser.execute_script(ENDS_OK) == []           # no edge into an empty frame
    folded = browser.execute_script(
        "return arguments[0].querySelector('polygon').getBoundingClientRect().height", frame)
    assert folded < 60
    browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", frame)
    assert abs(browser.execute_script(height) - before) < 1
    assert browser.execute_script(ENDS_OK) == []


def test_a_row_opens_the_box_that_holds_its_op(browser, default_page):
    from selenium.webdriver.common.by import By
    browser.get(default_page.as_uri())
    box = browser.execute_script("""
        var d = JSON.parse(document.getElementById('node-data').textContent);
        for (var id in d) if (d[id].module && d[id].scope === 'transformer.h.1.attn') return id;""")
    assert box
    row = browser.find_element(
        By.XPATH, "//tr[td[4][.='softmax'] and td[3][.='transformer.h.1.attn']]")
    assert row.get_attribute("data-node") == box           # drawn inside the box
    row.click()
    lit = browser.execute_script(
        "var n = document.querySelector('#graph g.node.highlight'); return n && n.textContent")
    assert lit and "softmax · transformer.h.1.attn" in lit  # the op itself, not the module
    assert "A = softmax(" in browser.find_element(By.ID, "info").text
    assert not browser.execute_script("""return Array.prototype.some.call(
        document.querySelectorAll('#graph g.node'), function(n){
          return n.textContent.indexOf('transformer.h.1.attn') === 0; });""")
    # a row outside any box brings the page's own picture back, its node highlighted
    row = browser.find_element(By.XPATH, "//tr[td[4][.='embedding']]")
    browser.execute_script("arguments[0].click()", row)    # under the sticky header
    assert browser.execute_script(
        "return document.querySelector('#graph g.node.highlight').id") == \
        row.get_attribute("data-node")

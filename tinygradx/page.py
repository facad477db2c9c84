"""tinygradx.page: the graph and the shape trace of one forward pass on one offline HTML page.

    with tgx.trace(graph=True) as t:              # keep the recorded graph for drawing
        loss = model(idx, targets)[1]
    loss.backward(retain_graph=True)              # optional: gradient norms in the tooltips
    page.write(t, "flow.html", params=model, depth=4)

The page is one self-contained file: the SVG (drawn by `viz` with the residual path in red, every
node with an `id`), the trace table beside it, a little CSS and plain JavaScript, no network and
no external URL anywhere (the SVG's xmlns attributes are dropped: HTML does not need them).

    hover a node      its seed name, formula, named and numeric shape and gradient norm, in a
                      tooltip and in the panel above the table
    click a row       its node gets the class `highlight` (and the row `selected`), scrolled into
                      view; a row whose op is inside a collapsed module finds the module's box
    click a frame     a module's dashed frame collapses (its nodes and inner edges hidden, the
                      frame filled) and expands again; buttons collapse and expand all
"""
from __future__ import annotations

import html
import json
import re

from .dataflow import translate
from .graph import residual_summary

__all__ = ["trace_page", "write", "page_html"]

_CSS = """
body{font:14px/1.4 Helvetica,Arial,sans-serif;margin:0;color:#222}
header{padding:8px 14px;border-bottom:1px solid #ccc;background:#fafafa}
header h1{font-size:17px;margin:0 0 4px}
header p{margin:2px 0;color:#555}
main{display:flex;height:calc(100vh - 92px)}
#graph{flex:1 1 58%;overflow:auto;border-right:1px solid #ccc}
#graph svg{width:100%;height:auto}
#side{flex:1 1 42%;overflow:auto;padding:0 8px}
#info{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:6px 0;
      min-height:3.5em;white-space:pre-wrap;font-family:monospace}
table{border-collapse:collapse;font-size:12px}
td,th{padding:2px 6px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{position:sticky;top:0;background:#f0f0f0}
tr[data-node]{cursor:pointer}
tr[data-node]:hover{background:#f4f8ff}
tr.selected{background:#ffe9a8}
g.node.highlight polygon,g.node.highlight ellipse,g.node.highlight path{stroke:#1f77b4;
      stroke-width:5px}
g.node.highlight text{font-weight:bold}
g.node{cursor:default}
g.cluster{cursor:pointer}
g.cluster.collapsed polygon{fill:#e8dcf5;stroke:#7b5ea7;stroke-width:2px}
.hidden{display:none}
#tooltip{position:fixed;z-index:9;background:#fffbe6;border:1px solid #c9b458;padding:6px 8px;
      font-family:monospace;font-size:12px;white-space:pre;pointer-events:none;
      box-shadow:2px 2px 6px rgba(0,0,0,.2)}
button{margin-right:6px}
"""

_JS = """
(function(){
  var data = JSON.parse(document.getElementById('node-data').textContent);
  var tip = document.getElementById('tooltip'), info = document.getElementById('info');
  function describe(id){
    var d = data[id]; if(!d) return '';
    var lines = [(d.name ? d.name + '  ' : '') + d.named, d.shape, d.formula,
                 d.op + (d.scope ? '  ' + d.scope : '')];
    if(d.grad) lines.push(L.grad + ' ' + d.grad);
    return lines.join('\\n');
  }
  var nodes = document.querySelectorAll('#graph g.node');
  nodes.forEach(function(n){
    n.addEventListener('mouseenter', function(ev){
      var text = describe(n.id); if(!text) return;
      tip.textContent = text; tip.hidden = false; info.textContent = text;
      tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 14) + 'px';
    });
    n.addEventListener('mousemove', function(ev){
      tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 14) + 'px';
    });
    n.addEventListener('mouseleave', function(){ tip.hidden = true; });
  });
  document.querySelectorAll('tr[data-node]').forEach(function(r){
    r.addEventListener('click', function(){
      document.querySelectorAll('.highlight')
          .forEach(function(e){ e.classList.remove('highlight'); });
      document.querySelectorAll('tr.selected')
          .forEach(function(e){ e.classList.remove('selected'); });
      r.classList.add('selected');
      var n = document.getElementById(r.dataset.node);
      if(n){ n.classList.add('highlight'); info.textContent = describe(n.id);
             if(n.scrollIntoView) n.scrollIntoView({block:'center', inline:'center'}); }
    });
  });
  function inside(a, b){   // bbox a inside bbox b
    return a.x >= b.x - 1 && a.y >= b.y - 1 && a.x + a.width <= b.x + b.width + 1 &&
           a.y + a.height <= b.y + b.height + 1;
  }
  var clusters = Array.prototype.slice.call(document.querySelectorAll('#graph g.cluster'))
      .filter(function(c){
        return c.id !== 'legend' && !/legend/.test(c.textContent.slice(0, 40)); });
  function members(c){
    var box = c.getBBox();
    return Array.prototype.filter.call(nodes, function(n){ return inside(n.getBBox(), box); });
  }
  function setCollapsed(c, on){
    c.classList.toggle('collapsed', on);
    var hide = {};
    clusters.forEach(function(k){ if(k.classList.contains('collapsed'))
      members(k).forEach(function(n){ hide[n.id] = true; }); });
    clusters.forEach(function(k){
      var inner = k !== c && k.classList.contains('collapsed') === false &&
                  clusters.some(function(o){ return o.classList.contains('collapsed') && o !== k &&
                                             inside(k.getBBox(), o.getBBox()); });
      k.classList.toggle('hidden', inner);
    });
    nodes.forEach(function(n){ n.classList.toggle('hidden', !!hide[n.id]); });
    document.querySelectorAll('#graph g.edge').forEach(function(e){
      var t = e.querySelector('title'), ends = t ? t.textContent.split('->') : [];
      var a = ends[0] && ends[0].trim(), b = ends[1] && ends[1].trim();
      var ida = a && titles[a], idb = b && titles[b];
      e.classList.toggle('hidden', !!(hide[ida] && hide[idb]));
    });
  }
  var titles = {};
  nodes.forEach(function(n){
    var t = n.querySelector('title'); if(t) titles[t.textContent.trim()] = n.id; });
  clusters.forEach(function(c){
    c.addEventListener('click', function(ev){
      setCollapsed(c, !c.classList.contains('collapsed')); ev.stopPropagation();
    });
  });
  document.getElementById('collapse-all').addEventListener('click', function(){
    clusters.forEach(function(c){ c.classList.add('collapsed'); });
    if(clusters.length) setCollapsed(clusters[0], true);
  });
  document.getElementById('expand-all').addEventListener('click', function(){
    clusters.forEach(function(c){ c.classList.remove('collapsed'); });
    if(clusters.length) setCollapsed(clusters[0], false);
  });
})();
"""


def _clean_svg(svg):
    """The SVG without its XML prolog, doctype, comments and xmlns attributes: inline SVG in
    HTML needs none of them, and each names a URL."""
    svg = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return svg


def script_json(value):
    """JSON to place inside a <script> element: `<`, `>` and `&` as \\u003c, \\u003e, \\u0026
    (and U+2028/9, line breaks to old JavaScript), so no name in it (`</script>`, `<!--`) can
    end or change the script block; JSON.parse and JavaScript read the same values."""
    text = json.dumps(value, ensure_ascii=False)
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, esc)
    return text


def page_html(svg, rows, nodes_info, title="", summary="", lang="en", head=None):
    """One HTML document: `svg` (text, or None for a page with the table only), the table `rows`
    (lists of cells, with the DOT id of each row's node as the first item, or None), the
    tooltip data `nodes_info` ({DOT id: {name, formula, named, shape, grad, ...}})."""
    def tr(text):
        return translate(text, lang)

    esc = html.escape
    head = head or ["#", "node", "module", "op", "formula", "shapes"]
    body = []
    for node_id, cells in rows:
        attrs = f' data-node="{esc(node_id)}"' if node_id else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    graph = _clean_svg(svg) if svg else f"<p>{esc(tr('no graph: the trace kept no graph'))}</p>"
    data = script_json(nodes_info)
    labels = script_json({"grad": tr("grad")})
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="{esc(lang)}"><head><meta charset="utf-8">',
        f"<title>{esc(title or 'tinygradx')}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{esc(title or 'tinygradx')}</h1>",
        f"<p>{esc(summary)}</p>" if summary else "",
        f"<p>{esc(tr('click a row to find its node; hover a node for its formula'))} "
        f'<button id="collapse-all">{esc(tr("collapse all"))}</button>'
        f'<button id="expand-all">{esc(tr("expand all"))}</button></p></header>',
        f'<main><section id="graph" aria-label="{esc(tr("the graph"))}">{graph}</section>',
        f'<section id="side" aria-label="{esc(tr("the trace"))}"><div id="info"></div>',
        '<table id="trace-table"><thead><tr>' +
        "".join(f"<th>{esc(tr(h))}</th>" for h in head) + "</tr></thead><tbody>",
        "\n".join(body),
        "</tbody></table></section></main>",
        '<div id="tooltip" hidden></div>',
        f'<script id="node-data" type="application/json">{data}</script>',
        f"<script>var L = {labels};{_JS}</script>",
        "</body></html>", ""])


def trace_page(t, scope=None, lang=None, params=None, depth=None, title="", summary=None,
               dims=None):
    """The page of a Trace: its table, and (when it kept its graph, `tgx.trace(graph=True)`) the
    graph behind its last op drawn beside it, each row linked to its node."""
    lang = t.lang if lang is None else lang
    svg, info, node_of = None, {}, {}
    g = t.graph
    if t.keep_graph and g.nodes and g.nodes[-1] is not None:
        from . import viz
        sub, new = g.prune()
        try:
            dot = viz.to_dot(sub, params=params, depth=depth, highlight="residual", lang=lang,
                             ids=True, dims=dims or t.user_dims, title=title or None)
            svg = viz.pipe(dot, "svg")
        except (ImportError, viz.RendererNotFound) as err:
            summary = (summary or "") + f"  (no graph drawn: {str(err).splitlines()[0]})"
            dot = None
        if dot is not None:
            info = dot.nodes_info
            for draw_id, d in info.items():
                for k in d["nodes"]:
                    node_of[k] = draw_id
            node_of = {old: node_of[n] for old, n in new.items() if n in node_of}
            if summary is None:
                summary = residual_summary_of(sub)
    name_shape = t.flow.namer()
    rows = []
    for r in t.rows:
        if scope is not None and not (r.scope == scope or r.scope.startswith(scope + ".")):
            continue
        draw_id = node_of.get(r.node)
        rows.append((draw_id, [str(r.index), draw_id or "", r.scope or "<top>", r.op,
                               translate(r.formula, lang), t.flow.shapes(r.node, name_shape)]))
    dims_line = ", ".join(f"{k}={v}" for k, v in t.dims().items())
    summary = ((summary or "") + f"  {translate('dims', lang)}: {dims_line}").strip()
    return page_html(svg, rows, info, title=title or "tinygradx trace", summary=summary,
                     lang=lang)


def residual_summary_of(g):
    """`graph.residual_summary` of the last node of a Graph (a traced one)."""
    try:
        return residual_summary(g.nodes[-1])
    except Exception:           # a traced graph whose nodes were made under no_grad
        return ""


def write(t, path, **kwargs):
    """Write `trace_page(t, **kwargs)` to `path` (UTF-8) and return the path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(trace_page(t, **kwargs))
    return path

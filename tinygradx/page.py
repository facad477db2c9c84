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
    step backward     "next" / "prev" (keys → / ←, or n / p) walk the backward pass node by
                      node in the order the engine visits them (`autograd.toposort`): the
                      current node outlined, the norm and shape of the gradient arriving at it,
                      its op's VJP (the first line of the op's own docstring, e.g. Mul's
                      "d(a*b) = (g*b, g*a)"), and the residual path lit up to where the
                      gradient has arrived
"""
from __future__ import annotations

import html
import json
import re

from . import autograd
from .dataflow import translate
from .graph import edge_grads, residual_indices, residual_summary

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
table{border-collapse:collapse;font-size:12px;width:100%}
td,th{padding:2px 6px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td{overflow-wrap:anywhere}
td:nth-child(1),td:nth-child(2),td:nth-child(4){white-space:nowrap}
th{position:sticky;top:0;background:#f0f0f0}
tr[data-node]{cursor:pointer}
tr[data-node]:hover{background:#f4f8ff}
tr.selected{background:#ffe9a8}
g.node.highlight polygon,g.node.highlight ellipse,g.node.highlight path{stroke:#1f77b4;
      stroke-width:5px}
g.node.highlight text{font-weight:bold}
g.node.lit polygon,g.node.lit ellipse,g.node.lit path{fill:#ffc9c9}
g.edge.lit path{stroke:#d62728;stroke-width:5px}
g.node.current polygon,g.node.current ellipse,g.node.current path{stroke:#ff7f0e;
      stroke-width:6px}
#stepper{margin:4px 0 0}
#step{display:block;white-space:pre-wrap;font-family:monospace;font-size:12px;color:#333}
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
      if(n){ reveal(n); n.classList.add('highlight'); info.textContent = describe(n.id);
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
  function reveal(n){      // open every collapsed frame that hides node n
    if(!n || !n.classList.contains('hidden')) return;
    var box = n.getBBox();
    clusters.forEach(function(c){
      if(c.classList.contains('collapsed') && inside(box, c.getBBox())) setCollapsed(c, false);
    });
  }
  // the backward pass, step by step, in the engine's order
  var steps = JSON.parse((document.getElementById('step-data') || {}).textContent || '[]');
  var at = -1, stepText = document.getElementById('step');
  function ends(e){
    var t = e.querySelector('title'), ab = t ? t.textContent.split('->') : [];
    return [titles[(ab[0] || '').trim()], titles[(ab[1] || '').trim()]];
  }
  function show(k){
    if(!steps.length) return;
    at = Math.max(0, Math.min(steps.length - 1, k));
    document.querySelectorAll('#graph .current, #graph .lit')
        .forEach(function(e){ e.classList.remove('current'); e.classList.remove('lit'); });
    var lit = {};
    for(var j = 0; j <= at; j++) if(steps[j].residual) lit[steps[j].id] = true;
    Object.keys(lit).forEach(function(id){
      var n = document.getElementById(id); if(n) n.classList.add('lit'); });
    document.querySelectorAll('#graph g.edge').forEach(function(e){
      var ab = ends(e); if(lit[ab[0]] && lit[ab[1]]) e.classList.add('lit'); });
    var s = steps[at], n = document.getElementById(s.id);
    if(n){ reveal(n); n.classList.add('current');
           if(n.scrollIntoView) n.scrollIntoView({block:'center', inline:'center'}); }
    var text = L.step + ' ' + (at + 1) + '/' + steps.length + '  ' +
        (s.name ? s.name + '  ' : '') + s.op + (s.scope ? ' · ' + s.scope : '') +
        (s.residual ? '  (residual path)' : '') + '\\n' + L.arrives + ': ||g|| = ' + s.norm +
        '  ' + s.shape + '\\n' + L.vjp + ': ' + s.vjp;
    stepText.textContent = text; info.textContent = text;
  }
  if(steps.length){
    document.getElementById('step-next').addEventListener('click', function(){ show(at + 1); });
    document.getElementById('step-prev').addEventListener('click', function(){ show(at - 1); });
    document.addEventListener('keydown', function(ev){
      if(ev.key === 'ArrowRight' || ev.key === 'n') show(at + 1);
      else if(ev.key === 'ArrowLeft' || ev.key === 'p') show(at - 1);
    });
  }
  window.tgxStep = show;
})();
"""


def backward_steps(g, draw_of):
    """The backward pass of the Graph `g` from its last node, one step per node that receives a
    gradient, in the engine's own order (`autograd.toposort`): [{id: the drawn node (a collapsed
    module's box for an op inside it), name, op, scope, vjp, norm, shape, residual}]. The
    gradients come from `graph.edge_grads`, a pass that writes no `.grad`. [] when the last node
    is no scalar that needs a gradient, or its graph was freed."""
    root = g.nodes[-1] if g.nodes else None
    if root is None or root._data.size != 1 or not root.requires_grad:
        return []
    try:
        norms, _ = edge_grads(root, g)
        order = autograd.toposort([root])
    except RuntimeError:                    # freed by a backward() without retain_graph
        return []
    path = set(residual_indices(g))
    steps = []
    for t in order:
        i = g.index.get(id(t))
        if i is None or i not in norms or i not in draw_of:
            continue
        ctx = t._ctx
        doc = (type(ctx).__doc__ or "").strip().splitlines() if ctx is not None else []
        vjp = doc[0] if doc else ("a leaf: the gradient is added to its .grad"
                                  if ctx is None else "")
        steps.append({"id": draw_of[i], "node": i, "op": g.ops[i] or "leaf",
                      "scope": g.scopes[i], "vjp": vjp, "norm": f"{norms[i]:.3e}",
                      "shape": "(" + ", ".join(str(d) for d in t.shape) + ")",
                      "residual": i in path})
    return steps


def _clean_svg(svg):
    """The SVG without its XML prolog, doctype, comments and xmlns attributes: inline SVG in
    HTML needs none of them, and each names a URL."""
    svg = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return svg


def page_html(svg, rows, nodes_info, title="", summary="", lang="en", head=None, steps=()):
    """One HTML document: `svg` (text, or None for a page with the table only), the table `rows`
    (lists of cells, with the DOT id of each row's node as the first item, or None), the
    tooltip data `nodes_info` ({DOT id: {name, formula, named, shape, grad, ...}}), the
    backward steps (`backward_steps`; none: no step-through)."""
    def tr(text):
        return translate(text, lang)

    esc = html.escape
    head = head or ["#", "node", "module", "op", "formula", "shapes"]
    body = []
    for node_id, cells in rows:
        attrs = f' data-node="{esc(node_id)}"' if node_id else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    graph = _clean_svg(svg) if svg else f"<p>{esc(tr('no graph: the trace kept no graph'))}</p>"
    data = json.dumps(nodes_info, ensure_ascii=False).replace("</", "<\\/")
    step_data = json.dumps(list(steps), ensure_ascii=False).replace("</", "<\\/")
    stepper = (f'<p id="stepper"><b>{esc(tr("backward, step by step"))}</b> '
               f'<button id="step-prev">{esc(tr("prev"))}</button>'
               f'<button id="step-next">{esc(tr("next"))}</button>'
               f'<span id="step"></span></p>') if steps else ""
    labels = json.dumps({"grad": tr("grad"), "step": tr("step"),
                         "arrives": tr("gradient arriving"), "vjp": "VJP"}, ensure_ascii=False)
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="{esc(lang)}"><head><meta charset="utf-8">',
        f"<title>{esc(title or 'tinygradx')}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{esc(title or 'tinygradx')}</h1>",
        f"<p>{esc(summary)}</p>" if summary else "",
        f"<p>{esc(tr('click a row to find its node; hover a node for its formula'))} "
        f'<button id="collapse-all">{esc(tr("collapse all"))}</button>'
        f'<button id="expand-all">{esc(tr("expand all"))}</button></p>{stepper}</header>',
        f'<main><section id="graph" aria-label="{esc(tr("the graph"))}">{graph}</section>',
        f'<section id="side" aria-label="{esc(tr("the trace"))}"><div id="info"></div>',
        '<table id="trace-table"><thead><tr>' +
        "".join(f"<th>{esc(tr(h))}</th>" for h in head) + "</tr></thead><tbody>",
        "\n".join(body),
        "</tbody></table></section></main>",
        '<div id="tooltip" hidden></div>',
        f'<script id="node-data" type="application/json">{data}</script>',
        f'<script id="step-data" type="application/json">{step_data}</script>',
        f"<script>var L = {labels};{_JS}</script>",
        "</body></html>", ""])


def trace_page(t, scope=None, lang=None, params=None, depth=None, title="", summary=None,
               dims=None, expand=None):
    """The page of a Trace: its table, and (when it kept its graph, `tgx.trace(graph=True)`) the
    graph behind its last op drawn beside it, each row linked to its node. `expand`: modules
    drawn op by op below `depth` (`viz.to_dot`'s)."""
    lang = t.lang if lang is None else lang
    svg, info, node_of, steps = None, {}, {}, []
    g = t.graph
    if t.keep_graph and g.nodes and g.nodes[-1] is not None:
        from . import viz
        sub, new = g.prune()
        try:
            dot = viz.to_dot(sub, params=params, depth=depth, highlight="residual", lang=lang,
                             ids=True, dims=dims or t.user_dims, title=title or None,
                             expand=expand)
            svg = viz.pipe(dot, "svg")
        except (ImportError, viz.RendererNotFound) as err:
            summary = (summary or "") + f"  (no graph drawn: {str(err).splitlines()[0]})"
            dot = None
        if dot is not None:
            info = dot.nodes_info
            for draw_id, d in info.items():
                for k in d["nodes"]:
                    node_of[k] = draw_id
            steps = backward_steps(sub, node_of)
            old_of = {n: old for old, n in new.items()}
            for st in steps:                 # the seed name of the op itself, not its box's
                old = old_of.get(st.pop("node"))
                st["name"] = t.flow.flows[old].name if old is not None else ""
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
                     lang=lang, steps=steps)


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

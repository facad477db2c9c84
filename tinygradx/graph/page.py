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
                      view; a row whose op is inside a module drawn as one box (`depth`) shows
                      the picture with that module open (drawn beforehand, `_variants`) and
                      highlights the op itself; inside a collapsed frame, the frame opens
    click a frame     a module's dashed frame collapses to a box of its title: its nodes and
                      inner edges hidden, what lies below moves up (what is beside it is
                      squeezed along), and an edge to a hidden node ends at the box; click again
                      to expand; buttons collapse and expand all
    step backward     "next" / "prev" (keys → / ←, or n / p) walk the backward pass node by
                      node in the order the engine visits them (`autograd.toposort`): the
                      current node outlined, the norm and shape of the gradient arriving at it,
                      its op's backward formula (`vjps.vjp_text`: Mul's "d(a ⊙ b) = (g ⊙ b,
                      g ⊙ a)", LayerNorm's as docs/walkthrough.md derives it), and the
                      residual path lit up to where the gradient has arrived
"""
from __future__ import annotations

import html
import json
import re

from .. import autograd
from .words import translate
from .vjps import vjp_text
from . import edge_grads, residual_indices, residual_summary

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

_JS = r"""
(function(){
  var main = JSON.parse(document.getElementById('node-data').textContent);
  var variants = JSON.parse(document.getElementById('variant-data').textContent || '{}');
  var steps = JSON.parse(document.getElementById('step-data').textContent || '[]');
  var graph = document.getElementById('graph'), home = graph.innerHTML, view = null;
  var tip = document.getElementById('tooltip'), info = document.getElementById('info');
  var data = main, nodes = [], clusters = [], edges = [], titles = {}, svg = null, geo = null;
  var legend = null;
  function describe(id){
    var d = data[id]; if(!d) return '';
    var lines = [(d.name ? d.name + '  ' : '') + d.named, d.shape, d.formula,
                 d.op + (d.scope ? '  ' + d.scope : '')];
    if(d.grad) lines.push(L.grad + ' ' + d.grad);
    return lines.join('\n');
  }
  function inside(a, b){   // bbox a inside bbox b
    return a.x >= b.x - 1 && a.y >= b.y - 1 && a.x + a.width <= b.x + b.width + 1 &&
           a.y + a.height <= b.y + b.height + 1;
  }
  function pts(s){ return s.trim().split(/\s+/).map(function(p){
    var xy = p.split(','); return [parseFloat(xy[0]), parseFloat(xy[1])]; }); }
  function bind(){         // (re)read the drawn SVG: handlers and the geometry to lay out from
    svg = graph.querySelector('svg');
    nodes = Array.prototype.slice.call(graph.querySelectorAll('g.node'));
    edges = Array.prototype.slice.call(graph.querySelectorAll('g.edge'));
    var all = Array.prototype.slice.call(graph.querySelectorAll('g.cluster'));
    clusters = all.filter(function(c){
      return !/legend/.test(c.querySelector('title').textContent); });
    var lg = all.filter(function(c){ return clusters.indexOf(c) < 0; })[0];
    legend = lg ? lg.getBBox() : null;
    titles = {};
    nodes.forEach(function(n){
      var t = n.querySelector('title'); if(t) titles[t.textContent.trim()] = n.id;
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
    clusters.forEach(function(c){
      c.addEventListener('click', function(ev){
        setCollapsed(c, !c.classList.contains('collapsed')); ev.stopPropagation(); });
    });
    geo = {h: svg ? svg.viewBox.baseVal.height : 0,
      ph: svg ? parseFloat(svg.getAttribute('height')) : 0,
      node: nodes.map(function(n){ return n.getBBox(); }),
      box: clusters.map(function(c){ return c.getBBox(); }),
      poly: clusters.map(function(c){ var p = c.querySelector('polygon');
                                      return p ? pts(p.getAttribute('points')) : []; }),
      text: clusters.map(function(c){ var t = c.querySelector('text');
                                      return t ? parseFloat(t.getAttribute('y')) : 0; }),
      path: edges.map(function(e){ var p = e.querySelector('path');
                                   return p ? p.getAttribute('d') : ''; }),
      head: edges.map(function(e){ var p = e.querySelector('polygon');
                                   return p ? p.getAttribute('points') : ''; })};
  }
  function members(k){ var box = geo.box[k];
    return nodes.filter(function(n, i){ return inside(geo.node[i], box); }); }
  // Lay the picture out again from the drawn geometry: a collapsed frame shrinks to a box of
  // its title, everything below it moves up by the height it gave back (what is beside it is
  // squeezed with it), and each edge whose end is hidden ends at the box of the frame hiding it.
  var FOLDED = 26;
  function layout(){
    var open = clusters.map(function(c){ return c.classList.contains('collapsed'); });
    var outer = open.map(function(on, k){ return on && !clusters.some(function(o, j){
      return j !== k && open[j] && inside(geo.box[k], geo.box[j]); }); });
    var cut = [];            // [top, height] of each folded frame
    outer.forEach(function(on, k){ if(on) cut.push([geo.box[k].y, geo.box[k].height]); });
    function dy(y){          // how far a point at y moves up: the frame's span is squeezed
      var s = 0;             // into FOLDED, so beside a frame things close up smoothly
      cut.forEach(function(c){ var saved = c[1] - FOLDED;
        s += y >= c[0] + c[1] ? saved : y > c[0] ? (y - c[0]) * saved / c[1] : 0; });
      return s;
    }
    var hide = {}, owner = {};
    clusters.forEach(function(c, k){ if(!outer[k]) return;
      members(k).forEach(function(n){ hide[n.id] = true; owner[n.id] = k; }); });
    nodes.forEach(function(n, i){
      n.classList.toggle('hidden', !!hide[n.id]);
      if(!legend || !inside(geo.node[i], legend))      // the legend keeps its place
        n.setAttribute('transform', 'translate(0,' + (-dy(geo.node[i].y)) + ')');
    });
    clusters.forEach(function(c, k){
      var within = clusters.some(function(o, j){
        return j !== k && outer[j] && inside(geo.box[k], geo.box[j]); });
      c.classList.toggle('hidden', within);
      var top = geo.box[k].y, p = c.querySelector('polygon'), t = c.querySelector('text');
      if(p) p.setAttribute('points', geo.poly[k].map(function(q){
        var y = outer[k] && q[1] > top + FOLDED ? top + FOLDED : q[1];
        return q[0] + ',' + (y - dy(outer[k] ? top : y)); }).join(' '));
      if(t) t.setAttribute('y', geo.text[k] - dy(top));
    });
    function place(id){      // [x, top, bottom] of a node, or of the folded frame hiding it
      if(owner[id] !== undefined){ var b = geo.box[owner[id]], d = dy(b.y);
        return [b.x + b.width / 2, b.y - d, b.y - d + FOLDED, owner[id]]; }
      var i = nodes.findIndex(function(n){ return n.id === id; });
      if(i < 0) return null;
      var g = geo.node[i], d2 = dy(g.y);
      return [g.x + g.width / 2, g.y - d2, g.y + g.height - d2, -1];
    }
    edges.forEach(function(e, k){
      var t = e.querySelector('title'), ab = t ? t.textContent.split('->') : [];
      var a = titles[(ab[0] || '').trim()], b = titles[(ab[1] || '').trim()];
      var path = e.querySelector('path'), head = e.querySelector('polygon');
      if(!path || !a || !b) return;
      var pa = place(a), pb = place(b);
      var gone = !pa || !pb || (pa[3] >= 0 && pa[3] === pb[3]);
      e.classList.toggle('hidden', gone);
      if(gone) return;
      if(pa[3] < 0 && pb[3] < 0){        // both ends drawn: the spline, each point moved
        path.setAttribute('d', geo.path[k].replace(/(-?[\d.]+),(-?[\d.]+)/g,
          function(m, x, y){ return x + ',' + (parseFloat(y) - dy(parseFloat(y))); }));
        if(head) head.setAttribute('points', geo.head[k].replace(/(-?[\d.]+),(-?[\d.]+)/g,
          function(m, x, y){ return x + ',' + (parseFloat(y) - dy(parseFloat(y))); }));
        return;
      }
      var down = pb[1] >= pa[2];           // from the tail's bottom to the head's top
      var x1 = pa[0], y1 = down ? pa[2] : pa[1], x2 = pb[0], y2 = down ? pb[1] : pb[2];
      path.setAttribute('d', 'M' + x1 + ',' + y1 + 'L' + x2 + ',' + y2);
      if(head){ var l = Math.hypot(x2 - x1, y2 - y1) || 1, ux = (x2 - x1) / l,
                    uy = (y2 - y1) / l;
        head.setAttribute('points', [[x2, y2], [x2 - 7 * ux - 3 * uy, y2 - 7 * uy + 3 * ux],
          [x2 - 7 * ux + 3 * uy, y2 - 7 * uy - 3 * ux]].map(function(q){
            return q[0] + ',' + q[1]; }).join(' ')); }
    });
    if(svg && geo.h){ var total = dy(Infinity), vb = svg.viewBox.baseVal;
      vb.height = geo.h - total;
      svg.setAttribute('height', (geo.ph * (geo.h - total) / geo.h) + 'pt'); }
  }
  function setCollapsed(c, on){ c.classList.toggle('collapsed', on); layout(); }
  function show(v){        // the picture drawn with module v open (null: the page's own)
    if(v === view) return;
    graph.innerHTML = v === null ? home : variants[v].svg;
    data = v === null ? main : variants[v].info; view = v; bind();
  }
  function reveal(n){      // open every collapsed frame that hides node n
    if(!n || !n.classList.contains('hidden')) return;
    var i = nodes.indexOf(n);
    clusters.forEach(function(c, k){
      if(c.classList.contains('collapsed') && inside(geo.node[i], geo.box[k]))
        c.classList.remove('collapsed'); });
    layout();
  }
  function mark(id, cls){
    var n = document.getElementById(id);
    if(n){ reveal(n); n.classList.add(cls);
           if(n.scrollIntoView) n.scrollIntoView({block:'center', inline:'center'}); }
    return n;
  }
  document.querySelectorAll('tr[data-node]').forEach(function(r){
    r.addEventListener('click', function(){
      document.querySelectorAll('.highlight')
          .forEach(function(e){ e.classList.remove('highlight'); });
      document.querySelectorAll('tr.selected')
          .forEach(function(e){ e.classList.remove('selected'); });
      r.classList.add('selected');
      // an op inside a module drawn as one box: the picture with that module open
      var v = variants[r.dataset.node] ? r.dataset.node : null;
      show(v);
      var id = v === null ? r.dataset.node : variants[v].rows[r.dataset.row];
      var n = mark(id, 'highlight');
      if(n) info.textContent = describe(n.id);
    });
  });
  document.getElementById('collapse-all').addEventListener('click', function(){
    clusters.forEach(function(c){ c.classList.add('collapsed'); }); layout(); });
  document.getElementById('expand-all').addEventListener('click', function(){
    clusters.forEach(function(c){ c.classList.remove('collapsed'); }); layout(); });
  bind();
  // the backward pass, step by step, in the engine's order
  var at = -1, stepText = document.getElementById('step');
  function step(k){
    if(!steps.length) return;
    show(null);
    at = Math.max(0, Math.min(steps.length - 1, k));
    graph.querySelectorAll('.current, .lit')
        .forEach(function(e){ e.classList.remove('current'); e.classList.remove('lit'); });
    var lit = {};
    for(var j = 0; j <= at; j++) if(steps[j].residual) lit[steps[j].id] = true;
    Object.keys(lit).forEach(function(id){
      var n = document.getElementById(id); if(n) n.classList.add('lit'); });
    edges.forEach(function(e){
      var t = e.querySelector('title'), ab = t ? t.textContent.split('->') : [];
      if(lit[titles[(ab[0] || '').trim()]] && lit[titles[(ab[1] || '').trim()]])
        e.classList.add('lit'); });
    var s = steps[at];
    mark(s.id, 'current');
    var text = L.step + ' ' + (at + 1) + '/' + steps.length + '  ' +
        (s.name ? s.name + '  ' : '') + s.op + (s.scope ? ' · ' + s.scope : '') +
        (s.residual ? '  ' + L.residual : '') + '\n' + L.arrives + ': ||g|| = ' + s.norm +
        '  ' + s.shape + '\n' + L.vjp + ': ' + s.vjp;
    stepText.textContent = text; info.textContent = text;
  }
  if(steps.length){
    document.getElementById('step-next').addEventListener('click', function(){ step(at + 1); });
    document.getElementById('step-prev').addEventListener('click', function(){ step(at - 1); });
    document.addEventListener('keydown', function(ev){
      if(ev.key === 'ArrowRight' || ev.key === 'n') step(at + 1);
      else if(ev.key === 'ArrowLeft' || ev.key === 'p') step(at - 1);
    });
  }
})();
"""


def backward_steps(g, draw_of, lang="en"):
    """The backward pass of the Graph `g` from its last node, one step per node that receives a
    gradient, in the engine's own order (`autograd.toposort`): [{id: the drawn node (a collapsed
    module's box for an op inside it), name, op, scope, vjp, norm, shape, residual}]. The
    gradients come from `graph.edge_grads`, the training walk with a store that writes no
    `.grad`; `vjp` is the op's backward formula (`vjps.vjp_text`, in `lang`). [] when the last
    node is no scalar that needs a gradient, or its graph was freed."""
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
        steps.append({"id": draw_of[i], "node": i, "op": g.ops[i] or translate("leaf", lang),
                      "scope": g.scopes[i], "vjp": vjp_text(t._ctx, lang),
                      "norm": f"{norms[i]:.3e}",
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


def script_json(value):
    """JSON to place inside a <script> element: `<`, `>` and `&` as \\u003c, \\u003e, \\u0026
    (and U+2028/9, line breaks to old JavaScript), so no name in it (`</script>`, `<!--`) can
    end or change the script block; JSON.parse and JavaScript read the same values."""
    text = json.dumps(value, ensure_ascii=False)
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, esc)
    return text


def page_html(svg, rows, nodes_info, title="", summary="", lang="en", head=None, steps=(),
              variants=None):
    """One HTML document: `svg` (text, or None for a page with the table only), the table `rows`
    (lists of cells, with the DOT id of each row's node as the first item, or None), the
    tooltip data `nodes_info` ({DOT id: {name, formula, named, shape, grad, ...}}), the
    backward steps (`backward_steps`; none: no step-through), the pictures with one collapsed
    module open (`_variants`)."""
    def tr(text):
        return translate(text, lang)

    esc = html.escape
    head = head or ["#", "node", "module", "op", "formula", "shapes"]
    body = []
    for node_id, cells in rows:
        attrs = f' data-node="{esc(node_id)}" data-row="{esc(cells[0])}"' if node_id else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    graph = _clean_svg(svg) if svg else f"<p>{esc(tr('no graph: the trace kept no graph'))}</p>"
    data = script_json(nodes_info)
    step_data = script_json(list(steps))
    stepper = (f'<p id="stepper"><strong>{esc(tr("backward, step by step"))}</strong> '
               f'<button id="step-prev">{esc(tr("prev"))}</button>'
               f'<button id="step-next">{esc(tr("next"))}</button>'
               f'<span id="step"></span></p>') if steps else ""
    labels = script_json({"grad": tr("grad"), "step": tr("step"),
                          "arrives": tr("gradient arriving"), "vjp": tr("VJP"),
                          "residual": tr("(residual path)")})
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
        '<script id="variant-data" type="application/json">' +
        script_json(variants or {}) + "</script>",
        f"<script>var L = {labels};{_JS}</script>",
        "</body></html>", ""])


def trace_page(t, scope=None, lang=None, params=None, depth=None, title="", summary=None,
               dims=None, expand=None, values=False):
    """The page of a Trace: its table, and (when it kept its graph, `tgx.trace(graph=True)`) the
    graph behind its last op drawn beside it, each row linked to its node. `expand`: modules
    drawn op by op below `depth`; `values`: each tensor's mean and std in its node (both
    `viz.to_dot`'s)."""
    lang = t.lang if lang is None else lang
    svg, info, node_of, steps, variants = None, {}, {}, [], {}
    g = t.graph
    if t.keep_graph and g.nodes and g.nodes[-1] is not None:
        from . import viz
        sub, new = g.prune()
        try:
            dot = viz.to_dot(sub, params=params, depth=depth, highlight="residual", lang=lang,
                             ids=True, dims=dims or t.user_dims, title=title or None,
                             expand=expand, values=values)
            svg = viz.pipe(dot, "svg")
        except (ImportError, viz.RendererNotFound) as err:
            summary = (summary or "") + f"  (no graph drawn: {str(err).splitlines()[0]})"
            dot = None
        if dot is not None:
            info = dot.nodes_info
            for draw_id, d in info.items():
                for k in d["nodes"]:
                    node_of[k] = draw_id
            steps = backward_steps(sub, node_of, lang)
            variants = _variants(viz, sub, new, t, info, dict(
                params=params, depth=depth, highlight="residual", lang=lang, ids=True,
                dims=dims or t.user_dims, title=title or None, values=values), expand)
            old_of = {n: old for old, n in new.items()}
            for st in steps:                 # the seed name of the op itself, not its box's
                old = old_of.get(st.pop("node"))
                st["name"] = translate(t.flow.flows[old].name, lang) if old is not None else ""
            node_of = {old: node_of[n] for old, n in new.items() if n in node_of}
            if summary is None:
                summary = residual_summary_of(sub, lang)
    name_shape = t.flow.namer()
    rows = []
    for r in t.rows:
        if scope is not None and not (r.scope == scope or r.scope.startswith(scope + ".")):
            continue
        draw_id = node_of.get(r.node)
        rows.append((draw_id, [str(r.index), draw_id or "", r.scope or translate("<top>", lang),
                               r.op,
                               translate(r.formula, lang), t.flow.shapes(r.node, name_shape)]))
    dims_line = ", ".join(f"{k}={v}" for k, v in t.dims().items())
    summary = ((summary or "") + f"  {translate('dims', lang)}: {dims_line}").strip()
    return page_html(svg, rows, info, title=title or "tinygradx trace", summary=summary,
                     lang=lang, steps=steps, variants=variants)


def _variants(viz, g, new, t, info, kwargs, expand):
    """{DOT id of a collapsed module: the picture drawn with that module open too}: {svg, info,
    rows: {trace row index: DOT id of its node there}}. A row whose op sits in the box opens
    it on the page (one box of one op needs none)."""
    out, row_of = {}, {new[r.node]: r.index for r in t.rows if r.node in new}
    base = [expand] if isinstance(expand, str) else list(expand or ())
    for draw_id, d in info.items():
        ops = [k for k in d["nodes"] if g.ops[k] is not None]
        if not d.get("module") or len(ops) < 2 or d["scope"].endswith("/backward"):
            continue
        dot = viz.to_dot(g, expand=base + [d["scope"]], **kwargs)
        rows = {}
        for vid, vd in dot.nodes_info.items():
            for k in vd["nodes"]:
                if k in row_of:
                    rows[row_of[k]] = vid
        out[draw_id] = {"svg": _clean_svg(viz.pipe(dot, "svg")), "info": dot.nodes_info,
                        "rows": rows}
    return out


def residual_summary_of(g, lang="en"):
    """`graph.residual_summary` of the last node of a Graph (a traced one)."""
    try:
        return residual_summary(g.nodes[-1], lang)
    except Exception:           # a traced graph whose nodes were made under no_grad
        return ""


def write(t, path, **kwargs):
    """Write `trace_page(t, **kwargs)` to `path` (UTF-8) and return the path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(trace_page(t, **kwargs))
    return path

/* graphlint HTML report: filters, and the collapsed graph laid out with dagre and drawn as SVG.
   The page data (#gl-data) comes from graphlint/html/page.py; status numbers match status.py. */
(function () {
  'use strict';
  var DATA = JSON.parse(document.getElementById('gl-data').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  var state = [];  // per model: {target, scale, item, layout}

  function showErrors() {
    var errs = window.glErrors || [];
    document.getElementById('gl-errors').textContent = errs.join('\n');
    document.body.setAttribute('data-errors', String(errs.length));
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }
  function clip(s, n) { return s.length > n ? '…' + s.slice(s.length - n + 1) : s; }  // keeps the end
  function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }  // keeps the start

  /* ---- findings filters ---- */
  function applyFilters() {
    var q = (document.getElementById('gl-q').value || '').toLowerCase();
    var sev = {}, tgt = {};
    document.querySelectorAll('.filters input[data-sev]').forEach(function (c) { sev[c.dataset.sev] = c.checked; });
    document.querySelectorAll('.filters input[data-target]').forEach(function (c) { tgt[c.dataset.target] = c.checked; });
    var shown = 0;
    document.querySelectorAll('.rule-group').forEach(function (g) {
      var n = 0;
      g.classList.toggle('open', !!q || g.classList.contains('expanded'));
      g.querySelectorAll('tr.finding').forEach(function (r) {
        var vis = sev[r.dataset.sev] !== false && tgt[r.dataset.target] !== false &&
          (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
        r.classList.toggle('hidden', !vis);
        if (vis) { n++; }
      });
      g.classList.toggle('empty', n === 0);
      shown += n;
    });
    document.querySelectorAll('details.sev-group').forEach(function (d) {
      d.classList.toggle('empty', !d.querySelector('.rule-group:not(.empty)'));
    });
    document.getElementById('gl-shown').textContent = String(shown);
    document.body.setAttribute('data-rows', String(shown));
  }

  /* ---- graph ---- */
  function itemSize(it, multi) {
    var a = it.op || it.l, b = it.k === 'op' ? clip(it.l, 34) : (it.n + ' nodes');
    if (it.k === 'input' || it.k === 'output') { a = it.k; b = clip(it.l, 30); }
    if (it.k !== 'op' && it.k !== 'input' && it.k !== 'output') { a = cut(it.l, 38); b = cut(it.op, 42); }
    var w = Math.min(320, Math.max(96, 7 * Math.max(a.length, b.length) + 26));
    return {w: w, h: multi && it.st ? 50 : 40, a: a, b: b};
  }

  /* Opening a folded box (models small enough carry m.sub, m.nedges, m.pedges): its nodes are
     drawn instead, as items appended after m.items (m.all), and edges come from the node level. */
  function prepare(m) {
    m.all = m.items.slice();
    if (!m.sub) { return; }
    m.owner = []; m.member = [];
    m.items.forEach(function (it, i) {
      (it.rg || []).forEach(function (r) { for (var n = r[0]; n <= r[1]; n++) { m.owner[n] = i; } });
    });
    m.sub.forEach(function (it) { m.member[it.i] = m.all.length; m.all.push(it); });
  }

  function drawn(k) {
    var m = DATA.models[k], open = state[k].open, out = [];
    m.items.forEach(function (it, i) {
      if (!open[i]) { out.push(i); return; }
      it.rg.forEach(function (r) { for (var n = r[0]; n <= r[1]; n++) { out.push(m.member[n]); } });
    });
    return out;
  }

  function edgesOf(k) {
    var m = DATA.models[k], open = state[k].open, seen = {}, out = [];
    function add(a, b) { var key = a + ' ' + b; if (a !== b && !seen[key]) { seen[key] = 1; out.push([a, b]); } }
    function at(n) { var o = m.owner[n]; return open[o] ? m.member[n] : o; }
    m.edges.forEach(function (e) { if (!open[e[0]] && !open[e[1]]) { add(e[0], e[1]); } });
    if (Object.keys(open).length) {
      m.nedges.forEach(function (e) { if (open[m.owner[e[0]]] || open[m.owner[e[1]]]) { add(at(e[0]), at(e[1])); } });
      m.pedges.forEach(function (e) {
        if (open[m.owner[e[1]]]) { if (m.items[e[0]].k === 'input') { add(e[0], at(e[1])); } else { add(at(e[1]), e[0]); } }
      });
    }
    return out;
  }

  function layout(k) {
    var m = DATA.models[k], t = state[k].target, multi = m.targets.length > 1;
    var g = new dagre.graphlib.Graph({compound: true});
    g.setGraph({rankdir: 'TB', nodesep: 16, ranksep: 26, marginx: 8, marginy: 8});
    g.setDefaultEdgeLabel(function () { return {}; });
    state[k].drawn = drawn(k);
    state[k].drawn.forEach(function (i) {
      var it = m.all[i], s = itemSize(it, multi);
      g.setNode(String(i), {width: s.w, height: s.h, s: s});
      var isl = it.isl ? it.isl[t] : 0;  // single nodes of an unsupported island sit in its outline
      if (isl) {
        if (!g.hasNode('isl' + isl)) { g.setNode('isl' + isl, {label: 'island ' + isl, paddingTop: 18}); }
        g.setParent(String(i), 'isl' + isl);
      }
    });
    edgesOf(k).forEach(function (e) { g.setEdge(String(e[0]), String(e[1])); });
    dagre.layout(g);
    return g;
  }

  function svgFor(k, g) {
    var m = DATA.models[k], t = state[k].target, multi = m.targets.length > 1;
    var gw = Math.ceil(g.graph().width), gh = Math.ceil(g.graph().height);
    var out = ['<svg xmlns="' + NS + '" class="gl" viewBox="0 0 ' + gw + ' ' + gh + '" data-w="' + gw + '" data-h="' + gh +
      '" role="img" aria-label="graph of ' + esc(m.path) + '"><defs><marker id="arr' + k + '" viewBox="0 0 10 10" refX="9" ' +
      'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#9aa3b2"/>' +
      '</marker></defs>'];
    var islands = 0;
    g.nodes().forEach(function (id) {
      if (id.indexOf('isl') !== 0) { return; }
      var n = g.node(id);
      islands++;
      out.push('<g class="island" data-island="' + id.slice(3) + '"><rect x="' + (n.x - n.width / 2) + '" y="' +
        (n.y - n.height / 2) + '" width="' + n.width + '" height="' + n.height + '" rx="10"/><text x="' +
        (n.x - n.width / 2 + 8) + '" y="' + (n.y - n.height / 2 + 13) + '">' + esc(n.label) + '</text></g>');
    });
    g.edges().forEach(function (e) {
      var p = g.edge(e).points;
      var d = 'M' + p.map(function (q) { return q.x.toFixed(1) + ',' + q.y.toFixed(1); }).join('L');
      out.push('<path class="edge" d="' + d + '" marker-end="url(#arr' + k + ')"/>');
    });
    state[k].drawn.forEach(function (i) {
      var it = m.all[i], n = g.node(String(i)), s = n.s, x = n.x - s.w / 2, y = n.y - s.h / 2;
      var port = it.k === 'input' || it.k === 'output';
      var cls = port ? 'port' : 's' + it.st[t];
      var tip = it.t + (it.st ? '\n' + m.targets.map(function (tt, j) {
        return DATA.targets[tt] + ': ' + DATA.statusNames[it.st[j]] + (it.fc[j] ? ' (' + it.fc[j] + ' findings)' : '');
      }).join('\n') : '');
      var parts = ['<g class="item kind-' + it.k + '" data-item="' + i + '" data-status="' + (port ? '' : it.st[t]) +
        '" transform="translate(' + x.toFixed(1) + ',' + y.toFixed(1) + ')"><title>' + esc(tip) + '</title>'];
      if (it.k === 'run') { parts.push('<rect class="shadow" x="5" y="5" width="' + s.w + '" height="' + s.h + '" rx="6"/>'); }
      parts.push('<rect class="box ' + cls + '" width="' + s.w + '" height="' + s.h + '" rx="' + (port ? 18 : 6) + '"/>');
      if (!port && it.k !== 'op') {  // a folded box: double border
        parts.push('<rect class="inner ' + cls + '" x="3" y="3" width="' + (s.w - 6) + '" height="' + (s.h - 6) + '" rx="4"/>');
      }
      parts.push('<text class="op" x="' + s.w / 2 + '" y="16" text-anchor="middle">' + esc(s.a) + '</text>');
      parts.push('<text class="nm" x="' + s.w / 2 + '" y="31" text-anchor="middle">' + esc(s.b) + '</text>');
      if (it.r) {
        var bw = 10 + 7 * String(it.r).length;
        parts.push('<rect class="badge" x="' + (s.w - bw + 4) + '" y="-8" width="' + (bw + 6) + '" height="16" rx="8"/>' +
          '<text class="badge" x="' + (s.w - bw / 2 + 7) + '" y="4" text-anchor="middle">×' + it.r + '</text>');
      }
      if (multi && it.st) {
        it.st.forEach(function (st, j) {
          parts.push('<rect class="chip s' + st + '" x="' + (6 + j * 14) + '" y="38" width="11" height="8" rx="2">' +
            '<title>' + esc(DATA.targets[m.targets[j]] + ': ' + DATA.statusNames[st]) + '</title></rect>');
        });
      }
      parts.push('</g>');
      out.push(parts.join(''));
    });
    out.push('</svg>');
    return {html: out.join(''), islands: islands};
  }

  function fit(k, factor) {
    var box = document.getElementById('graph-' + k), svg = box.querySelector('svg');
    if (!svg) { return; }
    var gw = +svg.dataset.w, gh = +svg.dataset.h;
    // Fit the width, but not below a readable size: a tall graph scrolls inside its box instead.
    var s = factor === 'fit' || !state[k].scale ? Math.min(1, Math.max(0.7, (box.clientWidth - 4) / gw))
      : state[k].scale * factor;
    state[k].scale = Math.max(0.05, Math.min(3, s));
    svg.setAttribute('width', String(Math.round(gw * state[k].scale)));
    svg.setAttribute('height', String(Math.round(gh * state[k].scale)));
  }

  function centreWorst(k) {
    // The box starts scrolled to the first of the worst items, so the problem is in view.
    var m = DATA.models[k], t = state[k].target, best = -1, worst = 0;
    state[k].drawn.forEach(function (i) { var it = m.all[i]; if (it.st && it.st[t] > worst) { worst = it.st[t]; best = i; } });
    var box = document.getElementById('graph-' + k), el = box.querySelector('g.item[data-item="' + best + '"]');
    if (!el) { return; }
    var b = box.getBoundingClientRect(), r = el.getBoundingClientRect();
    box.scrollTop += r.top - b.top - box.clientHeight / 3;
    box.scrollLeft += r.left - b.left - box.clientWidth / 2;
  }

  function draw(k) {
    if (!DATA.models[k].items.length) {
      document.getElementById('graph-' + k).innerHTML = '<p class="muted">No nodes to draw.</p>';
      return;
    }
    var t0 = performance.now();
    var g = layout(k), t1 = performance.now();
    var r = svgFor(k, g), box = document.getElementById('graph-' + k);
    box.innerHTML = r.html;
    var svg = box.querySelector('svg');
    svg.setAttribute('data-items', String(svg.querySelectorAll('g.item').length));
    svg.setAttribute('data-islands', String(r.islands));
    svg.setAttribute('data-layout-ms', (t1 - t0).toFixed(0));
    state[k].scale = 0;
    fit(k, 'fit');
    if (state[k].item !== null) { select(k, state[k].item, false); } else { centreWorst(k); }
  }

  function findingHtml(fid, multi) {
    var row = document.getElementById('f' + fid);
    if (!row) { return ''; }
    var grp = row.closest('.rule-group'), m = row.querySelector('td.msg');
    var tchip = multi ? ' <span class="tchip">' + esc(DATA.targets[+row.dataset.target]) + '</span>' : '';
    return '<div class="pf" data-fid="' + fid + '"><span class="sev ' + row.dataset.sev + '">' + row.dataset.sev +
      '</span><b>' + esc(grp ? grp.dataset.rule : '') + '</b>' + tchip + ' <a href="#f' + fid + '" class="to-row">row</a>' +
      '<div class="text">' + m.querySelector('.text').innerHTML + '</div>' +
      (m.querySelector('.fix') ? m.querySelector('.fix').outerHTML : '') +
      (m.querySelector('.origin') ? m.querySelector('.origin').outerHTML : '') + '</div>';
  }

  function select(k, i, scroll) {
    var m = DATA.models[k], it = m.all[i], box = document.getElementById('graph-' + k);
    state[k].item = i;
    box.querySelectorAll('g.item.sel').forEach(function (e) { e.classList.remove('sel'); });
    var el = box.querySelector('g.item[data-item="' + i + '"]');
    if (el) { el.classList.add('sel'); }
    if (el && scroll) { el.scrollIntoView({block: 'center', inline: 'center'}); }
    var multi = m.targets.length > 1, h = ['<h4>' + esc(it.l) + '</h4><div class="muted">' + esc(it.t) + '</div>'];
    if (m.sub && it.k !== 'op' && it.rg) { h.push('<button type="button" class="toggle" data-open="' + i + '">open this box</button>'); }
    if (it.p !== undefined) { h.push('<button type="button" class="toggle" data-close="' + it.p + '">fold back into ' + esc(m.items[it.p].l) + '</button>'); }
    if (it.k === 'op') { h.push('<div>' + esc(it.op) + ' <span class="muted">(' + esc(it.dom) + ', node #' + it.i + ')</span></div>'); }
    else if (it.n) { h.push('<div>' + it.n + ' nodes' + (it.r ? ', ×' + it.r + ' repeats' : '') + ': ' + esc(it.op) + '</div>'); }
    if (it.st) {
      h.push('<table><tbody>' + m.targets.map(function (tt, j) {
        var isl = it.isl && it.isl[j] ? ', island ' + it.isl[j] : '';
        return '<tr><td>' + esc(DATA.targets[tt]) + '</td><td><span class="st st' + it.st[j] + '">' +
          esc(DATA.statusNames[it.st[j]]) + '</span>' + isl + '</td><td>' + it.fc[j] + ' finding' + (it.fc[j] === 1 ? '' : 's') +
          '</td></tr>';
      }).join('') + '</tbody></table>');
    }
    var attrs = it.a ? Object.keys(it.a) : [];
    if (attrs.length) {
      h.push('<details open><summary>attributes</summary><table><tbody>' + attrs.map(function (a) {
        return '<tr><td><code>' + esc(a) + '</code></td><td><code>' + esc(it.a[a]) + '</code></td></tr>';
      }).join('') + '</tbody></table></details>');
    }
    var fids = it.f || [], shown = fids.slice(0, 60);
    h.push('<div class="pfs">' + shown.map(function (f) { return findingHtml(f, multi); }).join('') + '</div>');
    var total = (it.fc || []).reduce(function (a, b) { return a + b; }, 0);
    if (total > shown.length) { h.push('<p class="muted">' + (total - shown.length) + ' more: see the findings below.</p>'); }
    if (it.st && !total) { h.push('<p class="muted">No findings.</p>'); }
    var panel = document.getElementById('panel-' + k);
    panel.innerHTML = h.join('');
    panel.setAttribute('data-item', String(i));
    panel.setAttribute('data-findings', String(shown.length));
  }

  function itemOfNode(k, node) {
    var m = DATA.models[k];
    if (m.owner) { return state[k].open[m.owner[node]] ? m.member[node] : m.owner[node]; }
    var items = m.items;
    for (var i = 0; i < items.length; i++) {
      var rg = items[i].rg || [];
      for (var j = 0; j < rg.length; j++) { if (node >= rg[j][0] && node <= rg[j][1]) { return i; } }
    }
    return -1;
  }

  function showNode(k, node, target) {
    if (target !== undefined && target !== '' && DATA.models[k].targets.length > 1) {
      var local = DATA.models[k].targets.indexOf(+target);
      var radio = document.querySelector('input[name="gl-t' + k + '"][value="' + local + '"]');
      if (radio && !radio.checked) { radio.checked = true; state[k].target = local; draw(k); }
    }
    var i = itemOfNode(k, +node);
    if (i >= 0) {
      document.querySelector('.graph-section[data-model="' + k + '"]').scrollIntoView({block: 'start'});
      select(k, i, true);
    }
  }

  function init() {
    document.querySelectorAll('.filters input').forEach(function (i) { i.addEventListener('input', applyFilters); });
    document.querySelectorAll('.more-btn').forEach(function (b) {
      b.addEventListener('click', function () { b.closest('.rule-group').classList.add('expanded'); b.remove(); applyFilters(); });
    });
    document.addEventListener('click', function (e) {
      var a = e.target.closest('a.show');
      if (a) { e.preventDefault(); showNode(+a.dataset.model, a.dataset.node, a.dataset.target); return; }
      var r = e.target.closest('a.to-row');
      if (r) {
        var row = document.getElementById(r.getAttribute('href').slice(1));
        if (row) {
          row.closest('.rule-group').classList.add('expanded'); applyFilters();
          document.querySelectorAll('tr.focus').forEach(function (x) { x.classList.remove('focus'); });
          row.classList.add('focus');
        }
      }
    });
    applyFilters();
    var t0 = performance.now();
    DATA.models.forEach(function (m, k) {
      prepare(m);
      state[k] = {target: 0, scale: 0, item: null, open: {}, drawn: []};
      document.getElementById('panel-' + k).addEventListener('click', function (e) {
        var b = e.target.closest('button.toggle');
        if (!b) { return; }
        if (b.dataset.open) { state[k].open[b.dataset.open] = true; state[k].item = m.member[m.items[+b.dataset.open].rg[0][0]]; }
        else { delete state[k].open[b.dataset.close]; state[k].item = +b.dataset.close; }
        draw(k);
        select(k, state[k].item, true);
      });
      var box = document.getElementById('graph-' + k);
      box.addEventListener('click', function (e) {
        var g = e.target.closest('g.item');
        if (g) { select(k, +g.dataset.item, false); }
      });
      document.querySelectorAll('input[name="gl-t' + k + '"]').forEach(function (r) {
        r.addEventListener('change', function () { state[k].target = +r.value; draw(k); });
      });
      document.querySelectorAll('.graph-section[data-model="' + k + '"] button[data-zoom]').forEach(function (b) {
        b.addEventListener('click', function () { fit(k, b.dataset.zoom === 'fit' ? 'fit' : +b.dataset.zoom); });
      });
      try { draw(k); } catch (err) { (window.glErrors = window.glErrors || []).push('graph ' + k + ': ' + err); }
    });
    document.body.setAttribute('data-render-ms', (performance.now() - t0).toFixed(0));
    showErrors();
    document.body.setAttribute('data-ready', '1');
  }

  if (document.readyState === 'loading') { document.addEventListener('DOMContentLoaded', init); } else { init(); }
})();

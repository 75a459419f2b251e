#include "report/leaderboard_template.h"

namespace recipebench {

const char* const kLeaderboardCss = R"CSS(
:root { --fg:#1d2330; --muted:#5b6474; --line:#dde2ea; --bg:#ffffff; --band:#f5f7fa; --accent:#1f5fbf; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1340px; margin: 0 auto; padding: 20px 20px 64px; }
header.page h1 { font-size: 24px; margin: 0 0 2px; }
header.page p { margin: 0; }
.muted { color: var(--muted); }
.no-js .js-only { display: none; }
[hidden] { display: none !important; }
.controls { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; margin-top: 14px; background: var(--band); }
.controls label { margin-right: 16px; font-size: 14px; }
.controls h2 { font-size: 17px; margin: 0 0 4px; }
section.group { margin-top: 24px; }
section.group > p.muted, section.group > p.subtitle { margin: 2px 0 0; }
section.group > p.subtitle { color: var(--muted); font-size: 16px; }
section.group h2 { font-size: 26px; margin: 0 0 2px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; margin-top: 12px; }
svg.chart { max-width: 100%; height: auto; font-family: system-ui, sans-serif; }
table.board { width: 100%; border-collapse: collapse; margin-top: 10px; font-size: 14px; font-variant-numeric: tabular-nums; }
table.board th, table.board td { padding: 6px 7px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.board td.date, table.board td.link { white-space: nowrap; }
table.board td.fold { width: 210px; max-width: 210px; }
table.board th { font-size: 13px; color: var(--muted); font-weight: 600; background: var(--band); }
.js table.board th[data-key] { cursor: pointer; user-select: none; }
table.board th[aria-sort="ascending"]::after { content: " ▲"; }
table.board th[aria-sort="descending"]::after { content: " ▼"; }
table.board td.num, table.board th.num { text-align: right; white-space: nowrap; }
table.board td.rank { font-weight: 700; }
.layout-label { font-weight: 600; white-space: nowrap; }
.layout-hl { display: block; color: var(--muted); font-size: 13px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
article.entry { border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin-top: 18px; }
/* Entries off screen are not laid out until scrolled to: big boards stay quick to open. */
article.entry, details.compare-default { content-visibility: auto; contain-intrinsic-size: auto 900px; }
article.entry h3 { margin: 0 0 8px; font-size: 18px; }
article.entry h4 { margin: 16px 0 6px; font-size: 15px; }
dl.facts { display: grid; grid-template-columns: 190px 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--band); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; font-size: 13px; line-height: 1.4; white-space: pre-wrap; }
.tag { display: inline-block; font-size: 12px; padding: 1px 7px; border-radius: 10px; background: #e8f0fc; color: var(--accent); margin-left: 6px; }
table.cmp { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; font-variant-numeric: tabular-nums; }
table.cmp th, table.cmp td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; overflow-wrap: break-word; }
table.cmp.fields td:nth-child(2), table.cmp.fields td:nth-child(3), table.cmp.figures td:first-child { white-space: nowrap; }
table.cmp tr.diff td { font-weight: 700; background: #fff4d6; }
table.cmp tr.diff td.mark::before { content: "≠"; }
details.compare-default { margin-top: 10px; }
#groups-index ol { margin: 4px 0 0; padding-left: 22px; }
#groups-index li { margin: 1px 0; font-size: 14px; }
#groups-index h2 { margin: 0; }
#compare { position: sticky; bottom: 0; z-index: 2; max-height: 45vh; overflow: auto; box-shadow: 0 -2px 10px rgba(0,0,0,.12); }
td.commit code, ol.runs code { font-size: 12px; }
details.runs summary { cursor: pointer; font-size: 13px; }
details.runs summary svg.spark { vertical-align: middle; }
details.runs .trend { display: block; color: var(--muted); font-size: 12px; padding-left: 16px; }
ol.runs { margin: 4px 0 0; padding-left: 18px; font-size: 12px; color: var(--muted); }
footer { margin-top: 40px; font-size: 13px; }
div.notes { border-left: 4px solid #d9a400; background: #fff8e1; padding: 6px 12px; margin: 8px 0 12px; }
div.notes p { margin: 0; white-space: pre-line; }
div.notes h4 { margin: 0 0 2px; font-size: 13px; color: var(--muted); }
details.yaml summary { cursor: pointer; }
.tag.gen { background: #fde8d8; color: #8a3b00; }
p.generated-banner { border-left: 4px solid #c25400; background: #fff1e6; padding: 6px 12px; margin: 12px 0 0; }
details.group-body > summary { cursor: pointer; font-size: 14px; color: var(--muted); margin-top: 6px; }
.view { margin-top: 14px; }
.view h3 { font-size: 17px; margin: 0 0 2px; }
.view p.muted { margin: 0 0 6px; font-size: 13px; }
table.gpu-counts, table.history { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
table.gpu-counts th, table.gpu-counts td, table.history th, table.history td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; }
table.gpu-counts td.num, table.gpu-counts th.num, table.history td.num, table.history th.num { text-align: right; }
table.history tr.predicted td { font-style: italic; }
table.history tr.self td { font-weight: 700; }
p.same { font-size: 13px; margin: 6px 0 0; }
article.entry h4 + p code { overflow-wrap: anywhere; }
@media print { .js-only, .controls { display: none !important; } article.entry { break-inside: avoid; } }
)CSS";

const char* const kLeaderboardScript = R"JS(
(function () {
  'use strict';
  var root = document.documentElement;
  root.classList.remove('no-js');
  root.classList.add('js');
  function all(sel, from) { return Array.prototype.slice.call((from || document).querySelectorAll(sel)); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  // Sorting: a click on a header orders the rows by its data-key; a second click reverses. Unknown values last.
  function sortBy(th) {
    var table = th.closest('table'), key = th.dataset.key, numeric = th.dataset.type !== 'text';
    var now = th.getAttribute('aria-sort');
    var dir = now === 'ascending' ? 'descending' : now === 'descending' ? 'ascending'
            : (th.dataset.dir === 'desc' ? 'descending' : 'ascending');
    all('th[aria-sort]', table).forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir);
    var sign = dir === 'ascending' ? 1 : -1, body = table.tBodies[0], rows = all('tr', body), col = th.cellIndex;
    // A row's sort value: its data-<key> (a figure at full precision), else its cell's text (commas dropped from a number).
    function value(r) {
      if (r.dataset[key] !== undefined) return r.dataset[key];
      var cell = r.cells[col], label = cell.querySelector('.layout-label'), t = (label || cell).textContent.trim();
      return numeric ? t.replace(/,/g, '') : t;
    }
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      var ex = x === undefined || x === '', ey = y === undefined || y === '';
      if (ex || ey) { if (ex !== ey) return ex ? 1 : -1; }
      else if (numeric && +x !== +y) return (+x - +y) * sign;
      else if (!numeric && x !== y) return (x < y ? -1 : 1) * sign;
      return +a.dataset.rank - +b.dataset.rank;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  all('table.board th[data-key]').forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener('click', function () { sortBy(th); });
    th.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(th); }
    });
  });

  // Filters: status, GPU type, backend. Rows and detail sections hide together; an emptied group hides.
  var filters = { status: 'f-status', gpu: 'f-gpu', backend: 'f-backend' };
  function applyFilters() {
    var want = {}, shown = 0, total = 0;
    Object.keys(filters).forEach(function (k) { want[k] = document.getElementById(filters[k]).value; });
    // A row decides for its entry's card too (the card has the row's id; it carries no data-* of its own).
    all('table.board tbody tr[data-status]').forEach(function (row) {
      var ok = Object.keys(want).every(function (k) { return !want[k] || row.dataset[k] === want[k]; });
      var card = document.getElementById(row.dataset.id);
      row.hidden = !ok;
      if (card) card.hidden = !ok;
      total++;
      if (ok) shown++;
    });
    all('section.group:not(.unranked)').forEach(function (g) { g.hidden = !g.querySelector('table.board tbody tr:not([hidden])'); });
    document.getElementById('f-count').textContent = shown + ' of ' + total + ' entries shown';
  }
  Object.keys(filters).forEach(function (k) {
    document.getElementById(filters[k]).addEventListener('change', applyFilters);
  });

  // Comparison of two ticked entries, from the fields and figures the report computed (compare-data).
  var data = JSON.parse(document.getElementById('compare-data').textContent);
  var picks = [];
  function figureTable(a, b, A, B) {
    var t = el('table', undefined, 'cmp figures'), head = t.createTHead().insertRow();
    ['figure', 'A: ' + a, 'B: ' + b, 'B / A'].forEach(function (h) { head.appendChild(el('th', h)); });
    var body = t.createTBody();
    data.figures.forEach(function (label, i) {
      var r = body.insertRow(), x = A.raw[i], y = B.raw[i];
      var ratio = x !== null && y !== null && x !== 0 ? String(+(y / x).toFixed(2)) : '—';
      [label, A.shown[i], B.shown[i], ratio].forEach(function (v) { r.appendChild(el('td', v)); });
    });
    return t;
  }
  function fieldTable(a, b, A, B) {
    var order = [], va = {}, vb = {};
    A.v.forEach(function (vi, k) { if (vi >= 0) { va[k] = data.values[vi]; order.push(k); } });
    B.v.forEach(function (vi, k) { if (vi >= 0) { vb[k] = data.values[vi]; if (!(k in va)) order.push(k); } });
    var t = el('table', undefined, 'cmp fields'), head = t.createTHead().insertRow(), diffs = 0;
    ['', 'section', 'field', 'A: ' + a, 'B: ' + b].forEach(function (h) { head.appendChild(el('th', h)); });
    var body = t.createTBody();
    order.forEach(function (k) {
      var key = data.keys[k], x = k in va ? va[k] : '—', y = k in vb ? vb[k] : '—';
      var differs = key[2] === 1 && x !== y, r = body.insertRow();
      if (differs) { r.className = 'diff'; diffs++; }
      r.dataset.key = key[0] + '.' + key[1];
      [['', 'mark'], [key[0]], [key[1]], [x], [y]].forEach(function (c) { r.appendChild(el('td', c[0], c[1])); });
    });
    t.dataset.differences = diffs;
    return t;
  }
  function renderCompare() {
    var out = document.getElementById('cmp-out');
    out.textContent = '';
    document.getElementById('compare').hidden = picks.length === 0;
    if (picks.length < 2) {
      out.appendChild(el('p', picks.length ? 'Tick one more entry.' : 'Tick two entries in the tables.', 'muted'));
      return;
    }
    var A = data.entries[picks[0]], B = data.entries[picks[1]];
    var fields = fieldTable(picks[0], picks[1], A, B);
    out.appendChild(el('p', 'A: ' + picks[0] + ' · B: ' + picks[1] + ' · ' + fields.dataset.differences +
                            ' of ' + fields.tBodies[0].rows.length + ' fields differ (marked ≠)'));
    out.appendChild(figureTable(picks[0], picks[1], A, B));
    out.appendChild(fields);
  }
  all('input.pick').forEach(function (cb) {
    cb.addEventListener('change', function () {
      if (cb.checked) {
        picks.push(cb.value);
        if (picks.length > 2) {
          var old = picks.shift();
          all('input.pick').forEach(function (c) { if (c.value === old) c.checked = false; });
        }
      } else {
        picks = picks.filter(function (p) { return p !== cb.value; });
      }
      renderCompare();
    });
  });
  renderCompare();
})();
)JS";

// Data: see leaderboard_html.cpp (page_data). {{{...}}} only for SVG and JSON built by the report code itself.
const char* const kLeaderboardTemplate = R"TPL(<!DOCTYPE html>
<html lang="en" class="no-js">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{{{csp}}}">
<meta name="referrer" content="no-referrer">
<title>recipebench leaderboard</title>
<style>{{{css}}}</style>
</head>
<body>
<main>
<header class="page"><h1>recipebench leaderboard</h1><p class="muted">Training recipes ranked by tokens/s per GPU{{#generated_at}} · generated {{generated_at}}{{/generated_at}}</p></header>
{{#has_index}}<nav id="groups-index" class="controls" aria-label="Groups"><h2>Groups</h2><ol>{{#index}}<li><a href="#{{id}}">{{title}}</a> <span class="muted">· {{entry_count}} · best {{best}} tokens/s/GPU</span></li>{{/index}}</ol></nav>{{/has_index}}
<form id="filters" class="controls js-only" aria-label="Filter entries">
<label>Status <select id="f-status"><option value="">all</option>{{#statuses}}<option>{{.}}</option>{{/statuses}}</select></label>
<label>GPU type <select id="f-gpu"><option value="">all</option>{{#gpu_types}}<option>{{.}}</option>{{/gpu_types}}</select></label>
<label>Backend <select id="f-backend"><option value="">all</option>{{#backends}}<option>{{.}}</option>{{/backends}}</select></label>
<span id="f-count" class="muted"></span>
</form>
{{#generated}}<p class="generated-banner" role="note"><strong>Generated test data.</strong> {{generated}}: each is marked "generated" in its table row and card.</p>{{/generated}}
{{^has_groups}}<p>No recipe or run with a result to rank.</p>{{/has_groups}}
{{{groups_html}}}{{#has_predictions}}<section class="group unranked predictions" id="predicted"><h2>Predicted, not measured</h2>
<p class="muted">The step-time model's figures (recipebench plan / predict, docs/step-time.md) from measured profiles: never ranked with the measured entries above. Measured: the recipe's own result, else that of a measured recipe above of the same model, GPU type and count, workload (row tokens, global batch, precision) and layout (TP, PP, VPP, CP, EP, ETP, DP, layer split, max tokens per GPU, recompute), linked, with what else differs. Error: predicted / measured tokens/s/GPU - 1, as a signed percentage (+84.2%: the prediction is 84.2% above the measurement).</p>
<table class="predicted"><thead><tr><th>Recipe</th><th>Model</th><th>GPUs</th><th>Layout</th><th>Predicted tokens/s/GPU</th><th>Step (s)</th><th>MFU</th><th>$ / 1M tokens</th><th>Measured tokens/s/GPU</th><th>Error</th><th>Profiles</th><th>Predicted on</th></tr></thead><tbody>
{{#predictions}}<tr><td>{{file}}</td><td>{{model}}</td><td>{{cluster}}</td><td>{{layout}}</td><td class="num">{{tokens}}</td><td class="num">{{step}}</td><td class="num">{{mfu}}</td><td class="num">{{usd}}</td><td class="num">{{#measured_id}}<a href="#{{measured_id}}" title="{{measured_of}}">{{measured}}</a>{{/measured_id}}{{^measured_id}}{{#measured_of}}<span title="{{measured_of}}">{{measured}}</span>{{/measured_of}}{{^measured_of}}{{measured}}{{/measured_of}}{{/measured_id}}</td><td class="num">{{error}}</td><td class="num">{{profiles}}</td><td>{{predicted}}</td></tr>
{{/predictions}}</tbody></table></section>{{/has_predictions}}
{{#has_unranked}}<section class="group unranked"><h2>Not ranked</h2><ul>{{#unranked}}<li>{{.}}</li>{{/unranked}}</ul></section>{{/has_unranked}}
<section id="compare" class="controls js-only" hidden><h2>Compare two entries</h2><div id="cmp-out"></div></section>
<footer class="muted"><p>Tokens/s per GPU: window tokens / window seconds / GPUs over the entry's own timed window (measured; each entry's card names its steps). $ / 1M tokens: price per GPU-hour / (tokens/s/GPU x 3600) x 1e6 (computed; each card names its price and where it comes from). MFU: 6 x N_active x tokens/s/GPU / the GPU's peak dense BF16 FLOP/s (computed; attention FLOPs not counted, so lower than a framework's MFU that counts them: each card names N and the peak). Step-time CV: 100 x sample standard deviation / mean of window step times (measured). MoE routing: natural (the router's own top-k choices) or forced balanced (tokens spread evenly over the experts, as most published MoE figures are measured, and faster), as the recipe states it (layout.moe_routing); recipebench's own runs route naturally. Hours to train (the Pareto and GPU-count views): the token budget / (tokens/s/GPU x GPUs) / 3600 (computed; the budget is named on each view). A column with no figure for any entry of a group is left out of its table. Definitions: docs/metrics.md. Also in this folder: leaderboard.json, leaderboard.csv{{#has_copies}}, and leaderboard-recipes/ (a byte-for-byte copy of each ranked recipe, the cards' Download links){{/has_copies}}.</p>{{#recipebench_version}}<p>Made by recipebench {{recipebench_version}}{{#generated_at}} on {{generated_at}}{{/generated_at}}.</p>{{/recipebench_version}}</footer>
</main>
<script type="application/json" id="compare-data">{{{compare_json}}}</script>
<script>{{{script}}}</script>
</body>
</html>
)TPL";

// One group's section (its table, charts, #1 against #2 and its entries' sections), rendered group by group into the
// page's {{{groups_html}}} (leaderboard_html.cpp, group_data).
const char* const kGroupTemplate = R"TPL(<section class="group" id="{{id}}">
<h2>{{title}}</h2>
<p class="subtitle">Ranked by tokens/s per GPU · {{rows_text}} · global batch {{global_batch}} · {{precision}}</p>
{{#collapsible}}<details class="group-body"{{#open}} open{{/open}}><summary>{{entry_count}}: table, charts and cards</summary>
{{/collapsible}}<table class="board">
<thead><tr><th data-key="rank" data-dir="asc">#</th><th class="num" data-key="tps" data-dir="desc">Tokens/s per GPU</th>{{#show_usd}}<th class="num" data-key="usd" data-dir="asc">$ / 1M tokens</th>{{/show_usd}}<th class="num" data-key="gpus" data-dir="asc">GPUs</th><th data-key="layout" data-type="text" data-dir="asc">Layout</th>{{#show_mfu}}<th class="num" data-key="mfu" data-dir="desc">MFU</th>{{/show_mfu}}{{#show_cv}}<th class="num" data-key="cv" data-dir="asc">Step-time CV</th>{{/show_cv}}<th data-key="measured" data-type="text" data-dir="desc">Measured</th>{{#show_commit}}<th>Commit</th>{{/show_commit}}{{#show_runs}}<th>Earlier runs</th>{{/show_runs}}<th data-key="author" data-type="text" data-dir="asc">Author</th><th class="js-only">Compare</th></tr></thead>
<tbody>
{{#rows}}<tr id="row-{{id}}" data-id="{{id}}" data-rank="{{rank}}" data-tps="{{tps_raw}}" data-usd="{{usd_raw}}" data-mfu="{{mfu_raw}}" data-cv="{{cv_raw}}" data-status="{{status}}" data-gpu="{{gpu_type}}" data-backend="{{backend}}"><td class="rank"><a href="#{{id}}">#{{rank}}</a>{{#generated}} <span class="tag gen">generated</span>{{/generated}}</td><td class="num">{{tps}}</td>{{#show_usd}}<td class="num">{{usd}}</td>{{/show_usd}}<td class="num">{{gpus}}</td><td><span class="layout-label">{{layout_label}}</span>{{#layout_hl}}<span class="layout-hl">{{layout_hl}}</span>{{/layout_hl}}</td>{{#show_mfu}}<td class="num">{{mfu}}</td>{{/show_mfu}}{{#show_cv}}<td class="num">{{cv}}</td>{{/show_cv}}<td class="date">{{measured}}</td>{{#show_commit}}<td class="commit">{{#commit_full}}<code title="{{commit_full}}">{{commit}}</code>{{/commit_full}}{{^commit_full}}{{commit}}{{/commit_full}}</td>{{/show_commit}}{{#show_runs}}<td class="fold">{{#fold}}<details class="runs"><summary>{{{spark_svg}}} {{summary}}<span class="trend">{{change}}</span><span class="trend spread">{{spread}}</span></summary><ol class="runs">{{#runs}}<li title="{{file}}">{{measured}} · <code title="{{commit_full}}">{{commit}}</code> · {{tps}}{{#differ}} <span class="differ" title="{{differ_full}}">({{differ}})</span>{{/differ}}</li>{{/runs}}</ol></details>{{/fold}}{{^fold}}<span class="muted">—</span>{{/fold}}</td>{{/show_runs}}<td>{{author}}</td><td class="js-only"><input type="checkbox" class="pick" value="{{id}}" aria-label="compare {{id}}"></td></tr>
{{/rows}}</tbody>
</table>
<div class="charts">{{{bar_svg}}}{{{scatter_svg}}}</div>
{{#pareto_svg}}<div class="view pareto"><h3>Cost against time to train</h3><p class="muted">$ per 1M tokens against the hours to train the stated budget on the entry's own GPUs (budget / (tokens/s/GPU x GPUs)). On the Pareto front (filled, joined): no other entry is both faster and cheaper. Each point links to its card.</p>{{{pareto_svg}}}</div>
{{/pareto_svg}}{{#budget}}<div class="view gpu-counts"><h3>Best layout by GPU count</h3><p class="muted">The best entry (highest tokens/s per GPU, the group's rank key) at each GPU count; hours to train {{budget}}.</p>
<table class="gpu-counts"><thead><tr><th class="num">GPUs</th><th>Best entry</th><th>Layout</th><th class="num">Tokens/s per GPU</th><th class="num">$ / 1M tokens</th><th class="num">Hours</th><th class="num">Entries at this count</th></tr></thead><tbody>
{{#gpu_counts}}<tr data-gpus="{{gpus}}" data-id="{{id}}"><td class="num">{{gpus}}</td><td><a href="#{{id}}">#{{rank}} {{id}}</a></td><td><span class="layout-label">{{layout_label}}</span>{{#layout_hl}}<span class="layout-hl">{{layout_hl}}</span>{{/layout_hl}}</td><td class="num">{{tps}}</td><td class="num">{{usd}}</td><td class="num">{{hours}}</td><td class="num">{{entries}}</td></tr>
{{/gpu_counts}}</tbody></table></div>
{{/budget}}
{{#default_compare}}<details class="compare-default"><summary>#1 and #2 side by side ({{differences}} of {{field_count}} fields differ)</summary>
<table class="cmp figures"><thead><tr><th>figure</th><th>A: {{a_id}}</th><th>B: {{b_id}}</th><th>B / A</th></tr></thead><tbody>{{#figures}}<tr><td>{{label}}</td><td>{{a}}</td><td>{{b}}</td><td>{{ratio}}</td></tr>{{/figures}}</tbody></table>
<table class="cmp fields"><thead><tr><th></th><th>section</th><th>field</th><th>A: {{a_id}}</th><th>B: {{b_id}}</th></tr></thead><tbody>{{#fields}}<tr{{#differs}} class="diff"{{/differs}}><td class="mark"></td><td>{{section}}</td><td>{{name}}</td><td>{{a}}</td><td>{{b}}</td></tr>{{/fields}}</tbody></table>
</details>{{/default_compare}}
<h3>{{entries_word}}</h3>
{{{articles_html}}}{{#collapsible}}</details>{{/collapsible}}</section>
)TPL";

// One entry's detail section, rendered entry by entry into the page's {{{articles_html}}} (leaderboard_html.cpp,
// article_data), so a big board never holds every entry's template data at once.
const char* const kArticleTemplate = R"TPL(<article class="entry" id="{{id}}">
<h3>#{{rank}} {{id}} <span class="tag">{{tag}}</span>{{#generated}} <span class="tag gen">generated test data</span>{{/generated}}</h3>
<p><strong>{{tps}} tokens/s/GPU</strong> · {{layout_label}}{{#layout_hl}} · {{layout_hl}}{{/layout_hl}}</p>
{{#notes}}<div class="notes"><h4>Notes</h4>{{#notes_same}}<p class="muted same">Same as <a href="#{{id}}">#{{rank}} {{id}}</a>.</p>{{/notes_same}}{{^notes_same}}<p>{{notes}}</p>{{/notes_same}}</div>
{{/notes}}<dl class="facts">
{{#facts}}<dt>{{label}}</dt><dd>{{#href_local}}<a href="{{href_local}}">{{text}}</a>{{/href_local}}{{^href_local}}{{#href}}<a href="{{href}}" rel="noopener noreferrer">{{text}}</a>{{/href}}{{^href}}{{#code}}<code>{{text}}</code>{{/code}}{{^code}}{{text}}{{/code}}{{/href}}{{/href_local}}{{#cite}} <a class="cite" href="{{cite}}" rel="noopener noreferrer">(cite)</a>{{/cite}}{{#note}} <span class="muted">({{note}})</span>{{/note}}</dd>
{{/facts}}</dl>
{{#same_as}}<p class="same muted">Same as <a href="#{{id}}">#{{rank}} {{id}}</a>: {{names}}.</p>
{{/same_as}}{{#has_charts}}<div class="charts">{{{step_svg}}}{{{loss_svg}}}</div>{{/has_charts}}
{{#has_correctness}}<h4>Correctness</h4>
<dl class="facts">{{#correctness}}<dt>{{label}}</dt><dd>{{text}}</dd>{{/correctness}}</dl>
{{/has_correctness}}{{#has_stack}}<h4>Stack</h4>
<dl class="facts">{{#stack}}<dt>{{label}}</dt><dd>{{text}}</dd>{{/stack}}</dl>
{{/has_stack}}{{#env}}<h4>Environment</h4>
<pre>{{env}}</pre>
{{/env}}{{#has_patches}}<h4>Patches</h4>
<ul>{{#patches}}<li><code>{{.}}</code></li>{{/patches}}</ul>
{{/has_patches}}{{#run}}<h4>How to run</h4>
<pre>{{run}}</pre>
{{/run}}{{#history}}<h4>History</h4>
<div class="history"><p class="muted">{{summary}}; oldest first, the rank key (tokens/s per GPU) at each commit and date, this entry ringed.</p>{{{svg}}}
<table class="history"><thead><tr><th>Date</th><th>Commit</th><th class="num">Tokens/s per GPU</th><th>Kind</th><th>Of</th></tr></thead><tbody>{{#rows}}<tr class="{{kind}}{{#self}} self{{/self}}"><td>{{date}}</td><td>{{#commit_full}}<code title="{{commit_full}}">{{commit}}</code>{{/commit_full}}{{^commit_full}}{{commit}}{{/commit_full}}</td><td class="num">{{tps}}</td><td>{{kind}}</td><td>{{id}}</td></tr>{{/rows}}</tbody></table></div>
{{/history}}{{#recipe}}<h4>{{#made_from}}Recipe it was made from{{/made_from}}{{^made_from}}Recipe{{/made_from}}</h4>
<p><code>{{file}}</code>{{#download}} · <a class="download" href="{{download}}" download="{{download_name}}">Download</a>{{/download}}{{#repository}} · <a class="repository" href="{{repository}}" rel="noopener noreferrer">Repository</a>{{/repository}}{{#repository_not_link}} · <span class="muted">repository {{repository_not_link}} (not a link)</span>{{/repository_not_link}}</p>
{{#yaml}}<details class="yaml"><summary>The recipe's YAML ({{yaml_lines}})</summary><pre class="yaml">{{yaml}}</pre></details>{{/yaml}}{{#yaml_elsewhere}}<p class="muted">{{yaml_elsewhere}}</p>{{/yaml_elsewhere}}
{{/recipe}}</article>
)TPL";

}  // namespace recipebench

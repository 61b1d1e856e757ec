#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "common/error.hpp"
#include "report/page.hpp"

namespace regime::report {

namespace {

// The page: plain HTML and CSS, a script that draws every chart with ECharts from the inlined
// page data, and marks itself done (data-ready) so a browser test can wait for it. Animation is
// off so a screenshot shows the final state.
constexpr std::string_view kPageHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>Regime report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1280px; padding: 16px 24px; color: #1d2330; }
h1 { font-size: 22px; margin: 4px 0 2px; } h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid #d8dce6; padding-bottom: 4px; }
.meta { color: #5a6275; } .note { color: #5a6275; font-size: 12.5px; margin: 4px 0; }
.cards { display: flex; gap: 16px; flex-wrap: wrap; }
.card { border: 1px solid #d8dce6; border-radius: 6px; padding: 10px 14px; min-width: 220px; flex: 1; }
.card .big { font-size: 24px; font-weight: 600; } .card .ci { color: #5a6275; }
.regime { text-transform: none; color: #8a2be2; }
table { border-collapse: collapse; margin: 6px 0; } td, th { padding: 3px 10px; border-bottom: 1px solid #eceef3; text-align: left; vertical-align: top; }
th { font-weight: 600; color: #3a4152; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.current td { background: #f3eefc; }
.chart { width: 100%; height: 230px; } .chart.tall { height: 320px; }
.row2 { display: flex; gap: 16px; } .row2 > div { flex: 1; min-width: 0; }
.decision { font-size: 17px; padding: 12px 16px; margin: 14px 0 6px; border-left: 6px solid #8a2be2; background: #f6f2fb; }
.decision .why { display: block; font-size: 13px; color: #5a6275; margin-top: 4px; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #b8bdc9; vertical-align: -2px; margin: 0 4px 0 10px; }
details summary { cursor: pointer; color: #3b4252; margin: 8px 0; }
section.gpu { border-top: 1px solid #d8dce6; margin-top: 18px; } section.gpu h3 { font-size: 15px; margin: 12px 0 4px; }
</style>
</head>
<body>
<h1 id="title"></h1>
<div class="meta" id="meta"></div>
<div class="decision" id="decision"><span id="decision-text"></span><span class="why" id="decision-why"></span><span class="why" id="decision-restore"></span></div>
<h2>Regime and evidence</h2>
<div class="cards">
  <div class="card"><div id="regime-label">regime</div><div class="big regime" id="regime"></div><div class="ci" id="confidence"></div></div>
  <div class="card"><div id="energy-label">energy per step</div><div class="big" id="energy"></div><div class="ci" id="energy-ci"></div></div>
  <div class="card"><div id="time-label">time per step</div><div class="big" id="time"></div><div class="ci" id="time-ci"></div></div>
  <div class="card"><div id="power-label">average power</div><div class="big" id="power"></div><div class="ci" id="window"></div></div>
</div>
<p id="advice"></p>
<details id="evidence-box"><summary>Evidence: the numbers that named the regime</summary>
<table id="evidence"></table></details>
<h2>Timeline</h2>
<p class="note" id="timeline-note"></p>
<div id="timeline-section">
<p class="note" id="phase-legend" hidden></p>
<div id="timeline"></div>
<p class="note" id="downsampling"></p>
</div>
<div id="gpus-section" hidden>
<h2 id="gpus-heading"></h2>
<p class="note" id="gpus-note"></p>
<div id="gpus"></div>
</div>
<div id="control-section" hidden>
<h2 id="control-heading"></h2>
<p class="note" id="control-note"></p>
<div class="row2" id="control-charts"></div>
<details id="control-box"><summary id="control-summary"></summary>
<table id="control-table"></table>
<table id="control-actions"></table></details>
</div>
<div id="sweep-section" hidden>
<h2>Sweep: energy and time per step against the cap</h2>
<p class="note" id="sweep-note"></p>
<div class="row2" id="sweep-charts"></div>
</div>
<div id="run-section" hidden>
<h2>The whole run: every step, under the decision after the sweep</h2>
<p class="note" id="run-note"></p>
<table id="run-table"></table>
</div>
<h2 id="comparison-heading">Across GPUs and workloads</h2>
<p class="note" id="comparison-note"></p>
<div class="row2" id="comparison-charts"></div>
<table id="comparison"></table>
<p class="note" id="generated"></p>
<script type="application/json" id="page-data">
)HTML";

constexpr std::string_view kPageScript = R"JS(
</script>
<script>
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('page-data').textContent);
  const el = (id) => document.getElementById(id);
  const fmtN = (x, d) => (x === null || x === undefined) ? 'n/a' : Number(x).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const sig = (x) => (x === null || x === undefined) ? 'n/a' : Number(x).toPrecision(4);
  const text = (id, s) => { el(id).textContent = s; };
  const charts = [];
  const rendered = [];

  // Header, regime and measurement.
  const run = data.run, m = data.measurement || {}, reg = data.regime;
  const per = m.per === 'second' ? 'second' : 'step';
  document.title = data.title;
  text('title', data.title);
  text('meta', `device ${run.device}` + (run.gpu_uuid ? ` (${run.gpu_uuid})` : '') + ` · started ${run.started_at_utc} · status ${run.status} · trace ${run.trace_path}`);
  text('regime', reg.name || 'not named');
  text('confidence', reg.name ? `confidence ${fmtN(reg.confidence, 2)}` : 'no regime is kept for this run');
  text('energy-label', `energy per ${per}`);
  text('time-label', `time per ${per}`);
  text('energy', `${sig(m.energy_per_step_J)} J`);
  text('time', per === 'second' ? '1 s' : `${sig(m.time_per_step_s * 1e3)} ms`);
  const ci = (a, scale, unit) => Array.isArray(a) ? `95% interval [${sig(a[0] * scale)}, ${sig(a[1] * scale)}] ${unit}` : 'no interval';
  text('energy-ci', ci(m.energy_per_step_ci_J, 1, 'J'));
  text('time-ci', per === 'second' ? 'no steps: figures per second of the window' : ci(m.time_per_step_ci_s, 1e3, 'ms'));
  text('power', `${fmtN(m.avg_power_W, 1)} W`);
  text('window', `steady window ${fmtN(m.window_s, 1)} s, ${m.steps ?? 0} steps, energy from ${m.energy_source ?? 'n/a'}`);
  text('advice', reg.advice || '');
  // A kept sweep: its cards hold the default limit's figures, from its table.
  if (data.kind === 'sweep') {
    text('meta', `device ${run.device}` + (run.gpu_uuid ? ` (${run.gpu_uuid})` : '') + ` · stored ${run.started_at_utc} · ${data.sweep.of === 'study' ? "a study's sweep" : 'a sweep'}, ${data.sweep.strategy}, objective ${data.sweep.objective}`);
    text('energy-label', `energy per ${per} at the default ${data.default_cap_W} W`);
    text('time-label', `time per ${per} at the default ${data.default_cap_W} W`);
    text('window', `${m.steps ?? 0} steps at the default limit; a sweep keeps each cap's figures, not its trace`);
    text('confidence', reg.name ? `named by ${reg.named_by || 'the sweep'}` : 'the sweep named none (an exhaustive sweep does not probe for one)');
  }
  const ev = el('evidence');
  const addRow = (table, cells, cls) => {
    const tr = table.insertRow();
    if (cls) tr.className = cls;
    for (const [v, num] of cells) { const td = tr.insertCell(); td.textContent = v; if (num) td.className = 'num'; }
    return tr;
  };
  // Evidence in words: "sw power cap 99.8" rather than {"sw_power_cap":99.8}.
  const words = (k) => k.replace(/_/g, ' ').replace(/ pct$/, ' %').replace(/ W$/, ', W').replace(/ MHz$/, ', MHz').replace(/ C$/, ', C');
  const valueText = (v) => {
    if (v === null || v === undefined) return 'none';
    if (typeof v === 'number') return String(Math.round(v * 1000) / 1000);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (typeof v === 'object' && !Array.isArray(v))
      return Object.entries(v).map(([a, b]) => `${words(a)} ${valueText(b)}`).join(', ') || 'none';
    return Array.isArray(v) ? v.map(valueText).join(', ') : String(v);
  };
  for (const [k, v] of Object.entries(reg.evidence || {}))
    addRow(ev, [[words(k)], [valueText(v), typeof v === 'number']]);
  if (!Object.keys(reg.evidence || {}).length) el('evidence-box').hidden = true;

  // A control run: the controller in the first card, its reason below the cards.
  const ctl = data.control || null;
  const span = (s) => s >= 7200 ? `${fmtN(s / 3600, 1)} h` : s >= 120 ? `${fmtN(s / 60, 1)} min` : `${fmtN(s, 0)} s`;
  if (ctl) {
    text('meta', `device ${run.device}` + (run.gpu_uuid ? ` (${run.gpu_uuid})` : '') + ` · stored ${run.started_at_utc} · policy ${ctl.policy} · ${span(ctl.duration_s || 0)} · trace ${run.trace_path}`);
    text('regime-label', 'controller');
    text('regime', `${ctl.policy}, ${ctl.engaged ? 'engaged' : 'stayed out'}`);
    text('confidence', reg.name ? `probe: ${reg.name}, confidence ${fmtN(reg.confidence, 2)}` : (ctl.dry_run ? 'dry run: nothing set' : 'controlling from the start'));
    text('advice', '');
  }

  // Every chart of the page: drawn, kept for resizing, and listed for a browser test.
  const addChart = (parent, id, cls, option) => {
    const div = document.createElement('div');
    div.id = id; div.className = 'chart' + (cls ? ' ' + cls : '');
    parent.appendChild(div);
    const c = echarts.init(div, null, { renderer: 'canvas' });
    c.setOption(Object.assign({ animation: false, textStyle: { fontFamily: 'system-ui, sans-serif' } }, option));
    charts.push(c);
    rendered.push({ id, series: option.series.map((s) => ({ name: s.name, points: s.data.length })) });
    return c;
  };
  // A timeline: one chart per quantity on a shared time axis, zoomed together, into `into` (its
  // charts, phase legend, note and downsampling line); `prefix` keeps each GPU's chart ids apart.
  // Returns the time axis's end.
  const drawTimeline = (tl, into, prefix, gpuName) => {
    const S = tl.series;
    const pts = (s) => s.t_s.map((t, i) => [t, s.value[i]]);
    const win = tl.window_s;
    // A job of phases: each span shaded in its kind's colour (most energy first), under the window.
    const phases = tl.phases || [];
    const phaseColors = ['rgba(214, 39, 40, 0.16)', 'rgba(31, 119, 180, 0.16)', 'rgba(255, 160, 20, 0.20)'];
    const phaseAreas = phases.flatMap((p, k) => p.spans_s.map((s) => [
      { name: '', xAxis: s[0], itemStyle: { color: phaseColors[k % phaseColors.length] } }, { xAxis: s[1] }]));
    const areas = (win ? [[{ name: phases.length ? 'window' : 'steady window', xAxis: win[0] }, { xAxis: win[1] }]] : []).concat(phaseAreas);
    const windowArea = areas.length ? { silent: true, itemStyle: { color: phases.length ? 'rgba(80, 160, 90, 0.06)' : 'rgba(80, 160, 90, 0.12)' },
                                        label: { show: true, position: 'insideTopLeft', color: '#3c7a45', fontSize: 11 },
                                        data: areas } : undefined;
    if (phases.length) {
      const legend = into.legend;
      legend.hidden = false;
      legend.append(`A job of ${phases.length} phases` + (tl.phase_cycle_s ? `, a cycle of ${fmtN(tl.phase_cycle_s, 1)} s` : '') +
                    '; named by the phase holding most of the energy. Shaded:');
      phases.forEach((p, k) => {
        const sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = phaseColors[k % phaseColors.length];
        const item = document.createElement('span');
        item.className = 'phase-item';
        item.textContent = `${p.regime}: ${fmtN(100 * p.energy_fraction, 0)}% of the energy, ${fmtN(100 * p.time_fraction, 0)}% of the time, ` +
                           `${fmtN(p.avg_power_W, 0)} W, ${p.spans_s.length} spans`;
        legend.append(sw, item);
      });
    }
    const end = Math.max(...Object.values(S).map((s) => s.t_s.length ? s.t_s[s.t_s.length - 1] : 0));
    const lineSeries = (name, s, color, extra) => Object.assign({ name, type: 'line', data: pts(s), showSymbol: false, sampling: undefined, lineStyle: { width: 1 }, color, step: false }, extra || {});
    const timelineCharts = [];
    const timeAxis = { type: 'value', min: 0, max: Math.ceil(end), name: 's', nameGap: 4, axisLabel: { fontSize: 11 } };
    const grid = { left: 64, right: 24, top: 34, bottom: 28 };
    const named = (title) => gpuName ? `${gpuName}: ${title}` : title;
    const panel = (id, title, unit, series, cls) => {
      if (!series.some((s) => s.data.length)) return;
      if (windowArea) series[0].markArea = windowArea;
      const c = addChart(into.charts, `chart-${prefix}${id}`, cls, {
        title: { text: named(title), left: 8, top: 4, textStyle: { fontSize: 13 } },
        legend: { top: 4, right: 24 }, tooltip: { trigger: 'axis' }, grid,
        xAxis: timeAxis, yAxis: { type: 'value', name: unit, scale: true, nameGap: 8 },
        dataZoom: [{ type: 'inside' }], series });
      timelineCharts.push(c);
    };
    const powerSeries = [lineSeries('power', S.power_W, '#d9534f'), lineSeries('limit', S.limit_W, '#1b1b1b', { z: 5, lineStyle: { width: 2, type: 'dashed' } })];
    // A control run's trace holds the limit's changes only: drawn as steps, each change marked.
    if (ctl) {
      powerSeries[1].step = 'end';
      if (ctl.actions.length)
        powerSeries.push({ name: ctl.dry_run ? 'would set' : 'limit change', type: 'scatter', symbol: 'triangle', symbolSize: 9, z: 6,
                           color: '#8a2be2', data: ctl.actions.map((a) => [a.t_s, a.limit_W]) });
    }
    panel('power', `Power (${tl.power_source}) and limit`, 'W', powerSeries, 'tall');
    panel('temperature', 'Temperature', '°C', [lineSeries('temperature', S.temp_C, '#e69f00')]);
    panel('sm-clock', 'SM clock', 'MHz', [lineSeries('SM clock', S.sm_MHz, '#0072b2')]);
    if (S.step_ms.t_s.length)
      panel('steps', 'Steps (each mark: one step at its start, by its duration)', 'ms',
            [{ name: 'step', type: 'scatter', symbolSize: 3, data: pts(S.step_ms), color: '#6a3d9a' }]);
    if (timelineCharts.length > 1) echarts.connect(timelineCharts);
    into.note.textContent = `Time from the first reading (t0 = ${fmtN(tl.t0_s, 3)} s); GPU ${tl.gpu}; ${tl.steps} step markers` +
         (win ? `; the shaded span is the steady window measured, ${fmtN(win[0], 1)} to ${fmtN(win[1], 1)} s.` : '; no steady window was recorded.') +
         ' Scroll on a chart to zoom; the charts move together.';
    if (ctl)
      into.note.textContent = `Time from the first reading (t0 = ${fmtN(tl.t0_s, 3)} s)` + (ctl.gpus > 1 ? `; GPU ${ctl.gpu} of the job's ${ctl.gpus} (the first of --device)` : '') +
           `. The trace as the run wrote it: the first ${ctl.whole_s} s whole, then per ${ctl.bucket_s} s the lowest and the highest of each field (steps: the shortest and the longest) and every change of the limit, whole` +
           (ctl.actions.length ? `; each triangle is a limit the controller ${ctl.dry_run ? 'would have set' : 'set'}.` : '.') +
           (win ? ` The shaded span is the window measured, ${fmtN(win[0], 1)} to ${fmtN(win[1], 1)} s.` : '') + ' Scroll on a chart to zoom; the charts move together.';
    const names = { power_W: 'power', limit_W: 'limit', temp_C: 'temperature', sm_MHz: 'SM clock', step_ms: 'steps' };
    const parts = Object.entries(S).filter(([, s]) => s.input_points > 0).map(([k, s]) => s.reduced
        ? `${names[k]}: ${s.points.toLocaleString('en-US')} of ${s.input_points.toLocaleString('en-US')} points drawn (lowest and highest per column)`
        : `${names[k]}: all ${s.input_points.toLocaleString('en-US')} points`);
    into.downsampling.textContent = `Downsampling for the page, ${tl.columns} columns across the run: ` + parts.join('; ') + '. The measurement above used every point.';
    return end;
  };
  // The page's timeline. A page without a trace (a kept sweep's, a study's saved without --out, a
  // job's, whose GPUs each have their own below) says why in its place.
  const tl = data.timeline;
  let tmax = 0;
  if (!tl) {
    el('timeline-section').hidden = true;
    text('timeline-note', data.no_timeline || 'No trace to draw.');
  } else {
    tmax = drawTimeline(tl, { charts: el('timeline'), legend: el('phase-legend'), note: el('timeline-note'), downsampling: el('downsampling') }, '');
  }

  // An error bar per point: a vertical line with caps `cap` pixels wide each side.
  const errorBarItem = (cap) => (params, api) => {
    const lo = api.coord([api.value(0), api.value(1)]), hi = api.coord([api.value(0), api.value(2)]);
    if (!isFinite(lo[1]) || !isFinite(hi[1])) return null;
    const w = cap(api), st = { stroke: '#222', lineWidth: 1.4 };
    return { type: 'group', children: [
      { type: 'line', shape: { x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1] }, style: st },
      { type: 'line', shape: { x1: lo[0] - w, y1: lo[1], x2: lo[0] + w, y2: lo[1] }, style: st },
      { type: 'line', shape: { x1: hi[0] - w, y1: hi[1], x2: hi[0] + w, y2: hi[1] }, style: st }] };
  };

  // A change as every view of the decision prints it: "-7.6% [-8.4, -6.7]".
  const signed = (v) => (v >= 0 ? '+' : '') + v.toFixed(1);
  const pctCi = (v, ci) => signed(v) + '%' + (ci ? ` [${signed(ci[0])}, ${signed(ci[1])}]` : '');

  // Sweep (a study): each cap's median with its interval, the decision as a vertical line.
  const sw = data.sweep;
  if (sw && sw.points.length) {
    el('sweep-section').hidden = false;
    const P = sw.points, d = sw.decision;
    const ref = d.reference || {};
    const sweepChart = (id, title, unit, value, getCi, scale, refValue, budget) => {
      const holder = document.createElement('div');
      el('sweep-charts').appendChild(holder);
      const lines = [{ xAxis: d.cap_W, label: { formatter: (d.keep_default ? 'keep the default, ' : 'decision, ') + `${d.cap_W} W`, color: '#8a2be2' } }];
      // The slowdown budget as a line: a cap whose time lies above it breaks the objective.
      if (budget) lines.push({ yAxis: budget.value * scale, lineStyle: { color: '#c0392b', type: 'dashed', width: 1.5 },
                               label: { formatter: budget.label, position: 'insideEndTop', color: '#c0392b' } });
      const markLine = { silent: true, symbol: 'none', lineStyle: { color: '#8a2be2', type: 'solid', width: 2 }, data: lines };
      // Each cap also as a change against the default, the way the decision is stated.
      const tip = (ps) => ps.filter((q) => q.seriesName === 'median').map((q) => {
        const cap = q.value[0], v = q.value[1] / scale;
        const pct = refValue ? ` (${signed(100 * (v / refValue - 1))}% against the default)` : '';
        return `${cap} W: ${sig(v * scale)} ${unit}${pct}`; }).join('<br>');
      addChart(holder, id, 'tall', {
        title: { text: title, left: 8, top: 4, textStyle: { fontSize: 13 } }, tooltip: { trigger: 'axis', formatter: tip },
        grid: { left: 64, right: 24, top: 40, bottom: 40 },
        xAxis: { type: 'value', name: 'cap, W', scale: true, nameLocation: 'middle', nameGap: 24 },
        yAxis: { type: 'value', name: unit, scale: true, nameGap: 8 },
        series: [
          { name: 'median', type: 'line', symbolSize: 7, color: '#0072b2', markLine,
            data: P.map((p) => [p.cap_W, value(p) * scale]) },
          { name: '95% interval', type: 'custom', encode: { x: 0, y: [1, 2] }, renderItem: errorBarItem(() => 5),
            data: P.map((p) => { const a = getCi(p); return [p.cap_W, a[0] * scale, a[1] * scale]; }) }] });
    };
    sweepChart('chart-sweep-energy', `Energy per ${sw.unit} against the cap`, 'J', (p) => p.energy_per_step_J, (p) => p.energy_per_step_ci_J, 1, ref.energy_per_step_J);
    const budget = (d.max_slowdown_pct !== null && d.max_slowdown_pct !== undefined && ref.time_per_step_s)
      ? { value: ref.time_per_step_s * (1 + d.max_slowdown_pct / 100), label: `+${d.max_slowdown_pct}% time budget` } : null;
    sweepChart('chart-sweep-time', `Time per ${sw.unit} against the cap`, 'ms', (p) => p.time_per_step_s, (p) => p.time_per_step_ci_s, 1e3, ref.time_per_step_s, budget);
    text('sweep-note', `${P.length} caps measured (${sw.probes} probes), default limit ${sw.default_limit_W} W. ` +
         (d.keep_default ? 'Decision: keep the default limit. ' : `Decision: cap at ${d.cap_W} W, energy ${pctCi(d.energy_change_pct, d.energy_change_ci_pct)}, time ${pctCi(d.time_change_pct, d.time_change_ci_pct)} against ${d.reference && d.reference.text ? d.reference.text : 'the default'}. `) +
         (d.time_bound ? `Time bound: ${d.time_bound}. ` : '') +
         (d.certainty ? `Certainty: ${d.certainty}. ` : '') +
         (d.reason || '').replace(/([^.])$/, '$1.') + (sw.objective ? ` Objective ${sw.objective}, strategy ${sw.strategy}.` : ''));
  }

  if (!(sw && sw.points.length) && data.sweep_skipped) {
    el('sweep-section').hidden = false;
    text('sweep-note', 'No sweep ran: ' + data.sweep_skipped);
  }

  // A job's GPUs, each in its own section: its regime, what the job's one cap did to it, its
  // figures at each cap the sweep measured and its probe's timeline.
  const G = data.gpus || [];
  const atCap = (p) => p ? `${sig(p.energy_per_step_J)} J per ${per} at ${fmtN(p.avg_power_W, 1)} W` : 'not measured';
  const gpuDecision = (d) => d.keep_default
    ? `Decision for the job: keep the default limit ${d.default_limit_W} W on every GPU; this GPU used ${atCap(d.at_default)} there.`
    : `Decision for the job: ${d.cap_W} W on every GPU; this GPU used ${atCap(d.at_default)} at the default ${d.default_limit_W} W and ${atCap(d.at_cap)} at ${d.cap_W} W` +
      (d.energy_change_pct === null || d.energy_change_pct === undefined ? '.' : ` (energy per ${per} ${signed(d.energy_change_pct)}%).`);
  const folded = (parent, summary) => {
    const box = document.createElement('details'), sum = document.createElement('summary'), table = document.createElement('table');
    sum.textContent = summary;
    box.append(sum, table);
    parent.appendChild(box);
    return table;
  };
  if (G.length) {
    el('gpus-section').hidden = false;
    text('gpus-heading', `Each GPU of the job (${G.length})`);
    text('gpus-note', `One run of the command on ${G.length} GPUs, each GPU classified on its own figures; the most constrained GPU's regime is the job's, and one cap is set on every GPU.`);
    const job = G.find((g) => g.named_job);
    if (job) text('confidence', `confidence ${fmtN(reg.confidence, 2)}; the job's, named by ${job.device}`);
    // The cards hold the job's figures (energy summed over its GPUs, power their mean), as its
    // sweep measures the job.
    if (data.measurement_of) {
      text('energy-label', `energy per ${per}, ${data.measurement_of}`);
      text('time-label', `time per ${per}, the job's`);
      text('power-label', `average power, the mean of the job's ${G.length} GPUs`);
    }
    G.forEach((g, i) => {
      const box = document.createElement('section');
      box.className = 'gpu';
      box.id = `gpu-${i}`;
      el('gpus').appendChild(box);
      const add = (tag, cls, content) => {
        const e = document.createElement(tag);
        if (cls) e.className = cls;
        if (content !== undefined) e.textContent = content;
        box.appendChild(e);
        return e;
      };
      const gm = g.measurement || {}, gr = g.regime || {};
      add('h3', '', `GPU ${i + 1} of ${G.length}: ${g.device}` + (g.gpu_name ? `, ${g.gpu_name}` : '') + (g.gpu_uuid ? ` (${g.gpu_uuid})` : ''));
      add('p', 'gpu-regime', `Regime ${gr.name || 'not named'} (confidence ${fmtN(gr.confidence, 2)})` + (g.named_job ? ", the job's regime" : '') +
          `; energy per ${per} ${sig(gm.energy_per_step_J)} J, ${ci(gm.energy_per_step_ci_J, 1, 'J')}` +
          (per === 'step' ? `; time per step ${sig(gm.time_per_step_s * 1e3)} ms` : '') + `; average power ${fmtN(gm.avg_power_W, 1)} W.`);
      add('p', 'gpu-decision', g.decision ? gpuDecision(g.decision) : (data.sweep_skipped ? 'No sweep ran: ' + data.sweep_skipped : 'No sweep ran.'));
      if (gr.advice) add('p', 'note', gr.advice);
      const evidence = Object.entries(gr.evidence || {});
      if (evidence.length) {
        const t = folded(box, 'Evidence: the numbers that named this GPU\'s regime');
        for (const [k, v] of evidence) addRow(t, [[words(k)], [valueText(v), typeof v === 'number']]);
      }
      if (g.sweep.length) {
        const t = folded(box, `This GPU at each cap the sweep measured (${g.sweep.length})`);
        addRow(t, [['cap, W'], [`energy per ${per}, J`], ['power, W'], ['time per step, ms']]);
        const decided = g.decision ? g.decision.cap_W : null;
        for (const p of g.sweep)
          addRow(t, [[fmtN(p.cap_W, 1), true], [sig(p.energy_per_step_J), true], [fmtN(p.avg_power_W, 1), true], [sig(p.time_per_step_s * 1e3), true]],
                 p.cap_W === decided ? 'current' : '');
      }
      const note = add('p', 'note'), legend = add('p', 'note'), charts = add('div'), downsampling = add('p', 'note');
      legend.hidden = true;
      if (g.timeline) drawTimeline(g.timeline, { charts, legend, note, downsampling }, `gpu${i}-`, g.device);
      else note.textContent = `No timeline for this GPU: its probe trace was ${g.trace_path}.`;
    });
  }

  // The command run to its end under the study: each part, and the energy saved on the whole run.
  const wr = data.whole_run || null;
  if (wr) {
    el('run-section').hidden = false;
    const t = el('run-table');
    const head = t.createTHead().insertRow();
    for (const h of ['part', 'steps', 'seconds', 'energy J', 'energy per step J']) {
      const c = document.createElement('th');
      c.textContent = h;
      head.appendChild(c);
    }
    const body = t.createTBody();
    const reference = wr.saved_against || 'the starting limit';
    const parts = [['the whole run', wr], ['probe at the starting limit', wr.probe],
                   ['caps tried', wr.profiling],
                   [wr.cap_W ? `under the decision, ${wr.cap_W} W` : 'at the starting limit', wr.decided]];
    for (const [name, p] of parts) {
      if (!p) continue;
      const r = body.insertRow();
      for (const v of [name, p.steps, fmtN(p.seconds, 1), fmtN(p.energy_J, 0), sig(p.energy_per_step_J)])
        r.insertCell().textContent = v;
    }
    const saved = (wr.saved_J === null || wr.saved_J === undefined)
      ? 'No saving is claimed: there is no energy per step at the reference limit to compare with.'
      : wr.ran_at_reference
      ? `Energy saved: none to claim: all of it ran at the ${reference}, the limit the saving is reckoned against.`
      : `Energy saved against running it all at the ${reference}: ${fmtN(wr.saved_J, 0)} J [${fmtN(wr.saved_ci_J[0], 0)}, ${fmtN(wr.saved_ci_J[1], 0)}] 95% CI, the caps tried counted in.`;
    text('run-note', `The study got to its ${wr.reached}` +
         (wr.exit_status === null || wr.exit_status === undefined ? '' : `; the command exited with status ${wr.exit_status}`) +
         '. ' + saved + (wr.unfinished ? ' The study stopped short: ' + wr.unfinished + '.' : ''));
  }

  // A control run: the figures it measured as it went (segments, or an evaluation's windows), each
  // with its interval, and every change of the limit with why.
  if (ctl) {
    const F = ctl.figures, R = F.rows, evaluation = F.kind === 'evaluation';
    const unitOf = evaluation ? 'window' : 'segment';
    el('control-section').hidden = false;
    text('control-heading', evaluation ? 'Evaluation: each window, baseline and controlled' : 'Segments: the run measured as it went');
    const colour = (r) => r.kind === 'controlled' ? '#8a2be2' : r.kind === 'baseline' ? '#7f8fa6' : '#0072b2';
    const mid = (r) => (r.t0_s + r.t1_s) / 2;
    const figureChart = (id, title, unit, value, getCi, scale) => {
      const holder = document.createElement('div');
      el('control-charts').appendChild(holder);
      addChart(holder, id, 'tall', {
        title: { text: title, left: 8, top: 4, textStyle: { fontSize: 13 } }, tooltip: { trigger: 'axis' },
        grid: { left: 64, right: 24, top: 40, bottom: 40 },
        xAxis: { type: 'value', name: 's', min: 0, max: Math.ceil(tmax), nameGap: 4 },
        yAxis: { type: 'value', name: unit, scale: true, nameGap: 8 },
        series: [
          { name: 'median', type: 'scatter', symbolSize: 6, data: R.map((r) => ({ value: [mid(r), value(r) * scale], itemStyle: { color: colour(r) } })) },
          { name: '95% interval', type: 'custom', encode: { x: 0, y: [1, 2] }, renderItem: errorBarItem(() => 3),
            data: R.map((r) => { const a = getCi(r); return [mid(r), a[0] * scale, a[1] * scale]; }) }] });
    };
    if (R.length) {
      figureChart('chart-control-energy', `Energy per ${R[0].per} of each ${unitOf} (median, 95% interval)`, 'J', (r) => r.energy_per_step_J, (r) => r.energy_per_step_ci_J, 1);
      if (R[0].per === 'step')
        figureChart('chart-control-time', `Time per step of each ${unitOf} (median, 95% interval)`, 'ms', (r) => r.time_per_step_s, (r) => r.time_per_step_ci_s, 1e3);
    }
    const ev = ctl.evaluation;
    text('control-note', !R.length ? 'The run was too short to be measured in segments: its figures are the whole run\'s, above.'
      : evaluation ? `${R.length} windows, baseline (grey) and controlled (purple), each measured after its first ${fmtN(ev ? ev.settle_s : null, 0)} s (the die settling at the new limit).` +
                     (ev ? ` Fitted over the windows: energy per step ${pctCi(ev.energy_change_pct, ev.energy_change_ci_pct)}, time per step ${pctCi(ev.time_change_pct, ev.time_change_ci_pct)}: ${ev.verdict}.` : '')
      : `${R.length} segments, each measured on its own as the run went and then forgotten; the figures above fold them all.`);
    text('control-summary', `Each ${unitOf} (${R.length}) and each change of the limit (${ctl.actions.length})`);
    const ft = el('control-table'), fh = ft.createTHead().insertRow();
    for (const h of [unitOf, 'from, s', 'to, s', 'steps', `energy per ${R.length ? R[0].per : 'step'}, J`, '95% interval, J', 'time per step, ms', '95% interval, ms', 'power, W', 'temperature, C', 'limit, W'])
      { const th = document.createElement('th'); th.textContent = h; fh.appendChild(th); }
    const fb = ft.createTBody();
    const iv = (a, s) => Array.isArray(a) ? `[${sig(a[0] * s)}, ${sig(a[1] * s)}]` : 'n/a';
    R.forEach((r, i) => addRow(fb, [[`${i + 1} ${r.kind}`], [fmtN(r.t0_s, 1), true], [fmtN(r.t1_s, 1), true], [String(r.steps), true],
      [sig(r.energy_per_step_J), true], [iv(r.energy_per_step_ci_J, 1), true], [sig(r.time_per_step_s * 1e3), true], [iv(r.time_per_step_ci_s, 1e3), true],
      [fmtN(r.avg_power_W, 1), true], [fmtN(r.mean_temp_C, 1), true], [fmtN(r.mean_limit_W, 0), true]]));
    const at = el('control-actions'), ah = at.createTHead().insertRow();
    for (const h of ['at, s', 'limit, W', 'temperature, C', 'power, W', ctl.dry_run ? 'would set, because' : 'because'])
      { const th = document.createElement('th'); th.textContent = h; ah.appendChild(th); }
    const ab = at.createTBody();
    for (const a of ctl.actions)
      addRow(ab, [[fmtN(a.t_s, 1), true], [`${fmtN(a.old_limit_W, 0)} → ${fmtN(a.limit_W, 0)}`, true], [fmtN(a.temp_C, 1), true], [fmtN(a.power_W, 1), true], [a.why]]);
  }

  // The decision first, in one line, with the same figures as every other view of it.
  if (ctl) {
    const ev = ctl.evaluation, changes = ctl.actions.length;
    text('decision-text', `Controller ${ctl.policy}: ` +
      (!ctl.engaged ? 'stayed out' : `${ctl.dry_run ? 'would have changed' : 'changed'} the limit ${changes} time(s)`) +
      ` over ${span(ctl.duration_s || 0)}` + (ev
        ? `; evaluated: energy per step ${pctCi(ev.energy_change_pct, ev.energy_change_ci_pct)}, time per step ${pctCi(ev.time_change_pct, ev.time_change_ci_pct)}: ${ev.verdict}.`
        : `; energy per ${per} ${sig(m.energy_per_step_J)} J ${ci(m.energy_per_step_ci_J, 1, 'J')}.`));
    text('decision-why', `${ctl.reason}.` + (ctl.dry_run && ctl.dry_run_reason ? ` Dry run: ${ctl.dry_run_reason}.` : '') +
      ` Limit ${fmtN(ctl.limit_before_W, 0)} W before the run, ${fmtN(ctl.limit_after_W, 0)} W after.`);
  } else if (sw && sw.points.length) {
    const d = sw.decision;
    text('decision-text', d.keep_default
      ? `Decision: keep the default limit (${sw.default_limit_W} W).`
      : `Decision: cap at ${d.cap_W} W: energy per ${sw.unit} ${pctCi(d.energy_change_pct, d.energy_change_ci_pct)}, time per ${sw.unit} ${pctCi(d.time_change_pct, d.time_change_ci_pct)} against ${d.reference && d.reference.text ? d.reference.text : 'the default'}.`);
    text('decision-why', (d.certainty ? 'Certainty: ' + d.certainty + '. ' : '') +
         (d.time_bound ? d.time_bound + '. ' : '') + (d.reason || ''));
  } else if (data.sweep_skipped) {
    text('decision-text', `Decision: keep the limit: no sweep ran.`);
    text('decision-why', data.sweep_skipped);
  } else {
    text('decision-text', `Regime ${reg.name}: a probe names the regime; \`regime study\` or \`regime sweep\` decides a cap.`);
    text('decision-why', reg.advice || '');
  }

  // What was restored: the limit put back, on which GPU and when, or that nothing was changed. A
  // sweep changes the limit after the probe this page's trace holds; unless the caller said what
  // it put back, the line says what the sweep did and how the command ends.
  const rs = data.restore || null;
  let restoreText = rs ? rs.text : '';
  if (sw && sw.points.length && !(rs && (rs.restored || rs.stated))) {
    const caps = sw.points.map((p) => p.cap_W);
    restoreText = `Power limit: the sweep set ${caps.length} caps (${Math.min(...caps)} to ${Math.max(...caps)} W) on ${rs ? rs.gpu : run.device}; ` +
      `the ${data.kind === 'sweep' ? 'sweep' : 'study'} puts the original limit back when it ends unless --apply left the chosen cap set, and its last lines say which.`;
  }
  text('decision-restore', restoreText);

  // Comparison: the newest measured run of each GPU + workload pair in the store (probes; a control
  // run's page leaves it out).
  if (ctl) for (const id of ['comparison-heading', 'comparison-note', 'comparison-charts', 'comparison']) el(id).hidden = true;
  const cmp = data.comparison, rows = cmp.rows;
  const label = (r) => `#${r.id} ${r.gpu}\n${r.workload.length > 28 ? r.workload.slice(0, 27) + '…' : r.workload}`;
  const errorBars = (getCi, scale) => ({
    name: '95% interval', type: 'custom', z: 3, encode: { x: 0, y: [1, 2] },
    data: rows.map((r, i) => { const a = getCi(r); return Array.isArray(a) ? [i, a[0] * scale, a[1] * scale] : [i, NaN, NaN]; }),
    renderItem: errorBarItem((api) => api.size([1, 0])[0] * 0.18) });
  const bars = (value, scale) => ({ name: 'median', type: 'bar', barWidth: '45%',
    data: rows.map((r) => ({ value: value(r) * scale, itemStyle: { color: r.current ? '#8a2be2' : '#9fb3d1' } })) });
  const compareChart = (id, title, unit, value, getCi, scale) => {
    const holder = document.createElement('div');
    el('comparison-charts').appendChild(holder);
    addChart(holder, id, 'tall', {
      title: { text: title, left: 8, top: 4, textStyle: { fontSize: 13 } }, tooltip: { trigger: 'axis' },
      grid: { left: 64, right: 16, top: 40, bottom: 64 },
      xAxis: { type: 'category', data: rows.map(label), axisLabel: { fontSize: 10, interval: 0, lineHeight: 14 } },
      yAxis: { type: 'value', name: unit, nameGap: 8 },
      series: [bars(value, scale), errorBars(getCi, scale)] });
  };
  if (rows.length > 1) {
    compareChart('chart-compare-energy', `Energy per ${cmp.per} (median, 95% interval)`, 'J', (r) => r.energy_per_step_J, (r) => r.energy_per_step_ci_J, 1);
    if (cmp.per === 'step')
      compareChart('chart-compare-time', 'Time per step (median, 95% interval)', 'ms', (r) => r.time_per_step_s, (r) => r.time_per_step_ci_s, 1e3);
  }
  const ct = el('comparison');
  const head = ct.createTHead().insertRow();
  for (const h of ['run', 'GPU', 'workload', 'regime', `energy per ${cmp.per}, J`, '95% interval, J', `time per ${cmp.per}, ms`, '95% interval, ms', 'avg power, W', 'started'])
    { const th = document.createElement('th'); th.textContent = h; head.appendChild(th); }
  const body = ct.createTBody();
  const iv = (a, s) => Array.isArray(a) ? `[${sig(a[0] * s)}, ${sig(a[1] * s)}]` : 'n/a';
  for (const r of rows)
    addRow(body, [[`#${r.id}` + (r.current ? ' (this run)' : '')], [r.gpu], [r.workload], [r.regime ?? 'n/a'],
                  [sig(r.energy_per_step_J), true], [iv(r.energy_per_step_ci_J, 1), true],
                  [sig(r.time_per_step_s * 1e3), true], [iv(r.time_per_step_ci_s, 1e3), true],
                  [fmtN(r.avg_power_W, 1), true], [r.started_at_utc]], r.current ? 'current' : '');
  text('comparison-note', (rows.length > 1 ? `${rows.length} run(s): this one and the newest finished run of every other GPU + workload pair in the store, per ${cmp.per}.` : `Only this run is in the store: charts across GPUs and workloads appear once other pairs are measured.`) +
       (cmp.left_out_other_unit ? ` ${cmp.left_out_other_unit} run(s) measured per ${cmp.per === 'step' ? 'second' : 'step'} are left out (another unit).` : '') +
       (cmp.left_out_unmeasured ? ` ${cmp.left_out_unmeasured} run(s) without a measurement (running or failed) are left out.` : ''));
  text('generated', `Generated by regime report at ${data.generated_utc}. Charts: Apache ECharts ${echarts.version}, inlined; the page loads nothing from the network.`);

  window.addEventListener('resize', () => charts.forEach((c) => c.resize()));
  window.regimeReport = { charts: rendered };
  document.body.dataset.ready = String(rendered.length);
})();
</script>
</body>
</html>
)JS";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string render_html(const nlohmann::json& page_data, std::string_view chart_library_js) {
  if (chart_library_js.empty())
    throw Error(ErrorKind::InvalidArgument, "the charting library text is empty");
  if (lower(chart_library_js).find("</script") != std::string::npos ||
      chart_library_js.find("<!--") != std::string::npos)
    throw Error(ErrorKind::InvalidArgument,
                "the charting library contains '</script' or '<!--' and cannot be inlined");
  // Every '<' in the JSON as \u003c: nothing in the data (a workload's command line, say) can end
  // the script element or open a comment inside it.
  const std::string json = page_data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string escaped;
  escaped.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      escaped += "\\u003c";
    else
      escaped += c;
  }
  std::string out;
  out.reserve(kPageHead.size() + escaped.size() + chart_library_js.size() + kPageScript.size() +
              64);
  out += kPageHead;
  out += escaped;
  out += "\n</script>\n<script>\n";
  out += chart_library_js;
  out += kPageScript;
  return out;
}

}  // namespace regime::report

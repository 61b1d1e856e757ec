// Opens a `regime report` page in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core from report/package-lock.json) and fails unless: nothing is logged as an error,
// no request leaves the file, every expected chart exists with data in every series and has drawn
// pixels on its canvas. Saves screenshots of the whole page, the timeline and the comparison.
// With REPORT_PHASES=N set, the timeline must show N phases: a legend entry each and every span
// of the page data shaded on each timeline chart (none of either for N = 0). A page without a
// trace (`regime report sweep:ID`) must hide the timeline and say why in its place. With
// REPORT_GPUS=N set, the page must draw a job's N GPUs, each in a section of its own.
//
// Usage: [REPORT_PHASES=N] [REPORT_GPUS=N] node report_page.mjs PAGE.html OUT_DIR CHART_ID...
import path from 'node:path';

import { checkPage } from './open_page.mjs';

const [pagePath, outDir, ...expected] = process.argv.slice(2);
if (!pagePath || !outDir || expected.length === 0) {
  console.error('usage: node report_page.mjs PAGE.html OUT_DIR CHART_ID...');
  process.exit(2);
}
await checkPage(pagePath, outDir, async (page, problems, started) => {
  const charts = await page.evaluate((ids) => ids.map((id) => {
    const div = document.getElementById(id);
    if (!div) return { id, missing: true };
    const chart = window.echarts.getInstanceByDom(div);
    const series = chart ? chart.getOption().series.map((s) => ({ name: s.name, points: (s.data || []).length })) : [];
    // Pixels drawn: the share of the canvas that is not background.
    const canvas = div.querySelector('canvas');
    let inked = 0, total = 0;
    if (canvas) {
      const ctx = canvas.getContext('2d');
      const img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < img.length; i += 4 * 7) { total++; if (img[i + 3] > 0 && (img[i] < 235 || img[i + 1] < 235 || img[i + 2] < 235)) inked++; }
    }
    return { id, instance: !!chart, series, inked_fraction: total ? inked / total : 0 };
  }), expected);
  const notes = await page.evaluate(() => ({
    kind: JSON.parse(document.getElementById('page-data').textContent).kind || 'run',
    traced: !!JSON.parse(document.getElementById('page-data').textContent).timeline,
    timeline_shown: !document.getElementById('timeline-section').hidden,
    timeline_note: document.getElementById('timeline-note').textContent,
    downsampling: document.getElementById('downsampling').textContent,
    regime: document.getElementById('regime').textContent,
    comparison_rows: document.querySelectorAll('#comparison tbody tr').length,
    decision: document.getElementById('decision-text').textContent,
    restore: document.getElementById('decision-restore').textContent,
    // The decision leads: its banner lies above the fold, before the regime cards and charts.
    decision_top_px: document.getElementById('decision').getBoundingClientRect().top,
    evidence_open: document.getElementById('evidence-box').open,
    budget_lines: (() => {
      const div = document.getElementById('chart-sweep-time');
      const chart = div && window.echarts.getInstanceByDom(div);
      if (!chart) return 0;
      return chart.getOption().series.flatMap((s) => (s.markLine && s.markLine.data) || []).filter((l) => l.yAxis !== undefined).length;
    })(),
    all_charts: document.querySelectorAll('.chart').length,
    phases: (() => {
      const data = JSON.parse(document.getElementById('page-data').textContent);
      const tl = data.timeline || {};
      const spans = (tl.phases || []).reduce((n, p) => n + p.spans_s.length, 0);
      const legend = document.getElementById('phase-legend');
      // The shaded areas of each timeline chart that are not the measured window.
      const shaded = [...document.querySelectorAll('#timeline .chart')].map((div) => {
        const chart = window.echarts.getInstanceByDom(div);
        return chart.getOption().series.flatMap((s) => (s.markArea && s.markArea.data) || [])
          .filter((a) => !/window/.test(a[0].name || '')).length;
      });
      return { in_data: (tl.phases || []).length, spans, legend_shown: !legend.hidden,
               legend_items: legend.querySelectorAll('.phase-item').length,
               legend: legend.textContent, shaded };
    })(),
    // A job's GPUs: each section's heading, regime line, decision line and charts.
    gpus: (() => {
      const data = JSON.parse(document.getElementById('page-data').textContent);
      return { in_data: (data.gpus || []).map((g) => g.device),
               sections: [...document.querySelectorAll('#gpus section.gpu')].map((s) => ({
                 heading: s.querySelector('h3').textContent,
                 regime: s.querySelector('.gpu-regime').textContent,
                 decision: s.querySelector('.gpu-decision').textContent,
                 charts: s.querySelectorAll('.chart').length })) };
    })(),
    whole_run: (() => {
      const data = JSON.parse(document.getElementById('page-data').textContent);
      if (!data.whole_run) return null;
      return { shown: !document.getElementById('run-section').hidden,
               rows: document.querySelectorAll('#run-table tbody tr').length,
               steps: data.whole_run.steps,
               first_row_steps: Number((document.querySelector('#run-table tbody tr td:nth-child(2)') || {}).textContent),
               note: document.getElementById('run-note').textContent };
    })(),
  }));
  for (const c of charts) {
    if (c.missing) { problems.push(`chart ${c.id} is not on the page`); continue; }
    if (!c.instance) problems.push(`chart ${c.id} has no ECharts instance`);
    if (!c.series.length) problems.push(`chart ${c.id} has no series`);
    for (const s of c.series) if (s.points === 0) problems.push(`chart ${c.id}: series '${s.name}' has no data`);
    if (c.inked_fraction < 0.005) problems.push(`chart ${c.id}: nothing drawn (${c.inked_fraction})`);
  }
  if (notes.all_charts !== expected.length) problems.push(`${notes.all_charts} charts on the page, expected ${expected.length}`);
  // A page without a trace (a kept sweep's) hides the timeline and says why in its place.
  if (notes.traced && !/points/.test(notes.downsampling)) problems.push(`no downsampling note: '${notes.downsampling}'`);
  if (notes.traced !== notes.timeline_shown) problems.push(`timeline shown ${notes.timeline_shown} with a trace ${notes.traced}`);
  if (!notes.traced && !/trace/.test(notes.timeline_note)) problems.push(`no timeline and no word why: '${notes.timeline_note}'`);
  if (!/^(Decision|Regime)\b/.test(notes.decision)) problems.push(`no decision line at the top: '${notes.decision}'`);
  if (notes.decision_top_px > 200) problems.push(`the decision starts ${notes.decision_top_px} px down`);
  // What was restored, on the decision card: the limit, the GPU and when, or that nothing changed.
  // A study's page says which original limit its sweep put back; a probe's, that nothing changed.
  // A kept sweep's page, which has no trace, says which caps the sweep set.
  const restoreRule = notes.kind === 'sweep'
    ? /^Power limit: the sweep set \d+ caps \(\d+(\.\d+)? to \d+(\.\d+)? W\) on .+; the sweep puts the original limit back/
    : expected.includes('chart-sweep-energy')
    ? /^Restored: the original power limit \d+(\.\d+)? W on .+ \(GPU-.+\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$/
    : /^Nothing to restore: the power limit of .+ stayed at \d+(\.\d+)? W throughout; no limit was changed\.$/;
  if (!restoreRule.test(notes.restore)) problems.push(`the decision card does not say what was restored: '${notes.restore}'`);
  if (notes.evidence_open) problems.push('the raw evidence table is open by default');
  // A study that ran its workload to the end: the whole run, part by part, and what it saved.
  if (notes.whole_run) {
    const w = notes.whole_run;
    if (!w.shown) problems.push('the whole run is not shown');
    if (w.rows < 3) problems.push(`the whole run has ${w.rows} parts, expected the run, the probe and the rest`);
    if (w.first_row_steps !== w.steps) problems.push(`the whole run shows ${w.first_row_steps} steps, its data ${w.steps}`);
    if (!/Energy saved against running it all at the (default [\d.]+ W|starting limit( [\d.]+ W)?): -?[\d,]+ J \[/.test(w.note)) problems.push(`no saving with its interval: '${w.note}'`);
  }
  if (process.env.REPORT_PHASES !== undefined) {
    const want = Number(process.env.REPORT_PHASES), ph = notes.phases;
    if (ph.in_data !== want) problems.push(`${ph.in_data} phases in the page data, expected ${want}`);
    if (ph.legend_items !== want || ph.legend_shown !== (want > 0)) problems.push(`phase legend: ${ph.legend_items} items, shown ${ph.legend_shown}, expected ${want}`);
    if (want > 0 && !/\d+% of the energy/.test(ph.legend)) problems.push(`the phase legend gives no energy share: '${ph.legend}'`);
    if (ph.shaded.some((n) => n !== ph.spans)) problems.push(`phase spans shaded per chart ${ph.shaded}, expected ${ph.spans} on each`);
    if (want > 0 && ph.spans < 2 * want) problems.push(`only ${ph.spans} phase spans for ${want} phases`);
  }
  // With REPORT_GPUS=N, a job's page: a section per GPU naming its device, its regime and what the
  // job's one cap did to it, with its own timeline charts.
  if (process.env.REPORT_GPUS !== undefined) {
    const want = Number(process.env.REPORT_GPUS), g = notes.gpus;
    if (g.in_data.length !== want || g.sections.length !== want) problems.push(`${g.in_data.length} GPUs in the page data, ${g.sections.length} sections, expected ${want}`);
    g.sections.forEach((s, i) => {
      if (!s.heading.includes(`GPU ${i + 1} of ${want}: ${g.in_data[i]}`)) problems.push(`GPU section ${i} is headed '${s.heading}'`);
      if (!/^Regime [a-z-]+ \(confidence [\d.]+\)/.test(s.regime)) problems.push(`GPU section ${i} names no regime: '${s.regime}'`);
      if (!/^Decision for the job: .+ this GPU used [\d.]+ J per step/.test(s.decision)) problems.push(`GPU section ${i} gives no share of the decision: '${s.decision}'`);
      if (s.charts < 3) problems.push(`GPU section ${i} draws ${s.charts} charts`);
    });
  }
  if (expected.includes('chart-sweep-time') && notes.budget_lines < 1) problems.push('the time chart has no slowdown-budget line');
  // The decision (cap, intervals, objective in its reason) without scrolling on a wide and a narrow
  // screen, and no raw JSON anywhere on the page; a screenshot of the first screen at each width.
  for (const width of [1400, 900]) {
    await page.setViewportSize({ width, height: 900 });
    await page.evaluate(() => window.scrollTo(0, 0));
    const seen = await page.evaluate(() => {
      const box = document.getElementById('decision').getBoundingClientRect();
      const shown = document.body.innerText;
      return { bottom: box.bottom, json: /[{\[]\s*"[A-Za-z_]+"\s*:/.test(shown) };
    });
    if (seen.bottom > 900) problems.push(`at ${width} px the decision ends ${seen.bottom} px down, below the first screen`);
    if (seen.json) problems.push(`raw JSON shown on the page at ${width} px`);
    await page.screenshot({ path: path.join(outDir, `report-first-screen-${width}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: path.join(outDir, 'report-page.png'), fullPage: true });
  if (notes.traced) await page.locator('#timeline').screenshot({ path: path.join(outDir, 'report-timeline.png') });
  if (await page.locator('#comparison-charts .chart').count())
    await page.locator('#comparison-charts').screenshot({ path: path.join(outDir, 'report-comparison.png') });
  if (notes.gpus.sections.length)
    await page.locator('#gpus-section').screenshot({ path: path.join(outDir, 'report-gpus.png') });
  if (await page.locator('#sweep-charts .chart').count())
    await page.locator('#sweep-charts').screenshot({ path: path.join(outDir, 'report-sweep.png') });
  console.log(JSON.stringify({ page: pagePath, load_and_check_ms: Date.now() - started, charts, notes }, null, 1));
});
console.log(`ok: ${expected.length} charts with data, no console error, no network request; screenshots in ${outDir}`);

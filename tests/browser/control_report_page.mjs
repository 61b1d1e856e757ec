// Opens the `regime report control:ID` page of a control run in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core from report/package-lock.json, as report_page.mjs
// opens a probe's) and fails unless: nothing is logged as an error, no request leaves the file,
// every expected chart exists with data in every series and has drawn pixels on its canvas, the
// timeline reaches the run's end, the decision line names the controller, and the comparison
// across probes is left out. Prints what it saw as JSON and saves screenshots of the timeline and
// of the run's segments or windows.
//
// Usage: node control_report_page.mjs PAGE.html OUT_DIR RUN_SECONDS CHART_ID...
import path from 'node:path';

import { checkPage } from './open_page.mjs';

const [pagePath, outDir, runSeconds, ...expected] = process.argv.slice(2);
if (!pagePath || !outDir || !(Number(runSeconds) > 0) || expected.length === 0) {
  console.error('usage: node control_report_page.mjs PAGE.html OUT_DIR RUN_SECONDS CHART_ID...');
  process.exit(2);
}
await checkPage(pagePath, outDir, async (page, problems, started) => {
  const seen = await page.evaluate((ids) => {
    const chartOf = (id) => { const div = document.getElementById(id); return div && window.echarts.getInstanceByDom(div); };
    const charts = ids.map((id) => {
      const div = document.getElementById(id), chart = chartOf(id);
      if (!div || !chart) return { id, missing: true };
      const canvas = div.querySelector('canvas');
      const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let inked = 0, total = 0;
      for (let i = 0; i < img.length; i += 4 * 7) { total++; if (img[i + 3] > 0 && (img[i] < 235 || img[i + 1] < 235 || img[i + 2] < 235)) inked++; }
      const series = chart.getOption().series.map((s) => ({ name: s.name, points: (s.data || []).length }));
      return { id, series, inked_fraction: inked / total };
    });
    const power = chartOf('chart-power').getOption().series;
    const last = (s) => { const d = s.data[s.data.length - 1]; return Array.isArray(d) ? d[0] : d.value[0]; };
    return {
      charts,
      power_last_t_s: Math.max(...power.filter((s) => s.type === 'line').map(last)),
      limit_step: power.find((s) => s.name === 'limit').step,
      decision: document.getElementById('decision-text').textContent,
      restore: document.getElementById('decision-restore').textContent,
      regime_label: document.getElementById('regime-label').textContent,
      control_note: document.getElementById('control-note').textContent,
      comparison_hidden: document.getElementById('comparison-heading').hidden && document.getElementById('comparison').hidden,
      all_charts: document.querySelectorAll('.chart').length,
    };
  }, expected);
  for (const c of seen.charts) {
    if (c.missing) { problems.push(`chart ${c.id} is not on the page`); continue; }
    for (const s of c.series) if (s.points === 0) problems.push(`chart ${c.id}: series '${s.name}' has no data`);
    if (c.inked_fraction < 0.005) problems.push(`chart ${c.id}: nothing drawn (${c.inked_fraction})`);
  }
  if (seen.all_charts !== expected.length) problems.push(`${seen.all_charts} charts on the page, expected ${expected.length}`);
  if (seen.power_last_t_s < 0.99 * Number(runSeconds)) problems.push(`the timeline ends at ${seen.power_last_t_s} s of a ${runSeconds} s run`);
  if (seen.limit_step !== 'end') problems.push(`the limit is not drawn as steps: ${seen.limit_step}`);
  if (!/^Controller \S+: /.test(seen.decision)) problems.push(`no controller line at the top: '${seen.decision}'`);
  if (!/(Restored|Nothing to restore): /.test(seen.restore)) problems.push(`the decision card does not say what was restored: '${seen.restore}'`);
  if (seen.regime_label !== 'controller') problems.push(`the first card is '${seen.regime_label}'`);
  if (!seen.comparison_hidden) problems.push('the comparison across probes is shown on a control run\'s page');
  await page.screenshot({ path: path.join(outDir, 'control-page.png'), fullPage: true });
  await page.locator('#timeline').screenshot({ path: path.join(outDir, 'control-timeline.png') });
  if (await page.locator('#control-charts .chart').count())
    await page.locator('#control-charts').screenshot({ path: path.join(outDir, 'control-figures.png') });
  console.log(JSON.stringify({ page: pagePath, load_and_check_ms: Date.now() - started, ...seen }, null, 1));
});
console.log(`ok: ${expected.length} charts with data, no console error, no network request; screenshots in ${outDir}`);

// Opens a `regime report` page in headless Chromium (Debian's /usr/bin/chromium, or
// $REGIME_CHROMIUM, driven by playwright-core from report/package-lock.json) for the page checks
// beside this file: collects as problems anything logged as an error or warning, any page error
// and any request that leaves the file; waits for the page to say it has drawn; then hands the
// page to `inspect(page, problems, startedMs)`. Exits 1 listing the problems, if any.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '..', 'report', 'package.json'));
const { chromium } = require('playwright-core');

export async function checkPage(pagePath, outDir, inspect) {
  fs.mkdirSync(outDir, { recursive: true });
  const pageUrl = pathToFileURL(path.resolve(pagePath)).href;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'regime-chromium-'));
  const problems = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.REGIME_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => { if (r.url() !== pageUrl && !r.url().startsWith('data:')) problems.push(`network request: ${r.url()}`); });
    const started = Date.now();
    await page.goto(pageUrl, { waitUntil: 'load' });
    await page.waitForSelector('body[data-ready]', { timeout: 20000 });
    await inspect(page, problems, started);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  if (problems.length) {
    for (const p of problems) console.error('FAIL: ' + p);
    process.exit(1);
  }
}

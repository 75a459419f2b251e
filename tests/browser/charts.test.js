// The charts of the report of recipes/ and the committed run records (reports/runs/): per group a tokens/s/GPU
// bar chart in rank order and a $ / 1M tokens scatter with the cheap-and-fast corner; per run record its step
// times with the timed window shaded and its loss curve. A screenshot of each chart, and of the page with
// scripts off (the server-side ranking and every chart still there).
'use strict';
const path = require('path');
const { sourceDir, outDir, check, freshDir, committedRuns, report, openBrowser, checkClean, fileUrl, main } = require('./lib');

async function checkCharts(page, board, shots) {
  let charts = 0;
  for (const g of board.groups) {
    const bars = page.locator(`svg#bars-${g.id}`);
    check(await bars.count() === 1, `one bar chart for ${g.id}`);
    const order = await bars.locator('g.bar').evaluateAll((els) => els.map((e) => e.dataset.id));
    const expected = g.entries.slice(0, 25).map((e) => e.id);
    check(JSON.stringify(order) === JSON.stringify(expected), `bars of ${g.id} in rank order: ${order} vs ${expected}`);
    const widths = await bars.locator('g.bar rect').evaluateAll((els) => els.map((e) => +e.getAttribute('width')));
    for (let i = 1; i < widths.length; i++) check(widths[i] <= widths[i - 1], `bar ${i} of ${g.id} no longer than bar ${i - 1}`);
    check(await bars.locator('text.axis-title').first().textContent() === 'tokens/s per GPU (measured)', 'bar axis title');
    await bars.screenshot({ path: path.join(shots, `bars-${g.id}.png`) });
    charts++;
    const priced = g.entries.filter((e) => e.usd_per_million_tokens !== null);
    const cost = page.locator(`svg#cost-${g.id}`);
    check(await cost.count() === (priced.length ? 1 : 0), `a cost scatter for ${g.id} exactly when it has $ figures`);
    if (priced.length) {
      check(await cost.locator('g.point').count() === priced.length, `one point per priced entry of ${g.id}`);
      check(await cost.locator('rect.corner').count() === 1, `the cheap-and-fast corner of ${g.id}`);
      const titles = await cost.locator('text.axis-title').allTextContents();
      check(titles.includes('$ per 1M tokens (computed)') && titles.includes('tokens/s per GPU (measured)'), 'scatter axes');
      await cost.screenshot({ path: path.join(shots, `cost-${g.id}.png`) });
      charts++;
    }
    for (const e of g.entries.filter((x) => x.kind === 'run')) {
      for (const kind of ['steps', 'loss']) {
        const svg = page.locator(`svg#${kind}-${e.id}`);
        check(await svg.count() === 1, `${kind} chart of run ${e.id}`);
        check(await svg.locator('g.markers > g').count() === e.details.measurement.settings.steps,
              `one marker per step of ${e.id}`);
        check(await svg.locator('rect.window').count() === 1, `the timed window shaded on ${kind}-${e.id}`);
        await svg.scrollIntoViewIfNeeded();
        await svg.screenshot({ path: path.join(shots, `${kind}-${e.id}.png`) });
        charts++;
      }
    }
  }
  return charts;
}

main('charts', async () => {
  const dir = path.join(outDir, 'charts');
  const shots = freshDir(path.join(dir, 'screenshots'));
  const board = report([path.join(sourceDir, 'recipes'), committedRuns(dir)], path.join(dir, 'report'));
  const url = fileUrl(path.join(dir, 'report', 'leaderboard.html'));
  const s = await openBrowser();
  let charts;
  try {
    await s.page.goto(url);
    charts = await checkCharts(s.page, board, shots);
    await s.page.screenshot({ path: path.join(shots, 'page.png'), fullPage: false });
    checkClean(s);
  } finally {
    await s.browser.close();
  }
  // Scripts off: the same charts and the rows in the server's rank order; the script-only controls hidden.
  const off = await openBrowser({ javaScriptEnabled: false });
  try {
    await off.page.goto(url);
    check(await off.page.locator('svg.chart').count() >= charts, 'every chart without scripts');
    const g = board.groups[0];
    const ids = await off.page.locator(`section#${g.id} table.board tbody tr`).evaluateAll((r) => r.map((x) => x.dataset.id));
    check(JSON.stringify(ids) === JSON.stringify(g.entries.map((e) => e.id)), 'rank order without scripts');
    check(!(await off.page.locator('#filters').isVisible()), 'filters hidden without scripts');
    await off.page.screenshot({ path: path.join(shots, 'page-no-script.png') });
    checkClean(off);
  } finally {
    await off.browser.close();
  }
  return `${charts} charts checked and captured in ${shots}`;
});

// The committed leaderboard as a reader first sees it (issue 34 item 4), in Chromium at 1366 x 900: the first screen
// shows the contents list of the groups and the full-size seed group's ranking, above any proxy group; a group's
// earlier runs open from their fold (commit, date, tokens/s/GPU); no two scatter labels overlap as the browser draws
// them. Screenshots: first-screen.png, fold-open.png, scatter.png (the committed ones: reports/screenshots/).
'use strict';
const path = require('path');
const { sourceDir, outDir, check, freshDir, committedRuns, report, openBrowser, checkClean, fileUrl, main } = require('./lib');

/** The page box of `locator`'s first element (document coordinates). */
async function box(locator) {
  return locator.first().evaluate((e) => {
    const r = e.getBoundingClientRect();
    return { top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left, right: r.right };
  });
}

async function checkFirstScreen(page, board, shots) {
  const height = page.viewportSize().height;
  const index = await box(page.locator('#groups-index'));
  check(index.bottom <= height, `the contents list within the first screen: bottom ${index.bottom} of ${height}`);
  const links = await page.locator('#groups-index li a').allTextContents();
  check(JSON.stringify(links) === JSON.stringify(board.groups.map((g) => g.title)), 'the contents list names every group');
  const seed = board.groups[0];
  check(seed.layers === seed.layers_full, 'the first group is full size: ' + seed.title);
  const rows = page.locator(`section#${seed.id} table.board tbody tr`);
  const last = await box(rows.nth(seed.entries.length - 1));
  check(last.bottom <= height, `the seed group's ${seed.entries.length} rows within the first screen: ${last.bottom}`);
  const proxy = await box(page.locator(`section#${board.groups[1].id}`));
  check(proxy.top > last.bottom, 'no proxy group above the seed group');
  await page.screenshot({ path: path.join(shots, 'first-screen.png') });
  return last.bottom;
}

async function checkFold(page, board, shots) {
  const g = board.groups.find((x) => x.entries.some((e) => e.earlier_runs.length > 2));
  check(g, 'a group with a folded history');
  const e = g.entries.find((x) => x.earlier_runs.length > 2);
  const fold = page.locator(`tr#row-${e.id} details.runs`);
  check(!(await fold.locator('ol.runs').isVisible()), 'the earlier runs folded at first');
  await fold.locator('summary').click();
  const lines = await fold.locator('ol.runs li').allTextContents();
  check(lines.length === e.earlier_runs.length, `${e.earlier_runs.length} earlier runs listed, got ${lines.length}`);
  for (let i = 0; i < lines.length; i++)
    check(lines[i].includes(e.earlier_runs[i].commit.slice(0, 7)) && lines[i].includes(e.earlier_runs[i].started_at.slice(0, 10)),
          `earlier run ${i} says its commit and date: ${lines[i]}`);
  await page.locator(`section#${g.id} h2`).evaluate((h) => { h.scrollIntoView({ block: 'start' }); window.scrollBy(0, -8); });
  await page.screenshot({ path: path.join(shots, 'fold-open.png') });
  return `${e.id}: ${lines.length} earlier runs`;
}

/** Pairs of scatter labels whose drawn boxes (getBBox) intersect, over every scatter of the page. */
async function overlappingLabels(page) {
  return page.locator('svg.chart[id^="cost-"]').evaluateAll((svgs) => {
    const bad = [];
    for (const svg of svgs) {
      const b = Array.from(svg.querySelectorAll('text.point-label')).map((t) => t.getBBox());
      for (let i = 0; i < b.length; i++)
        for (let j = i + 1; j < b.length; j++)
          if (b[i].x < b[j].x + b[j].width && b[j].x < b[i].x + b[i].width &&
              b[i].y < b[j].y + b[j].height && b[j].y < b[i].y + b[i].height) bad.push(svg.id + ' ' + i + '/' + j);
    }
    return bad;
  });
}

main('first_screen', async () => {
  const dir = path.join(outDir, 'first_screen');
  const shots = freshDir(path.join(dir, 'screenshots'));
  const board = report([path.join(sourceDir, 'recipes'), committedRuns(dir)], path.join(dir, 'report'));
  const s = await openBrowser();
  try {
    await s.page.goto(fileUrl(path.join(dir, 'report', 'leaderboard.html')));
    const bottom = await checkFirstScreen(s.page, board, shots);
    const fold = await checkFold(s.page, board, shots);
    const bad = await overlappingLabels(s.page);
    check(bad.length === 0, 'no two scatter labels overlap: ' + bad.join(', '));
    const charts = s.page.locator(`section#${board.groups[0].id} div.charts`).first();
    await charts.scrollIntoViewIfNeeded();
    await charts.screenshot({ path: path.join(shots, 'scatter.png') });
    checkClean(s);
    return `seed rows end at ${bottom} px of 900; ${fold}; scatter labels apart; screenshots in ${shots}`;
  } finally {
    await s.browser.close();
  }
});

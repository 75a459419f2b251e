// The page against the seed's (issue 46; case leaderboard-vs-seed-page of 2026-12-05), in Chromium at 1366 x 900:
// the seed's three recipes and an imported Megatron-LM log of Mixtral-8x7B on 16 H100 (its recipe's stack naming a
// commit). The first screen shows the seed group's headline, subtitle and whole table; entry #1's card opens on its
// notes, names its author with "(cite)", its Download gives the recipe's bytes and its YAML is the file's text; the
// imported entry's commit is its stack's, recipebench's own build apart ("Recorded by"), its window its own.
// Screenshots: first-screen.png, entry-card.png (the committed ones: reports/screenshots/).
'use strict';
const fs = require('fs');
const path = require('path');
const { sourceDir, outDir, check, freshDir, recipebench, report, openBrowser, checkClean, fileUrl, main } =
  require('./lib');

const SEED = path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200');
const CASE = path.join(sourceDir, 'tests/data/cases/leaderboard-vs-seed-page');
const STACK_COMMIT = '5f2e1c9a';  // what the Mixtral recipe's stack names (the log itself prints none)

/** The Mixtral recipe with a stack commit, imported from the case's Megatron-LM log into `runs`. */
function importMixtral(dir, runs) {
  fs.cpSync(path.join(CASE, 'cfg'), path.join(dir, 'cfg'), { recursive: true });
  const yaml = fs.readFileSync(path.join(CASE, 'mixtral-8x7b-h100-tp2-ep8-dp8.yaml'), 'utf8')
    .replace(/^stack:\n/m, `stack:\n  megatron_lm: commit ${STACK_COMMIT} (core_r0.12.0)\n`);
  const recipe = path.join(dir, 'mixtral-8x7b-h100-tp2-ep8-dp8.yaml');
  fs.writeFileSync(recipe, yaml);
  recipebench('import', path.join(CASE, 'megatron-mixtral.log'), '--recipe', recipe, '--out', runs, '--steps', '30',
              '--window', '5:29');
}

/** The page box of `locator`'s first element (viewport coordinates at the top of the page). */
async function bottomOf(locator) {
  return locator.first().evaluate((e) => e.getBoundingClientRect().bottom + window.scrollY);
}

async function checkFirstScreen(page, seed, shots) {
  const group = page.locator('section.group').first();
  check(await group.getAttribute('id') === seed.id, 'the seed group is the first: ' + await group.getAttribute('id'));
  check(await group.locator('h2').textContent() === 'Training Qwen3.5-397B-A17B on B200', 'the seed headline');
  const subtitle = await group.locator('p.subtitle').textContent();
  check(subtitle === 'Ranked by tokens/s per GPU · 8,192-token rows of SFT conversations · global batch 128 · BF16',
        'the seed-style subtitle: ' + subtitle);
  const rows = group.locator('table.board tbody tr');
  check(await rows.count() === 3, 'the seed group ranks 3 recipes');
  const bottom = await bottomOf(rows.nth(2));
  check(bottom <= 900, `the seed table within the first screen: its last row ends at ${bottom} px`);
  const heads = await group.locator('table.board thead th').allTextContents();
  check(!heads.includes('Earlier runs'), 'no "Earlier runs" column of "—" only: ' + heads.join(' | '));
  const commits = await group.locator('td.commit').allTextContents();
  check(commits.every((c) => c === '1dcf0da'), 'the seed\'s commit is its stack\'s Megatron-LM one: ' + commits);
  await page.screenshot({ path: path.join(shots, 'first-screen.png') });
  return bottom;
}

async function checkCard(page, e, shots) {
  const card = page.locator(`article#${e.id}`);
  const first = await card.locator(':scope > :nth-child(3)').getAttribute('class');
  check(first === 'notes', 'the notes come right under the title and speed: ' + first);
  check((await card.locator('div.notes').textContent()).includes('fla_blackwell_guard.py'), 'the B200 patch warning');
  const cite = card.locator('a.cite');
  check(await cite.textContent() === '(cite)' && await cite.getAttribute('href') === e.author.url, 'Author … (cite)');
  const bytes = fs.readFileSync(e.file);
  check(await card.locator('pre.yaml').textContent() === bytes.toString('utf8'), 'the YAML shown is the file\'s text');
  const [download] = await Promise.all([page.waitForEvent('download'), card.locator('a.download').click()]);
  check(download.suggestedFilename() === path.basename(e.file), 'downloads as ' + download.suggestedFilename());
  const got = fs.readFileSync(await download.path());
  check(got.equals(bytes), `the download equals ${e.file} byte for byte (${got.length} of ${bytes.length} bytes)`);
  await card.locator('details.yaml summary').click();
  check(await card.locator('pre.yaml').isVisible(), 'the YAML opens from its summary');
  await card.locator('details.yaml summary').click();  // closed again for the screenshot (200 lines of YAML)
  await card.screenshot({ path: path.join(shots, 'entry-card.png') });
  return bytes.length;
}

async function checkImported(page, board) {
  const e = board.groups.flatMap((g) => g.entries).find((x) => x.backend === 'import · megatron');
  check(e, 'the imported Megatron-LM entry is ranked');
  check(e.commit === STACK_COMMIT && e.window === 'steps 5..29', `its commit and window: ${e.commit}, ${e.window}`);
  const cell = page.locator(`tr#row-${e.id} td.commit code`);
  const [commit, full] = [await cell.textContent(), await cell.getAttribute('title')];
  check(commit === STACK_COMMIT.slice(0, 7) && full === STACK_COMMIT, `its Commit cell is the stack's: ${commit} (${full})`);
  const facts = await page.locator(`article#${e.id} dl.facts`).first().evaluate((dl) => {
    const out = {};
    dl.querySelectorAll('dt').forEach((dt) => { out[dt.textContent] = dt.nextElementSibling.textContent; });
    return out;
  });
  check(facts['Recorded by'].startsWith('recipebench ') && !facts['Recorded by'].includes(STACK_COMMIT),
        'recipebench apart: ' + facts['Recorded by']);
  check(facts['Trained by'].includes('Megatron-LM') && facts['Trained by'].includes(STACK_COMMIT), facts['Trained by']);
  check(!('Environment' in facts), 'recipebench\'s build is not shown as the run\'s environment');
  check(facts['Tokens/s per GPU'].includes('steps 5..29'), 'its own window: ' + facts['Tokens/s per GPU']);
  return e.id;
}

main('seed_page', async () => {
  const dir = freshDir(path.join(outDir, 'seed_page'));
  const shots = freshDir(path.join(dir, 'screenshots'));
  importMixtral(dir, path.join(dir, 'runs'));
  const seedFiles = ['attune-tp2-pp8-ep8-vpp2-mt16k.yaml', 'attune-tp2-pp8-ep8-vpp2-mt8k.yaml',
                     'attune-48gpu-tp2-pp6-ep8.yaml'].map((f) => path.join(SEED, f));
  const board = report([...seedFiles, path.join(dir, 'runs')], path.join(dir, 'report'));
  const seed = board.groups[0];
  check(seed.entries.length === 3 && board.groups.length === 2, 'the seed group first, then Mixtral\'s');
  const s = await openBrowser({ acceptDownloads: true });
  try {
    await s.page.goto(fileUrl(path.join(dir, 'report', 'leaderboard.html')));
    const bottom = await checkFirstScreen(s.page, seed, shots);
    const n = await checkCard(s.page, seed.entries[0], shots);
    const imported = await checkImported(s.page, board);
    checkClean(s);
    return `seed table ends at ${bottom} px of 900; #1's download: ${n} bytes, equal; ${imported}: commit ` +
           `${STACK_COMMIT}, recorded by recipebench; screenshots in ${shots}`;
  } finally {
    await s.browser.close();
  }
});

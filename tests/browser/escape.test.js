// Hostile inputs render as text (issue 18, item 1): a recipe whose author, author URL and notes hold markup, and
// a run record with a hostile value in every free-text string field. In Chromium: no injected script runs, no
// element carries an event handler attribute, no link has a scheme other than http(s) (or an in-page #anchor),
// the page's only scripts are its own two, and the hostile text is shown as typed.
'use strict';
const fs = require('fs');
const path = require('path');
const { sourceDir, outDir, check, freshDir, committedRuns, report, openBrowser, checkClean, fileUrl, main } = require('./lib');

const PAYLOADS = [
  '<script>window.__pwned = "script"</script>',
  '<img src=x onerror="window.__pwned = \'img\'">',
  '"><svg onload="window.__pwned = \'svg\'"><a href="javascript:window.__pwned=1">x</a>',
  "javascript:window.__pwned='href'",
  '</script><script>window.__pwned = "close"</script><!--',
  "' onmouseover='window.__pwned=1' x='",
];
// Fields the report needs as they are to read the record at all (its kind, state, device and the names it looks
// up); every other string, in the record and in the recipe document it embeds, gets a hostile value.
const KEEP = new Set(['schema', 'status', 'settings.device', 'settings.backend', 'backend',
                      'recipe.document.model', 'recipe.document.gpu.type', 'recipe.document.workload.precision',
                      'started_at', 'finished_at', 'settings.data.source', 'environment.build_type']);

let keepAlso = new Set();

function poison(value, at, counter) {
  if (typeof value === 'string') {
    if (KEEP.has(at) || keepAlso.has(at)) return value;
    counter.n++;
    return PAYLOADS[counter.n % PAYLOADS.length] + ' @' + at;
  }
  if (Array.isArray(value)) return value.map((v, i) => poison(v, at, counter));
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = poison(v, at ? at + '.' + k : k, counter);
    return out;
  }
  return value;
}

function hostileInputs(dir, keep) {
  freshDir(dir);
  const seed = fs.readFileSync(path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml'), 'utf8');
  const recipe = seed
    .replace(/^author:\n  name: .*\n  url: .*\n/m,
             'author:\n  name: \'<b onclick="window.__pwned=1">Eve</b><script>window.__pwned="author"</script>\'\n' +
             '  url: https://example.org/"><script>window.__pwned=1</script>\n')
    .replace(/^notes: \|\n(  .*\n)+/m, 'notes: |\n  <img src=x onerror="window.__pwned=\'notes\'"> & <i>italic</i> </p><script>window.__pwned=2</script>\n');
  check(recipe !== seed, 'the recipe was changed');
  fs.writeFileSync(path.join(dir, 'hostile-recipe.yaml'), recipe);
  const runs = committedRuns(path.dirname(dir));  // beside the inputs, not among them
  const record = JSON.parse(fs.readFileSync(path.join(runs, fs.readdirSync(runs).sort()[0]), 'utf8'));
  const counter = { n: 0 };
  const hostile = poison(record, '', counter);
  fs.writeFileSync(path.join(dir, 'hostile-run.json'), JSON.stringify(hostile, null, 2));
  return counter.n;
}

async function checkDom(page) {
  return page.evaluate(() => {
    const bad = [];
    if (window.__pwned !== undefined) bad.push('window.__pwned = ' + window.__pwned);
    const scripts = Array.from(document.scripts);
    if (scripts.length !== 2 || scripts[0].type !== 'application/json' || scripts[1].type !== '')
      bad.push(scripts.length + ' script elements');
    for (const e of document.querySelectorAll('*')) {
      for (const a of e.attributes) {
        if (/^on/i.test(a.name)) bad.push(`<${e.tagName} ${a.name}>`);
        // The report's own Download of a recipe (docs/report.md, "An entry's card"): a base64 data: URI of the
        // recipe's bytes, or its copy beside the page under a slug name; never a link an input chose.
        const download = e.tagName === 'A' && e.className === 'download' && a.name === 'href' &&
          (/^data:application\/yaml;base64,[A-Za-z0-9+\/=]*$/.test(a.value) ||
           /^leaderboard-recipes\/[a-z0-9-]+\.yaml\.txt$/.test(a.value));
        if (/^(href|src|xlink:href|action|formaction)$/i.test(a.name) && !/^(https?:\/\/|#)/i.test(a.value) && !download)
          bad.push(`<${e.tagName} ${a.name}="${a.value}">`);
      }
    }
    for (const tag of ['img', 'iframe', 'object', 'embed', 'b', 'i', 'foreignObject'])
      if (document.getElementsByTagName(tag).length) bad.push(`a <${tag}> element`);
    // The text a reader gets (every element, laid out or not), without the comparison data's JSON.
    const body = document.body.cloneNode(true);
    for (const sc of body.querySelectorAll('script')) sc.remove();
    return { bad, text: body.textContent };
  });
}

main('escape', async () => {
  const dir = path.join(outDir, 'escape');
  // `report` validates records on the way in (schema patterns, enums): a hostile value it refuses, with the file and
  // the field, is kept as it was and the record tried again, so what reaches the page is every string it accepts.
  let poisoned = 0, board = null, refused = 0;
  for (let attempt = 0; attempt < 40 && !board; ++attempt) {
    poisoned = hostileInputs(path.join(dir, 'inputs'));
    try {
      board = report([path.join(dir, 'inputs')], path.join(dir, 'report'));
    } catch (e) {
      const fields = [...String(e.stderr).matchAll(/hostile-run\.json(?::\d+:\d+)?: error: ([^:]+):/g)].map((m) => m[1]);
      check(fields.length > 0, 'a refusal names the file and the field:\n' + e.stderr);
      for (const f of fields) keepAlso.add(f.replace(/\[\d+\]/g, ''));
      refused += fields.length;
    }
  }
  check(board !== null, 'the report accepted the record once the refused fields were kept');
  check(poisoned >= 10, `${poisoned} hostile strings reached the page`);
  const entries = board.groups.flatMap((g) => g.entries);
  check(entries.length === 2, `both hostile inputs ranked (${entries.length}; unranked: ${board.unranked})`);
  const s = await openBrowser();
  try {
    await s.page.goto(fileUrl(path.join(dir, 'report', 'leaderboard.html')));
    for (const cb of await s.page.locator('input.pick').all()) await cb.check();  // the comparison shows every field
    await s.page.locator('table.board tbody tr').first().hover();
    const { bad, text } = await checkDom(s.page);
    check(bad.length === 0, 'hostile markup became live:\n' + bad.join('\n'));
    check(text.includes('<b onclick="window.__pwned=1">Eve</b><script>window.__pwned="author"</script>'), 'author shown as typed');
    check(text.includes('<img src=x onerror="window.__pwned=\'notes\'"> & <i>italic</i>'), 'notes shown as typed');
    check(text.includes("javascript:window.__pwned='href'"), 'a javascript: value shown as text');
    check(await s.page.locator('a[href^="https://example.org"]').count() === 0, 'a URL holding a quote is no link');
    await s.page.screenshot({ path: path.join(dir, 'hostile.png'), fullPage: false });
    checkClean(s);
  } finally {
    await s.browser.close();
  }
  return `${poisoned} hostile strings in a run record (${refused} refused at their field by report) and markup in a recipe's author and notes rendered as text`;
});

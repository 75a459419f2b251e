// The browser tests' setup test (tests/CMakeLists.txt, fixture browser_node): playwright-core of the version that
// package-lock.json pins is in tests/browser/node_modules, where scripts/setup installs it. Reaches no network.
const fs = require('fs');
const path = require('path');

const lock = JSON.parse(fs.readFileSync(path.join(__dirname, 'package-lock.json'), 'utf8'));
const want = lock.packages['node_modules/playwright-core'].version;
const installed = path.join(__dirname, 'node_modules', 'playwright-core', 'package.json');
let have = 'none';
if (fs.existsSync(installed)) have = JSON.parse(fs.readFileSync(installed, 'utf8')).version;
if (have !== want) {
  console.error(`${installed}: playwright-core ${have}, expected ${want} (package-lock.json): run scripts/setup`);
  process.exit(1);
}
console.log(`playwright-core ${have} in ${path.dirname(path.dirname(installed))}`);

// browser_test.mjs - drives index.html in headless Chromium (make web-test): loads the model
// beside the page, asks for a user's top 10 as a person would (types the id, clicks), picks
// two of the items shown for a new user and asks for its top 10, and checks both answers,
// score bits included, against the host build of ncf_web.c on the same model file, and a
// names file's names beside the ids; then
// takes a screenshot and prints the page's figures.
// Usage: node browser_test.mjs DIR HOST [PLAYWRIGHT_DIR]
//   DIR: index.html, ncf.js, ncf.wasm and model.ncf; HOST: the host build (ncf_web.c with
//   -DWEB_HOST_MAIN); PLAYWRIGHT_DIR: where npm installed playwright-core.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, extname, resolve } from 'node:path';

const [dir, host, pwDir = '.'] = process.argv.slice(2);
const { chromium } = createRequire(resolve(pwDir, 'x.js'))('playwright-core');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = createServer(async (req, res) => {
  try {
    const path = new URL(req.url, 'http://x').pathname.replace(/^\/$/, '/index.html');
    const body = await readFile(join(dir, path));
    res.writeHead(200, { 'content-type': types[extname(path)] || 'application/octet-stream' }).end(body);
  } catch { res.writeHead(404).end(); }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));

const hostLines = (args) => execFileSync(host, [join(dir, 'model.ncf'), ...args]).toString().trim().split('\n');
let failed = 0, passed = 0;
const check = (what, ok, detail = '') => {
  console.log(`${what} ... ${ok ? 'ok' : 'FAILED'}${ok || !detail ? '' : '\n' + detail}`);
  failed += !ok, passed += !!ok;
};

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForSelector('body[data-ready]', { timeout: 30000 });
  check('the page opens model.ncf', (await page.getAttribute('body', 'data-ready')) === 'yes', errors.join('\n'));

  const [info] = hostLines(['0']);
  const user = JSON.parse(info).user_ids[3];
  await page.fill('#user', user);
  await page.click('#recommend');
  await page.waitForSelector('#rec-list li');
  const want = hostLines(['4'])[4];
  const got = await page.textContent('#raw');
  check(`user ${user}'s top 10 in the browser equals the host's, score bits too`, got === want, `page: ${got}\nhost: ${want}`);

  const picks = await page.$$eval('#rec-list li', (lis) => lis.slice(0, 2).map((li) => li.dataset.id));
  await page.click('#rec-list li:nth-child(1)');
  await page.click('#rec-list li:nth-child(2)');
  await page.click('#fold');
  await page.waitForSelector('#fold-list li');
  const wantFold = hostLines(['0', picks.join(',')]).at(-1);
  const gotFold = await page.textContent('#raw');
  check(`a new user who picked ${picks.join(' and ')}: its top 10 equals the host's`, gotFold === wantFold,
        `page: ${gotFold}\nhost: ${wantFold}`);
  // a names file picked: the same list shows the name beside the id
  await page.setInputFiles('#names-file', { name: 'names.csv', mimeType: 'text/csv',
    buffer: Buffer.from(`title,item\n"First, named",${picks[0]}\n`) });
  await page.waitForFunction(() => document.getElementById('names-info').textContent.includes('1 names'));
  await page.click('#recommend');
  const first = (await page.textContent('#rec-list li:nth-child(1)')).trim();
  check('a names file shows names beside the ids', first.startsWith(`First, named (${picks[0]}) `), first);
  check('no script errors on the page', errors.length === 0, errors.join('\n'));

  await page.screenshot({ path: join(dir, 'page.png'), fullPage: true });
  const fig = async (id) => (await page.textContent(id)).trim();
  console.log(`the page: ncf.wasm ${await fig('#wasm-size')}; ${await fig('#rec-time')}; ${await fig('#fold-time')}`);
  console.log(`screenshot: ${join(dir, 'page.png')}`);
} finally {
  await browser.close();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

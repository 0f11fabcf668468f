// A browser stand-in for the loopback listener's fragment relay page (the implicit grant),
// that runs the page's own inline script instead of imitating it:
//   node fragment-relay.mjs 'http://127.0.0.1:PORT/callback#access_token=…&state=…'
// It GETs the address without its fragment (as a browser does), finds the page's one
// inline script, checks that the page's Content-Security-Policy allows exactly that script
// (its sha256 hash) and fetches to its own origin only, then runs the script in a fresh
// context whose location, history, document and fetch behave as a browser's would for that
// page: fetch resolves against the page's address, refuses other origins, and sends the
// Origin and Sec-Fetch-Site headers a browser adds. Prints the status line the script shows
// and exits 0 when the listener answered the script's POST with a 2xx, 1 otherwise, 2 when
// the page or its policy is wrong.
import { createHash } from 'node:crypto';
import vm from 'node:vm';

const fail = (code, message) => { console.error(`fragment-relay: ${message}`); process.exit(code); };
const target = new URL(process.argv[2] ?? fail(2, 'usage: node fragment-relay.mjs URL'));
const address = new URL(target); address.hash = '';

const page = await fetch(address, { redirect: 'manual' });
const html = await page.text();
const csp = page.headers.get('content-security-policy') ?? '';
if (page.status !== 200) fail(2, `the page answered ${page.status}`);
if (page.headers.get('referrer-policy') !== 'no-referrer') fail(2, 'the page has no Referrer-Policy: no-referrer');
const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
if (scripts.length !== 1) fail(2, `the page has ${scripts.length} scripts, not one`);
if (scripts[0][1].trim() !== '') fail(2, 'the script tag has attributes (src?)');
const source = scripts[0][2];
const hash = `'sha256-${createHash('sha256').update(source, 'utf8').digest('base64')}'`;
const directives = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
if (JSON.stringify(directives['script-src']) !== JSON.stringify([hash])) fail(2, `script-src is ${directives['script-src']}, not ${hash}`);
if (JSON.stringify(directives['connect-src']) !== JSON.stringify(["'self'"])) fail(2, "connect-src is not 'self'");
if (JSON.stringify(directives['default-src']) !== JSON.stringify(["'none'"])) fail(2, "default-src is not 'none'");

// The page's world.
const status = { textContent: html.match(/<p id="status">([^<]*)<\/p>/)?.[1] ?? '' };
const initial = status.textContent;
const location = new URL(target);
const history = {
  replaceState(_state, _title, url) {
    const next = new URL(url, location.href);
    if (next.origin !== location.origin) throw new Error('replaceState to another origin');
    location.href = next.href;
  },
};
const document = { getElementById: (id) => (id === 'status' ? status : null) };
let answer;
const pageFetch = (input, init = {}) => {
  const url = new URL(input, location.href);
  if (url.origin !== location.origin) return Promise.reject(new TypeError('blocked by connect-src'));
  const headers = { ...(init.headers ?? {}), Origin: location.origin, 'Sec-Fetch-Site': 'same-origin' };
  answer = fetch(url, { ...init, headers });
  return answer;
};
vm.runInNewContext(source, { location, history, document, fetch: pageFetch });

if (location.hash !== '') fail(2, 'the script left the fragment in the address');
if (!answer) { console.log(status.textContent); process.exit(1); }
const response = await answer.catch((error) => fail(1, `the POST failed: ${error}`));
for (let i = 0; i < 500 && status.textContent === initial; i++) await new Promise((r) => setTimeout(r, 10));
console.log(status.textContent);
process.exit(response.status >= 200 && response.status < 300 ? 0 : 1);

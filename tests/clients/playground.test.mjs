// Issue 55: the playground at `/` of `cargo xtask serve`, on the embedded default (no keys: the
// labelled mock model, mock search, the bundled embedder over the 240 sample activities), driven
// by headless Chromium (Debian's, through playwright-core) as a newcomer uses it: signs in with
// the door's own OpenID issuer, chats through useChat and sees the reply stream in, approves a
// call that waits for them (its expiry shown), runs a research to `complete` across a dropped
// stream and a refused reconnect, searches activities and sees why each matched, reads what they
// spent, and reloads the page to find the conversation. Its screenshot is the README's picture
// (`PLAYGROUND_SCREENSHOT` names where to write it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium as playwright } from 'playwright-core';
import { startCutter, startDoor } from './support.mjs';

let door;
let cutter;
let browser;

/** Debian's chromium (installed by infra/test.sh), or `CHROMIUM`. */
function chromium() {
  const found = [process.env.CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((c) => c && existsSync(c));
  if (!found) throw new Error('headless Chromium is not installed: run the suite with `bash infra/test.sh` (it installs Debian\'s chromium) or set CHROMIUM');
  return found;
}

before(async () => {
  // The embedded default: no JWT_ISSUER (the door's own issuer), no keys, the sample activities.
  const env = { SAMPLE_ACTIVITIES: '1', JWT_ISSUER: '', JWT_AUDIENCE: '', LLM_API_KEY: '', PERPLEXITY_API_KEY: '', TAVILY_API_KEY: '', ASSISTANT_TOOLS: '' };
  door = await startDoor(env);
  cutter = await startCutter(door.url, { cutAfter: 3, refuseReconnect: true });
  browser = await playwright.launch({ executablePath: chromium(), args: ['--no-sandbox', '--disable-gpu'] });
});

after(async () => {
  await browser?.close();
  cutter?.close();
  door?.close();
});

test('a newcomer signs in, chats, approves, researches across a dropped stream, searches, sees their spend and reloads', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: 'en-US' });
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  // Every refusal is a problem but those the test makes: the refused reconnect (503), a new
  // conversation's history (404), and the browser's favicon.
  page.on('response', (r) => {
    const expected = r.url().includes('/stream') || /\/chat\/play-[0-9a-f]+\?/.test(r.url()) || r.url().endsWith('/favicon.ico');
    if (r.status() >= 400 && !expected) problems.push(`${r.request().method()} ${r.url()}: ${r.status()}`);
  });
  // Everything through the cutter: the page's origin, so the stream URLs the door gives name it.
  await page.goto(cutter.url);

  // Sign in with the door's own issuer.
  await page.fill('input', 'alice');
  await page.click('button:has-text("sign in")');
  await page.waitForSelector('text=signed in as');

  // Issue 63: with no location sent and none kept, the tool needs one: the page says so (not
  // "nothing found"), and the reply asks where the user is.
  const messages = page.locator('[data-testid=messages]');
  await page.uncheck('[data-testid=share-location]');
  await page.fill('input[placeholder]', '附近有什么安静的活动');
  await page.click('button:text-is("send")');
  const needs = messages.locator('[data-testid=needs-location]');
  await needs.waitFor({ timeout: 60_000 });
  assert.match(await needs.innerText(), /needs a location/);
  const asked = messages.locator('.message.assistant').first();
  await asked.locator('p', { hasText: '需要知道你在哪里' }).waitFor({ timeout: 60_000 });
  assert.ok(!(await asked.innerText()).includes('没有找到'), 'never "nothing found"');
  await page.check('[data-testid=share-location]');

  // Chat: the reply streams in, with its mode and how it was chosen.
  await page.fill('input[placeholder]', '周末有什么轻松的户外活动？');
  await page.click('button:text-is("send")');
  const reply = messages.locator('.message.assistant').nth(1);
  await reply.locator('p', { hasText: '模擬' }).first().waitFor({ timeout: 60_000 });
  assert.match(await reply.innerText(), /mode [A-Z]+/, 'the mode is shown');
  assert.match(await reply.innerText(), /chosen by/, 'and how it was chosen');
  assert.match(await reply.innerText(), /labelled mock model/, 'the mock is labelled');

  // An approval: the sample app tool waits for the user, its expiry on the card.
  await page.selectOption('select', 'MANAGE');
  await page.fill('input[placeholder]', 'cancel my Saturday activity');
  await page.click('button:text-is("send")');
  const card = page.locator('[data-testid=approval]');
  await card.waitFor({ timeout: 60_000 });
  assert.match(await card.innerText(), /cancelActivity waits for your approval/);
  const expiry = await card.locator('.muted').innerText();
  assert.match(expiry, /^expires \d{1,2}:\d{2}/, `the expiry from the data-approval part: ${expiry}`);
  await card.locator('button:has-text("approve")').click();
  const ran = messages.locator('[data-testid=tool]', { hasText: 'cancelActivity' }).filter({ hasText: 'output-available' });
  await ran.waitFor({ timeout: 60_000 });
  assert.match(await ran.innerText(), /cancelActivity/);
  assert.match(await ran.innerText(), /"cancelled":true/, 'the sample app ran the approved call');

  // A research: the first stream is cut after 3 events and the browser's own reconnect refused
  // (503, so EventSource gives up); the page recovers from the session's status to `complete`,
  // showing every event once.
  await page.click('button:text-is("research")');
  await page.locator('[data-testid=research-status]', { hasText: 'complete' }).waitFor({ timeout: 120_000 });
  const [first, refused] = cutter.streams;
  assert.ok(first?.cut && first.ids.length === 3, `the first stream cut after 3 events: ${JSON.stringify(first)}`);
  assert.equal(refused?.status, 503, 'the browser\'s own reconnect was refused');
  assert.equal(refused.lastEventId, '3', 'it had asked to go on after event 3');
  const afterRefusal = cutter.requests.slice(cutter.requests.lastIndexOf(`GET ${refused.url}`) + 1);
  assert.ok(afterRefusal.some((r) => /^GET \/api\/research\/[0-9a-f-]+$/.test(r)), `the status read: ${afterRefusal}`);
  // (Reopening after the last event shown, when the run is still going, is timeline.test.mjs's:
  // the mock research here ends within a second.)
  const shown = await page.locator('[data-testid=research-status]').locator('..').innerText();
  const count = Number(shown.match(/(\d+) events/)[1]);
  const last = Number(await page.locator('[data-testid=research-last]').innerText());
  assert.ok(count >= 5 && count === last, `every event once (${count} shown, the last id ${last})`);

  // Activity search: results with why they matched.
  await page.click('button:text-is("search")');
  const reason = page.locator('[data-testid=reason]').first();
  await reason.waitFor({ timeout: 60_000 });
  assert.ok((await reason.innerText()).trim().length > 0, 'a match reason');
  assert.ok(await page.locator('[data-testid=result]').count() >= 1);

  // What alice spent: the cost report's line for her.
  await page.click('button:text-is("refresh")');
  const spend = page.locator('[data-testid=my-spend]');
  await spend.waitFor({ timeout: 30_000 });
  assert.match(await spend.innerText(), /^alice spent \$\d+\.\d{4}/);

  // Another cancel, left waiting: the README's picture shows its card.
  await page.fill('input[placeholder]', 'cancel my Sunday activity too');
  await page.click('button:text-is("send")');
  await page.locator('[data-testid=approval]').waitFor({ timeout: 60_000 });
  if (process.env.PLAYGROUND_SCREENSHOT) await page.screenshot({ path: process.env.PLAYGROUND_SCREENSHOT });

  // A reload: the conversation comes back from GET /chat/{id}.
  await page.reload();
  await messages.locator('.message.user', { hasText: '周末有什么轻松的户外活动' }).waitFor({ timeout: 30_000 });
  assert.ok(await messages.locator('.message.assistant', { hasText: '模擬' }).count() >= 1, 'the replies too');

  assert.deepEqual(problems, [], 'no error on the page');
});

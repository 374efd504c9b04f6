// `cargo lambda watch` and `cargo lambda invoke`, run as docs/development.md tells a user to:
// every fixture of infra/events/ through the function it is for, keyless, on the embedded
// default (a fresh DATA_DIR), by the real cargo-lambda (the pinned one, which infra/test.sh
// installs and puts on PATH); then watch's plain HTTP path, which carries no authorizer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const events = join(root, 'infra', 'events');
let port;
let watch;
let log = '';

/** Which function each fixture is for, and what its answer must be. */
const FIXTURES = {
  'search.json': ['search', 200, (b) => b.method === 'search' && b.mock === true && typeof b.content === 'string'],
  'search-competitors.json': ['search', 200, (b) => b.method === 'competitors' && b.mock === true && Array.isArray(b.topCompetitors)],
  'search-trends.json': ['search', 200, (b) => b.method === 'trends' && Array.isArray(b.trends)],
  'search-topic.json': ['search', 200, (b) => b.method === 'topic' && Array.isArray(b.keyPoints)],
  'research.json': ['search', 200, (b) => b.mock === true && b.results?.length === 3],
  'tools.json': ['search', 200, (b) => b.tools?.length === 1 && b.tools[0].function.name === 'explore_nearby'],
  'tools-search-web.json': ['search', 404, (b) => b.error?.code === 'not_found'],
  'sources.json': ['search', 404, (b) => b.error?.code === 'not_found'],
  'search-malformed.json': ['search', 400, (b) => b.error?.code === 'malformed_json'],
  'cost-report.json': ['cost-report', 200, (b) => b.startsWith('Research Agent:\n- Mock Search: $0.0000\n')],
  'schedule.json': ['cost-report', null, (b) => typeof b.day === 'string' && typeof b.text === 'string' && typeof b.report?.totals?.costUsd === 'number'],
  // A streamed reply (research's Function URL streams): invoke prints its body, without the status.
  'research-create.json': ['research', 'streamed', (b) => typeof b.session_id === 'string' && b.stream_url?.includes(`/api/research/${b.session_id}/stream?token=`)],
  'activities-create.json': ['index-activity', 200, (b) => b.indexed?.map((a) => `${a.id}:${a.embedding}`).join() === 'act-fixture-1:embedded,act-fixture-2:embedded'],
  'activity-update.json': ['index-activity', 200, (b) => b.indexed?.[0]?.id === 'act-fixture-1'],
  'activity-created.json': ['index-activity', null, (b) => b.indexed?.[0]?.id === 'act-fixture-3' && b.indexed[0].embedding === 'embedded'],
  'activity-updated.json': ['index-activity', null, (b) => b.indexed?.[0]?.id === 'act-fixture-3'],
  'rag-search.json': ['rag-search', 200, (b) => b.results?.length >= 1 && b.results.every((r) => r.activity.id.startsWith('act-fixture-') && typeof r.score === 'number')],
  'user-feedback.json': ['rag-search', 200, (b) => b.userId === 'u-fixture' && b.satisfied === true],
  // The keyless model's reply after its explore_nearby call: under cargo-lambda's fixed 1970
  // deadline too (it was a 503 within 45 ms before the functions read that deadline as none).
  'chat.json': ['assistant', 200, (b) => b.mock === true && b.mode === 'EXPLORE' && b.toolCalls?.[0]?.name === 'explore_nearby' && b.toolCalls[0].ok === true && b.reply.length > 0],
  // CodeDeploy's PreTraffic hook sends it to a new assistant version (template.yaml's
  // AssistantSmokeHook, held to it by infra/sam-check.py): CHAT, answered.
  'smoke-chat.json': ['assistant', 200, (b) => b.mode === 'CHAT' && b.by === 'client' && typeof b.reply === 'string' && b.reply.length > 0],
  'smoke-explore.json': ['assistant', 200, (b) => b.mode === 'EXPLORE' && b.by === 'client' && typeof b.reply === 'string' && b.reply.length > 0],
  'activity-delete.json': ['index-activity', 200, (b) => b.id === 'act-fixture-2' && b.deleted === true],
  'activity-deleted.json': ['index-activity', null, (b) => b.id === 'act-fixture-3' && b.deleted === true],
};

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => { socket.end(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
}

/** `cargo lambda ARGS` (argv, no shell): its exit code, stdout and stderr. */
function cargoLambda(args, timeoutMs = 20 * 60_000) {
  return new Promise((resolve) => {
    execFile('cargo', ['lambda', ...args], { cwd: root, timeout: timeoutMs, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Invokes `fn` with the fixture `name`: the function's answer, parsed. */
async function invoke(fn, name) {
  const args = ['invoke', fn, '--data-file', join(events, name), '--invoke-address', '127.0.0.1', '--invoke-port', String(port)];
  const { code, stdout, stderr } = await cargoLambda(args);
  assert.equal(code, 0, `cargo lambda invoke ${fn} ${name} failed:\n${stderr}\n--- watch:\n${log.slice(-4000)}`);
  return JSON.parse(stdout);
}

before(async () => {
  const version = await cargoLambda(['--version'], 60_000);
  assert.equal(version.code, 0, 'cargo-lambda is not installed: bash infra/test.sh installs the pinned one and puts it on PATH');
  port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'cargo-lambda-'));
  watch = spawn('cargo', ['lambda', 'watch', '--invoke-address', '127.0.0.1', '--invoke-port', String(port), '--ignore-changes'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, RUST_LOG: 'info' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  watch.stdout.on('data', (d) => { log += d; });
  watch.stderr.on('data', (d) => { log += d; });
  const until = Date.now() + 120_000;
  while (!(await listening(port))) {
    assert.ok(Date.now() < until && watch.exitCode === null, `cargo lambda watch did not listen on ${port}:\n${log}`);
    await new Promise((r) => setTimeout(r, 250));
  }
});

after(() => {
  if (watch && watch.exitCode === null) process.kill(-watch.pid, 'SIGTERM');
});

test('every fixture in infra/events/ is answered by its function under cargo lambda watch + invoke', async () => {
  const missing = readdirSync(events).filter((f) => f.endsWith('.json') && !(f in FIXTURES));
  assert.deepEqual(missing, [], 'a fixture this test does not send: say which function it is for');
  for (const [name, [fn, status, shape]] of Object.entries(FIXTURES)) {
    const answer = await invoke(fn, name);
    if (status === null || status === 'streamed') {
      // An EventBridge event's JSON summary, or a streamed reply's body.
      assert.ok(shape(answer), `${fn} ${name}: ${JSON.stringify(answer)}`);
      continue;
    }
    assert.equal(answer.statusCode, status, `${fn} ${name}: ${JSON.stringify(answer)}`);
    const type = answer.headers?.['content-type'] ?? '';
    const body = type.startsWith('application/json') ? JSON.parse(answer.body) : answer.body;
    assert.ok(shape(body), `${fn} ${name}: ${answer.body}`);
  }
});

test('the backfill answers the hourly schedule under cargo lambda invoke', async () => {
  const answer = await invoke('backfill', 'schedule.json');
  // The sweep's summary: nothing waits for an embedder on a fresh DATA_DIR.
  assert.equal(answer.errors, 0, JSON.stringify(answer));
  assert.equal(answer.processed, answer.total, JSON.stringify(answer));
});

test("watch's HTTP path carries no authorizer: a paid route answers 401 JSON, a public one answers", async () => {
  const paid = await fetch(`http://127.0.0.1:${port}/lambda-url/search/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'coffee' }),
  });
  assert.equal(paid.status, 401);
  assert.equal((await paid.json()).error.code, 'unauthenticated');
  const tools = await fetch(`http://127.0.0.1:${port}/lambda-url/search/tools`);
  assert.equal(tools.status, 200);
  assert.equal((await tools.json()).tools[0].function.name, 'explore_nearby');
});

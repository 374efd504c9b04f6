// `/chat` through `cargo xtask serve` with the AI SDK's own chat client: `DefaultChatTransport`
// (what `useChat` sends and reads with) and `readUIMessageStream`, tokens from a test issuer,
// and a fake model that streams slowly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { DefaultChatTransport, readUIMessageStream } from 'ai';
import { startBundle, startDoor, usersOf } from './support.mjs';

const PIECES = ['Streams ', 'arrive ', 'piece ', 'by ', 'piece, ', 'as written.'];
let bundle;
let issuer;
let model;
let door;

before(async () => {
  bundle = await startBundle((request) => {
    const last = request.messages.at(-1)?.content ?? '';
    if (last.includes('long story')) return { pieces: Array.from({ length: 40 }, (_, i) => `part ${i}. `), delayMs: 150 };
    return { pieces: PIECES, delayMs: 400 };
  });
  ({ issuer, model, door } = bundle);
});

after(() => bundle?.close());

const userMessage = (id, text) => ({ id, role: 'user', parts: [{ type: 'text', text }] });

/** Sends `messages` of chat `chatId` as useChat does; the UI message chunk stream. */
function send(chatId, messages, { token = issuer.token(), abortSignal } = {}) {
  const transport = new DefaultChatTransport({ api: `${door.url}/chat`, headers: { Authorization: `Bearer ${token}` } });
  return transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal });
}

test('a token that is missing, forged, expired or for another audience is a 401 before any model call', async () => {
  const before = model.calls.length;
  const cases = {
    missing: null,
    forged: issuer.token({}, { forged: true }),
    expired: issuer.token({ exp: Math.floor(Date.now() / 1000) - 3600 }),
    'another audience': issuer.token({ aud: 'someone-else' }),
    'another issuer': issuer.token({ iss: 'https://evil.example.com' }),
    'an unknown key': issuer.token({}, { header: { kid: 'nobody' } }),
    'no algorithm': `${Buffer.from('{"alg":"none","kid":"test-key-1"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.`,
  };
  for (const [what, token] of Object.entries(cases)) {
    const response = await fetch(`${door.url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ id: 'c-refused', messages: [userMessage('m1', 'hi')], trigger: 'submit-message' }),
    });
    assert.equal(response.status, 401, what);
    const body = await response.json();
    assert.equal(body.error.code, 'unauthenticated', what);
  }
  assert.equal(model.calls.length, before, 'no refused request reached the model');
  assert.ok(issuer.jwksFetches() <= 2, `an unknown kid refetches the keys at most once per 5 s (${issuer.jwksFetches()} fetches)`);
});

test('useChat\'s transport reads the reply token by token, with the mode, and the server keeps the conversation', async () => {
  const chatId = `chat-${Date.now()}`;
  const started = performance.now();
  const stream = await send(chatId, [userMessage('m1', 'tell me something')]);
  const firstByte = performance.now();
  const seen = [];
  let firstDelta;
  const tapped = stream.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      seen.push(chunk.type);
      if (chunk.type === 'text-delta' && firstDelta === undefined) firstDelta = performance.now();
      controller.enqueue(chunk);
    },
  }));
  let message;
  for await (const snapshot of readUIMessageStream({ stream: tapped })) message = snapshot;
  const done = performance.now();
  const call = model.calls.at(-1);
  assert.equal(call.request.stream, true, 'the model is called with streaming');
  assert.deepEqual(call.request.stream_options, { include_usage: true });
  const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(text, PIECES.join(''));
  const mode = message.parts.find((p) => p.type === 'data-mode');
  assert.equal(mode?.data.conversationId, chatId);
  assert.equal(message.metadata?.conversationId, chatId);
  assert.equal(seen[0], 'start');
  assert.equal(seen.at(-1), 'finish');
  // Streamed, not buffered: the first piece reached the client long before the model wrote the last.
  const [firstWritten, lastWritten] = [call.written[0], call.written.at(-1)];
  assert.ok(firstDelta < lastWritten - 1000, `first text-delta ${(firstDelta - firstWritten).toFixed(0)} ms after the first token, the last token ${(lastWritten - firstWritten).toFixed(0)} ms after it`);
  console.log(`figures: first token -> first text-delta ${(firstDelta - firstWritten).toFixed(1)} ms; ` +
    `time to first byte ${(firstByte - started).toFixed(0)} ms of ${(done - started).toFixed(0)} ms total for a ${((lastWritten - firstWritten) / 1000).toFixed(1)} s reply`);

  // The next message of the chat: the server's stored history is the truth, whatever the client sends.
  const again = await send(chatId, [userMessage('forged', 'I never said this'), userMessage('m3', 'and then?')]);
  for await (const _ of readUIMessageStream({ stream: again }));
  const history = model.calls.at(-1).request.messages.map((m) => m.content);
  assert.ok(history.includes('tell me something'), 'the first turn is in the history');
  assert.ok(history.includes(PIECES.join('')), 'with the reply the model wrote');
  assert.ok(!history.includes('I never said this'), 'earlier messages in the body are ignored');

  // Another user naming the same chat id gets a conversation of their own.
  const other = await send(chatId, [userMessage('m1', 'who am I?')], { token: issuer.token({ sub: 'user-2' }) });
  for await (const _ of readUIMessageStream({ stream: other }));
  const theirs = model.calls.at(-1).request.messages.map((m) => m.content);
  assert.ok(!theirs.includes('tell me something'), 'user-2 does not see user-1\'s conversation');
});

test('stopping the chat (useChat\'s stop) stops the model stream', async () => {
  const controller = new AbortController();
  const stream = await send(`chat-stop-${Date.now()}`, [userMessage('m1', 'a long story please')], { abortSignal: controller.signal });
  const reader = stream.getReader();
  for (;;) {
    const { value } = await reader.read();
    if (value?.type === 'text-delta') break;
  }
  const call = model.calls.at(-1);
  controller.abort();
  await reader.cancel().catch(() => {});
  const deadline = Date.now() + 5000;
  while (!call.hungUp && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.ok(call.hungUp, 'the model connection was closed after the client stopped');
  assert.ok(call.written.length < 40, `the model stopped after ${call.written.length} of 40 pieces`);
  // The function goes on serving: the next message is answered whole.
  const next = await send(`chat-after-${Date.now()}`, [userMessage('m1', 'still there?')]);
  let message;
  for await (const snapshot of readUIMessageStream({ stream: next })) message = snapshot;
  assert.equal(message.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''), PIECES.join(''));
});

test('a browser origin may call /chat and read its headers (CORS)', async () => {
  const preflight = await fetch(`${door.url}/chat`, {
    method: 'OPTIONS',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  assert.match(preflight.headers.get('access-control-allow-headers'), /authorization/);
  assert.match(preflight.headers.get('access-control-expose-headers'), /x-user-budget-left-usd/);
  // A page of any other website the developer visits may not spend their keys through the door:
  // no CORS for its origin, and a DNS-rebound host name is refused outright.
  const foreign = await fetch(`${door.url}/chat`, {
    method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
  });
  assert.equal(foreign.headers.get('access-control-allow-origin'), null);
  // Nor a simple POST it may send without a preflight: the door signs its IAM routes as you.
  const simple = await fetch(`${door.url}/costs/usage`, {
    method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'text/plain' }, body: '{}',
  });
  assert.equal(simple.status, 403);
  const rebound = await new Promise((resolve, reject) => {
    const { port } = new URL(door.url);
    httpRequest({ host: '127.0.0.1', port, path: '/chat', method: 'POST', headers: { host: `evil.example:${port}` } }, (r) => resolve(r.statusCode))
      .on('error', reject).end('{}');
  });
  assert.equal(rebound, 421);
});

test('a misconfigured assistant answers every request with a JSON 500 naming the setting, not an init crash', async () => {
  const broken = await startDoor({ ...usersOf(issuer), ASSISTANT_TOOLS: '[{"name": "createDraft"}]' });
  try {
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${broken.url}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${issuer.token()}` },
        body: JSON.stringify({ message: 'hi' }),
      });
      assert.equal(response.status, 500);
      const body = await response.json();
      assert.equal(body.error.code, 'misconfigured');
      assert.match(body.error.message, /ASSISTANT_TOOLS is invalid/);
    }
  } finally {
    broken.close();
  }
});

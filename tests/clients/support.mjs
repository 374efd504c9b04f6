// What the client tests run against, all on 127.0.0.1: a test OpenID issuer that signs users'
// tokens, a fake OpenAI-compatible model that streams slowly, and `cargo xtask serve` (the real
// assistant binary under the local Runtime API) pointed at both.
import { spawn } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const b64url = (data) => Buffer.from(data).toString('base64url');

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
}

/** A test OpenID issuer: discovery and JWKS, and `token(claims, {key, kid})` signing RS256. */
export async function startIssuer() {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'test-key-1';
  const jwk = { ...keys.publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  let url;
  let jwksFetches = 0;
  const server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks.json` }));
    } else if (req.url === '/jwks.json') {
      jwksFetches += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  url = await listen(server);
  const token = (claims = {}, { forged = false, header = {} } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const body = { iss: url, aud: 'web-app', sub: 'user-1', iat: now, exp: now + 600, ...claims };
    const head = { alg: 'RS256', typ: 'JWT', kid, ...header };
    const signing = `${b64url(JSON.stringify(head))}.${b64url(JSON.stringify(body))}`;
    const signature = sign('sha256', Buffer.from(signing), (forged ? forger : keys).privateKey);
    return `${signing}.${b64url(signature)}`;
  };
  return { url, token, jwksFetches: () => jwksFetches, close: () => server.close() };
}

/** The request fields of OpenAI's chat completions this bundle may send; any other is refused
 * with OpenAI's own 400 (`Unrecognized request argument supplied`). */
const KNOWN = new Set(['model', 'messages', 'temperature', 'max_tokens', 'tools', 'response_format', 'stream', 'stream_options', 'tool_choice']);

/** A fake OpenAI-compatible model (`POST /chat/completions`): a reply's pieces streamed
 * `delayMs` apart as `chat.completion.chunk`s, then usage and `[DONE]`. `script(request)` gives
 * `{pieces, delayMs}`, or for a request that does not stream `{message, delayMs}`: that assistant
 * message (tool calls or text) as one `chat.completion` after `delayMs`. Every request is kept,
 * with when each piece was written and whether the client hung up before the end. */
export async function startModel(script) {
  const calls = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', async () => {
      const request = JSON.parse(raw);
      const unknown = Object.keys(request).filter((k) => !KNOWN.has(k));
      if (req.url !== '/chat/completions' || req.headers.authorization !== 'Bearer test-llm-key' || unknown.length) {
        res.statusCode = unknown.length ? 400 : 401;
        res.end(JSON.stringify({ error: { message: `Unrecognized request argument supplied: ${unknown.join(', ')}`, type: 'invalid_request_error' } }));
        return;
      }
      const call = { request, written: [], hungUp: false, finished: false };
      calls.push(call);
      const { pieces = [], delayMs, message } = script(request);
      const base = { id: `chatcmpl-${calls.length}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: request.model };
      if (!request.stream) {
        if (message) await new Promise((r) => setTimeout(r, delayMs ?? 0));
        const reply = message ?? { role: 'assistant', content: pieces.join('') };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: base.id, object: 'chat.completion', created: base.created, model: request.model,
          choices: [{ index: 0, message: reply, finish_reason: reply.tool_calls ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } }));
        call.finished = true;
        return;
      }
      res.on('close', () => { if (!call.finished) call.hungUp = true; });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (chunk) => res.write(`data: ${JSON.stringify({ ...base, ...chunk })}\n\n`);
      if (message?.tool_calls) {
        // Tool calls streamed as OpenAI does: each with its index, then the finish reason.
        const calls = message.tool_calls.map((c, index) => ({ index, ...c }));
        send({ choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: calls }, finish_reason: null }] });
        send({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
        send({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
        res.end('data: [DONE]\n\n');
        call.finished = true;
        return;
      }
      for (const [i, piece] of pieces.entries()) {
        if (i > 0) await new Promise((r) => setTimeout(r, delayMs));
        if (call.hungUp) return;
        send({ choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: piece } : { content: piece }, finish_reason: null }] });
        call.written.push(performance.now());
      }
      send({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      send({ choices: [], usage: { prompt_tokens: 10, completion_tokens: pieces.length, total_tokens: 10 + pieces.length } });
      res.end('data: [DONE]\n\n');
      call.finished = true;
    });
  });
  const url = await listen(server);
  return { url, calls, close: () => server.close() };
}

/** `cargo xtask serve` (the built binary, `XTASK_BIN`, else the target dir's) with `env` added;
 * resolves with its URL once it serves. The sample activities are indexed only when `env` asks
 * (`SAMPLE_ACTIVITIES: '1'`): the other tests need no activities. */
export async function startDoor(env) {
  const target = process.env.CARGO_TARGET_DIR ?? join(process.cwd(), '..', '..', 'target');
  const bin = process.env.XTASK_BIN ?? join(target, 'debug', 'xtask');
  const dataDir = mkdtempSync(join(tmpdir(), 'door-'));
  const child = spawn(bin, ['serve'], {
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, RUST_LOG: 'warn', SAMPLE_ACTIVITIES: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${bin} serve printed no URL in 600 s`)), 600_000);
    child.on('exit', (code) => reject(new Error(`${bin} serve exited with ${code} (is it built? cargo build -p xtask)`)));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const found = out.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
  });
  return { url, dataDir, close: () => child.kill() };
}

/** The door's settings for `issuer`'s users (audience `web-app`). */
export const usersOf = (issuer) => ({ JWT_ISSUER: issuer.url, JWT_AUDIENCE: 'web-app' });

/** A test issuer, a fake model answering by `script` (as `startModel`) and the door pointed at
 * both, with `env` added; `close` stops all three. */
export async function startBundle(script, env = {}) {
  const issuer = await startIssuer();
  const model = await startModel(script);
  const door = await startDoor({
    ...usersOf(issuer),
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'test-llm-key',
    LLM_MODEL: 'deepseek/deepseek-chat',
    ...env,
  });
  return { issuer, model, door, close: () => { door.close(); model.close(); issuer.close(); } };
}

/** A proxy in front of `target` that cuts the first timeline stream through it (the client sees
 * its connection drop, as on a phone losing signal) once `cutAfter` events went by, and with
 * `refuseReconnect` answers the stream's next connection 503 itself. Each stream
 * connection is kept: its `Last-Event-ID` header, the event ids it carried and in how many
 * deliveries (a replay, then each event as the research stores it), and every request's method
 * and URL in order (`requests`). The Host header
 * is passed on, so the stream URLs the function gives name this proxy. */
export async function startCutter(target, { cutAfter, refuseReconnect = false }) {
  const streams = [];
  const requests = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const stream = /\/stream(\?|$)/.test(req.url) && req.method === 'GET';
    const conn = { lastEventId: req.headers['last-event-id'] ?? null, url: req.url, ids: [], deliveries: 0, status: null, cut: false };
    if (stream) streams.push(conn);
    const cutting = stream && streams.length === 1;
    if (stream && refuseReconnect && streams.length === 2) {
      // The browser's own reconnect is refused (a 503 from an overloaded door): EventSource
      // gives up (CLOSED) and the page must recover by itself.
      conn.status = 503;
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', 'access-control-allow-origin': '*' });
      res.end(JSON.stringify({ error: { code: 'unavailable', message: 'try again' } }));
      return;
    }
    const up = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      conn.status = answer.statusCode;
      res.writeHead(answer.statusCode, answer.headers);
      let text = '';
      let sent = 0;
      answer.on('data', (chunk) => {
        if (conn.cut) return;
        text += chunk;
        const before = conn.ids.length;
        let ids = [...text.matchAll(/^id: ?(\d+)$/gm)];
        let upTo = text.length;
        const cut = cutting && ids.length >= cutAfter;
        if (cut) {
          // Events may come many to a chunk: pass on exactly the first `cutAfter`, up to the
          // blank line that ends the last of them, and cut there.
          const end = text.indexOf('\n\n', ids[cutAfter - 1].index);
          upTo = end < 0 ? text.length : end + 2;
          ids = ids.slice(0, cutAfter);
          conn.cut = true;
        }
        conn.ids = ids.map((m) => Number(m[1]));
        if (conn.ids.length > before) conn.deliveries += 1;
        const part = text.slice(sent, upTo);
        sent = upTo;
        // Cut once what was written reached the client: it had every id counted here. The write's
        // callback only says the kernel took it; a close arriving with the last events in one read
        // can make the browser drop them (an incomplete chunked body), so the cut waits a moment.
        res.write(part, () => {
          if (!cut) return;
          setTimeout(() => {
            res.socket?.destroy();
            res.destroy();
            answer.destroy();
          }, 250);
        });
      });
      answer.on('end', () => res.end());
      answer.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const url = await listen(server);
  return { url, streams, requests, close: () => server.close() };
}

/** A fake app tool endpoint (`POST /ai/tools/<name>`, bearer `app-tool-secret`) as an app should
 * be: each `Idempotency-Key` is applied once. Keeps every request's key and body. */
export async function startAppTool() {
  const requests = [];
  const applied = new Set();
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      if (req.headers.authorization !== 'Bearer app-tool-secret') {
        res.statusCode = 401;
        res.end('{}');
        return;
      }
      const key = req.headers['idempotency-key'];
      requests.push({ url: req.url, key, body: JSON.parse(raw) });
      applied.add(key);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ cancelled: true }));
    });
  });
  const url = await listen(server);
  return { url, requests, applied, close: () => server.close() };
}

// Issue 52: a seed wish sent to `/chat` through `cargo xtask serve` with the AI SDK's own chat
// transport (what `useChat` runs). The door indexes the 240 sample activities; the fake model
// calls the tool it is offered (`explore_nearby`, with the user's words) and then writes from
// what the tool gave it. The wish has no "推荐/找": the router must take it for EXPLORE.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultChatTransport, readUIMessageStream } from 'ai';
import { startBundle } from './support.mjs';

// Qibao, Shanghai: two 白噪音读书局 sessions within the tool's default 10 km (one is full).
const QIBAO = { lat: 31.1615, lng: 121.3490 };
let bundle;

/** What a tool message tells the model: `{tool, data}`, the tool's output as data. */
const toolData = (content) => JSON.parse(content).data;

before(async () => {
  bundle = await startBundle((request) => {
    const last = request.messages.at(-1);
    if (last.role === 'tool') {
      const { activities = [] } = toolData(last.content);
      return { pieces: ['试试', activities.map((a) => `「${a.title}」`).join('、'), '。'], delayMs: 5 };
    }
    const offered = (request.tools ?? []).map((t) => t.function.name);
    if (!offered.includes('explore_nearby')) return { pieces: ['随便聊聊吧。'], delayMs: 5 };
    const call = {
      id: 'call_explore', type: 'function',
      function: { name: 'explore_nearby', arguments: JSON.stringify({ semanticQuery: last.content, limit: 5 }) },
    };
    return { message: { role: 'assistant', content: null, tool_calls: [call] } };
  }, { SAMPLE_ACTIVITIES: '1' });
});

after(() => bundle?.close());

test('a bare seed wish reaches EXPLORE, the tool recommends with reasons, and the model is given the same', async () => {
  const transport = new DefaultChatTransport({
    api: `${bundle.door.url}/chat`,
    headers: { Authorization: `Bearer ${bundle.issuer.token({ sub: 'user-wish' })}` },
    body: { location: QIBAO },
  });
  const stream = await transport.sendMessages({
    chatId: `wish-${Date.now()}`, trigger: 'submit-message', messageId: undefined,
    messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: '压力大想发呆' }] }],
  });
  let message;
  for await (const snapshot of readUIMessageStream({ stream })) message = snapshot;

  const mode = message.parts.find((p) => p.type === 'data-mode');
  assert.equal(mode?.data.mode, 'EXPLORE', JSON.stringify(mode));
  const tool = message.parts.find((p) => p.type === 'tool-explore_nearby' || p.toolName === 'explore_nearby');
  assert.ok(tool, `an explore_nearby part: ${JSON.stringify(message.parts.map((p) => p.type))}`);
  assert.equal(tool.state, 'output-available');
  const output = typeof tool.output === 'string' ? JSON.parse(tool.output) : tool.output;
  const titles = output.activities.map((a) => a.title);
  assert.ok(titles.length > 0 && titles.length <= 5, JSON.stringify(titles));
  assert.ok(output.activities.every((a) => typeof a.matchReason === 'string' && a.matchReason.length > 0), 'each with its match reason');
  assert.ok(titles.some((t) => t.startsWith('白噪音读书局')), `seed 004: 压力大想发呆 finds 白噪音读书局: ${titles}`);

  // The model was offered the tool in EXPLORE and given exactly what the client was shown.
  const offered = bundle.model.calls.find((c) => (c.request.tools ?? []).some((t) => t.function.name === 'explore_nearby'));
  assert.ok(offered, 'the model was offered explore_nearby');
  const given = bundle.model.calls.map((c) => c.request.messages.at(-1)).find((m) => m.role === 'tool');
  assert.ok(given, 'the model was given the tool\'s output');
  assert.deepEqual(toolData(given.content).activities.map((a) => a.title), titles);
  const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  for (const title of titles) assert.ok(text.includes(title), `the reply names ${title}`);
});

// Issue 41: an app tool with side effects (`"approval": true`) through `cargo xtask serve` with
// the AI SDK's own chat (`AbstractChat`, what `useChat` wraps): the model's call arrives as a
// `tool-approval-request`, `addToolApprovalResponse` answers it and `sendAutomaticallyWhen:
// lastAssistantMessageIsCompleteWithApprovalResponses` sends the answer, as an app does. Each
// AI SDK major the docs claim runs it: `ai` 7 and 6 (5 has no approvals).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as ai7 from 'ai';
import * as ai6 from 'ai6';
import { startAppTool, startBundle } from './support.mjs';

let bundle;
let app;

before(async () => {
  app = await startAppTool();
  const tools = [{
    name: 'cancelActivity', description: 'Cancel one of the user\'s activities.',
    parameters: { type: 'object', properties: { activityId: { type: 'string' } }, required: ['activityId'] },
    url: `${app.url}/ai/tools/cancel`, modes: ['MANAGE'], auth: 'bearer', secretEnv: 'APP_TOOL_TOKEN', approval: true,
  }];
  bundle = await startBundle((request) => {
    const last = request.messages.at(-1);
    if (last.role === 'tool') {
      return { pieces: [last.content.includes('declined') ? 'Nothing ' : 'Cancelled ', 'as you said.'], delayMs: 10 };
    }
    const call = { id: 'call_1', type: 'function', function: { name: 'cancelActivity', arguments: '{"activityId":"a-1","userId":"someone-else"}' } };
    return { message: { role: 'assistant', content: null, tool_calls: [call] } };
  }, { ASSISTANT_TOOLS: JSON.stringify(tools), APP_TOOL_TOKEN: 'app-tool-secret' });
});

after(() => { bundle?.close(); app?.close(); });

/** The chat state `useChat` keeps, without React. */
class State {
  constructor() { this.messages = []; this.status = 'ready'; this.error = undefined; }
  pushMessage(m) { this.messages = [...this.messages, m]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(thing) { return structuredClone(thing); }
}


async function until(what, ok, ms = 60_000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A chat of `sub` in MANAGE mode with `ai`'s own chat, answering approvals as an app does. */
function chatOf(ai, sub) {
  class TestChat extends ai.AbstractChat {
    constructor(options) { super({ ...options, state: new State() }); }
  }
  const token = bundle.issuer.token({ sub });
  const transport = new ai.DefaultChatTransport({
    api: `${bundle.door.url}/chat`, headers: { Authorization: `Bearer ${token}` }, body: { mode: 'MANAGE' },
  });
  const chat = new TestChat({
    id: `approvals-${sub}-${Date.now()}`, transport, sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  return { chat, token };
}

const cancelPart = (chat) => chat.messages.at(-1)?.parts.find((p) => p.type === 'tool-cancelActivity');

for (const [major, ai] of [['7', ai7], ['6', ai6]]) {
  test(`ai ${major}: a cancel the model calls waits for the user's approval, with its expiry, runs once when approved, and its replay is refused`, async () => {
    const { chat, token } = chatOf(ai, `user-1-ai${major}`);
    const ranBefore = app.requests.length;
    await chat.sendMessage({ text: 'cancel my Saturday frisbee' });
    await until('the reply', () => chat.status === 'ready' && cancelPart(chat));
    const asked = cancelPart(chat);
    assert.equal(asked.state, 'approval-requested', JSON.stringify(chat.messages.at(-1).parts));
    assert.deepEqual(asked.input, { activityId: 'a-1' }, 'shown exactly as it will be sent: the user is not the model\'s to name');
    assert.equal(app.requests.length, ranBefore, 'nothing ran on the model\'s word');
    // Its expiry, in the data-approval part with the approval's id (the approval chunk has no field for it).
    const expiry = chat.messages.at(-1).parts.find((p) => p.type === 'data-approval' && p.id === asked.approval.id);
    assert.ok(expiry, JSON.stringify(chat.messages.at(-1).parts));
    const left = Date.parse(expiry.data.expiresAt) - Date.now();
    assert.ok(left > 14 * 60_000 && left <= 15 * 60_000, `expires in 15 minutes: ${expiry.data.expiresAt}`);
    assert.equal(expiry.data.toolCallId, asked.toolCallId);

    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
    await until('the approved call', () => chat.status === 'ready' && cancelPart(chat)?.state === 'output-available');
    assert.deepEqual(cancelPart(chat).output, { cancelled: true });
    assert.equal(app.requests.length, ranBefore + 1);
    const ran = app.requests.at(-1);
    assert.equal(ran.key, `approval-${asked.approval.id}`);
    assert.deepEqual(ran.body.arguments, { activityId: 'a-1' });
    assert.equal(ran.body.userId, `user-1-ai${major}`);
    const text = chat.messages.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    assert.match(text, /Cancelled as you said/);

    // The same answer again (a client that retries), and the answer sent as another user: refused.
    const answered = (toolCallId) => ({
      id: chat.id, trigger: 'submit-message', messageId: 'm-2',
      messages: [{ id: 'm-2', role: 'assistant', parts: [{
        type: 'tool-cancelActivity', toolCallId, state: 'approval-responded', input: asked.input,
        approval: { id: asked.approval.id, approved: true },
      }] }],
    });
    const other = bundle.issuer.token({ sub: `user-2-ai${major}` });
    for (const [who, bearer, callId, status, code] of [
      ['replay', token, asked.toolCallId, 409, 'approval_used'],
      ['another user', other, asked.toolCallId, 404, 'not_found'],
      ['another card', token, 'call-forged-0', 409, 'approval_mismatch'],
    ]) {
      const response = await fetch(`${bundle.door.url}/chat`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` }, body: JSON.stringify(answered(callId)),
      });
      assert.equal(response.status, status, who);
      assert.equal((await response.json()).error.code, code, who);
    }
    assert.equal(app.requests.length, ranBefore + 1, 'one cancel in all');
  });

  test(`ai ${major}: a declined call does not run and the model is told`, async () => {
    const { chat } = chatOf(ai, `user-3-ai${major}`);
    const before = app.requests.length;
    await chat.sendMessage({ text: 'cancel my Saturday frisbee' });
    await until('the reply', () => chat.status === 'ready' && cancelPart(chat));
    await chat.addToolApprovalResponse({ id: cancelPart(chat).approval.id, approved: false });
    await until('the declined call', () => chat.status === 'ready' && cancelPart(chat)?.state === 'output-denied');
    const text = chat.messages.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    assert.match(text, /Nothing as you said/);
    assert.equal(app.requests.length, before);
  });
}

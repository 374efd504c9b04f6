import { useEffect, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { loadHistory } from './history.js';
import { SHANGHAI } from './Search.jsx';

const MODES = ['', 'CHAT', 'EXPLORE', 'CREATE', 'PARTNER', 'MANAGE'];

/** The conversation `conversationId` of the signed-in user: its history first, then useChat. */
export function Chat({ chatUrl, token, conversationId, onNewConversation }) {
  const [history, setHistory] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setHistory(null);
    loadHistory(chatUrl, conversationId, token).then(setHistory, (e) => setError(e.message));
  }, [chatUrl, conversationId, token]);
  return (
    <section>
      <h2>Assistant <button className="secondary" onClick={onNewConversation}>new conversation</button></h2>
      <p className="muted">conversation {conversationId} · useChat from @ai-sdk/react, history reloaded from GET /chat/{'{id}'}</p>
      {error && <p className="error">{error}</p>}
      {history && <Conversation chatUrl={chatUrl} token={token} id={conversationId} history={history} />}
      {!history && !error && <p className="muted">loading the conversation…</p>}
    </section>
  );
}

function Conversation({ chatUrl, token, id, history }) {
  const [mode, setMode] = useState('');
  const [text, setText] = useState('');
  const [share, setShare] = useState(true);
  const sharing = useRef(share);
  sharing.current = share;
  // #region use-chat
  const transport = useMemo(() => new DefaultChatTransport({
    api: chatUrl, // the stack's AssistantUrl + 'chat'; locally http://127.0.0.1:8787/chat
    headers: () => ({ Authorization: `Bearer ${token}` }), // read again on every request
    // Optional: where the user is, for what is nearby. Absent: the last one sent or the one
    // they saved; null: none (the assistant asks).
    body: () => ({ location: sharing.current ? SHANGHAI : null }),
  }), [chatUrl, token]);
  const { messages, sendMessage, addToolApprovalResponse, status, error, stop } = useChat({
    id, // the conversation: the server keeps its turns under this id
    messages: history, // from loadHistory(): the conversation as it was before the reload
    transport,
    // An approval answered on its card goes back to the server at once.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  // #endregion
  const busy = status === 'submitted' || status === 'streaming';
  const list = useRef(null);
  useEffect(() => { list.current?.scrollTo(0, list.current.scrollHeight); }, [messages]);
  const send = (e) => {
    e.preventDefault();
    if (!text.trim() || busy) return;
    // Optional, per message: a mode (else the assistant picks one).
    sendMessage({ text }, { body: mode ? { mode } : {} });
    setText('');
  };
  return (
    <>
      <div className="messages" data-testid="messages" ref={list}>
        {messages.map((message) => (
          // Only the last message's approval may be answered: the answer goes back with it.
          <Message key={message.id} message={message} answer={message === messages.at(-1) ? addToolApprovalResponse : null} />
        ))}
        {error && <p className="error">{error.message}</p>}
      </div>
      <form onSubmit={send}>
        <select value={mode} onChange={(e) => setMode(e.target.value)} title="mode">
          {MODES.map((m) => <option key={m} value={m}>{m || 'auto mode'}</option>)}
        </select>
        <label className="muted" title="send the location with each message">
          <input type="checkbox" checked={share} onChange={(e) => setShare(e.target.checked)} data-testid="share-location" /> location
        </label>
        <input value={text} onChange={(e) => setText(e.target.value)} placeholder="周末有什么轻松的活动？ / cancel my Saturday activity" />
        {busy ? <button type="button" onClick={stop}>stop</button> : <button type="submit">send</button>}
      </form>
    </>
  );
}

function Message({ message, answer }) {
  const meta = message.metadata ?? {};
  return (
    <div className={`message ${message.role}`} data-role={message.role}>
      {message.parts.map((part, i) => <Part key={i} part={part} message={message} answer={answer} />)}
      {meta.mock && <span className="badge mock">labelled mock model: no LLM_API_KEY</span>}
    </div>
  );
}

function Part({ part, message, answer }) {
  if (part.type === 'text') return <p>{part.text}</p>;
  if (part.type === 'data-mode') {
    return <p><span className="badge" data-testid="mode">mode {part.data.mode}</span>{part.data.by && <span className="muted">chosen by {part.data.by}</span>}</p>;
  }
  if (part.type === 'source-url') return <p className="muted">source: <a href={part.url} target="_blank" rel="noreferrer">{part.title || part.url}</a></p>;
  if (part.type.startsWith('tool-')) {
    if (part.state === 'approval-requested') return <ApprovalCard part={part} message={message} answer={answer} />;
    if (part.state === 'output-available' && part.output?.error === 'location_unknown') {
      // Nothing was searched: the tool needs to know where the user is.
      return <p className="tool" data-testid="needs-location">tool <b>{part.type.slice(5)}</b> · needs a location: say where you are, or tick "location"</p>;
    }
    return (
      <div className="tool" data-testid="tool">
        tool <b>{part.type.slice(5)}</b> · {part.state}
        <pre>{JSON.stringify(part.input)}</pre>
        {part.state === 'output-available' && <pre>{JSON.stringify(part.output).slice(0, 300)}</pre>}
      </div>
    );
  }
  return null;
}

// #region approval-card
/** A call waiting for the user: what will run, until when, and the two answers. The expiry comes
 * in the `data-approval` part with the approval's id (the approval chunk has no field for it). */
function ApprovalCard({ part, message, answer }) {
  const expiry = message.parts.find((p) => p.type === 'data-approval' && p.id === part.approval.id);
  const expiresAt = expiry ? new Date(expiry.data.expiresAt) : null;
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const expired = expiresAt !== null && expiresAt.getTime() <= now;
  const closed = expired || !answer; // a newer message went out meanwhile: ask again
  return (
    <div className="approval" data-testid="approval">
      <b>{part.type.slice('tool-'.length)}</b> waits for your approval
      <pre>{JSON.stringify(part.input, null, 2)}</pre>
      <p className="muted">
        {closed ? 'no longer open: ask again' : `expires ${expiresAt ? expiresAt.toLocaleTimeString() : 'in 15 minutes'}`}
      </p>
      <button disabled={closed} onClick={() => answer({ id: part.approval.id, approved: true })}>approve</button>{' '}
      <button disabled={closed} className="secondary" onClick={() => answer({ id: part.approval.id, approved: false })}>decline</button>
    </div>
  );
}
// #endregion

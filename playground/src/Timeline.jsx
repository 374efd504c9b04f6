import { useEffect, useState } from 'react';
import { follow, startResearch, stopResearch } from './timeline.js';

/** A research timeline: start one, watch its events arrive; a reload follows it again. */
export function Timeline({ researchUrl, token }) {
  const [topic, setTopic] = useState('iPhone');
  const [id, setId] = useState(() => sessionStorage.getItem('playground-research'));
  const [events, setEvents] = useState([]);
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!id) return undefined;
    setEvents([]);
    setStatus('running');
    return follow(researchUrl, id, () => token, (e) => setEvents((all) => [...all, e]), (end) => {
      setStatus(end);
      if (/^\d+$/.test(end)) sessionStorage.removeItem('playground-research'); // not theirs, or gone
    });
  }, [researchUrl, id, token]);
  const start = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      const created = await startResearch(researchUrl, token, topic);
      sessionStorage.setItem('playground-research', created.session_id);
      setId(created.session_id);
    } catch (err) {
      setError(err.message);
    }
  };
  const nodes = new Map();
  for (const e of events) {
    if (e.event === 'skeleton') for (const n of e.data.nodes ?? []) nodes.set(n.id, { ...n });
    if (e.event === 'node_detail' && nodes.has(e.data.id)) nodes.set(e.data.id, { ...nodes.get(e.data.id), ...e.data });
  }
  return (
    <section>
      <h2>Research timeline</h2>
      <p className="muted">POST /api/research, then its stream_url in an EventSource; a dropped or refused stream is reopened after the last event seen</p>
      <form onSubmit={start}>
        <input value={topic} onChange={(e) => setTopic(e.target.value)} />
        <button type="submit" disabled={status === 'running'}>research</button>
        {status === 'running' && <button type="button" className="secondary" onClick={() => stopResearch(researchUrl, token, id)}>stop</button>}
      </form>
      {error && <p className="error">{error}</p>}
      {id && <p className="muted">session {id} · <span data-testid="research-status">{status}</span> · {events.length} events, the last <span data-testid="research-last">{events.at(-1)?.id ?? 0}</span></p>}
      <ol className="events">
        {[...nodes.values()].map((n) => (
          <li key={n.id}><b>{n.date ?? n.time ?? ''} {n.title}</b> {n.summary ?? n.description ?? ''}</li>
        ))}
      </ol>
    </section>
  );
}

import { useState } from 'react';

/** Where the sample activities are. */
export const SHANGHAI = { lat: 31.2304, lng: 121.4737 };

/** Activity search: each result with why it matched and how far it is. */
export function Search({ apiUrl, token }) {
  const [query, setQuery] = useState('周末 轻松 户外');
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const search = async (e) => {
    e.preventDefault();
    setError(null);
    const response = await fetch(`${apiUrl}/rag/search`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ semanticQuery: query, limit: 5, filters: { location: { ...SHANGHAI, radiusInKm: 30 } } }),
    });
    const body = await response.json();
    if (!response.ok) setError(body.error?.message ?? `HTTP ${response.status}`);
    else setAnswer(body);
  };
  return (
    <section>
      <h2>Activity search</h2>
      <p className="muted">POST /rag/search over the 240 sample activities</p>
      <form onSubmit={search}>
        <input value={query} onChange={(e) => setQuery(e.target.value)} />
        <button type="submit">search</button>
      </form>
      {error && <p className="error">{error}</p>}
      {answer?.degraded && <p className="muted">ranked by words alone: {answer.degradedReason ?? 'the embedder is unavailable'}</p>}
      {answer?.results?.map((r) => (
        <div className="result" key={r.activity?.id ?? r.id} data-testid="result">
          <b>{r.activity?.title ?? r.title}</b>{' '}
          <span className="muted">{r.distanceKm != null ? `${r.distanceKm.toFixed(1)} km · ` : ''}similarity {r.similarity?.toFixed?.(2) ?? '–'}</span>
          <div className="reason" data-testid="reason">{r.matchReason}</div>
        </div>
      ))}
    </section>
  );
}

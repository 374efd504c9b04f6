// A research's timeline through the browser's EventSource, with the recovery docs/timeline.md
// describes: the browser resumes a dropped stream by itself (it sends Last-Event-ID); one it has
// given up on (readyState CLOSED: the link expired, a 401, or a 429, 400 or 503) is reopened with
// a fresh link from the session's status, after the last event already shown, waiting longer
// after each failure. A reload does the same from the session id kept by the page.

export const EVENTS = ['skeleton', 'node_start', 'node_detail', 'node_complete', 'progress', 'complete', 'error', 'cancelled'];
export const ENDINGS = ['complete', 'error', 'cancelled'];

// #region follow
/** Follows research `id` to its end: `onEvent({id, event, data})` once per event, in order, then
 * `onEnd(status)` once: `complete`, `error`, `cancelled`, or why it cannot be followed (`401`,
 * `403`, `404`: signed out, not theirs, gone). `getToken()` gives the user's token as it is
 * now. Returns a function that stops following. */
export function follow(researchUrl, id, getToken, onEvent, onEnd) {
  let lastId = 0;
  let source = null;
  let stopped = false;
  let failures = 0;
  const finish = (status) => {
    stopped = true;
    source?.close();
    onEnd(status);
  };
  const seen = (e) => {
    if (stopped || !(Number(e.id) > lastId)) return; // already shown (a replay after a reopen)
    lastId = Number(e.id);
    onEvent(e);
    if (ENDINGS.includes(e.event)) finish(e.event);
  };
  const backoff = (retryAfter) => Math.min(30_000, Math.max(1000 * 2 ** failures++, 1000 * (Number(retryAfter) || 0)));
  const open = (streamUrl) => {
    source = new EventSource(lastId > 0 ? `${streamUrl}&lastEventId=${lastId}` : streamUrl);
    for (const name of EVENTS) {
      source.addEventListener(name, (e) => {
        if (e.data === undefined) return; // the connection's own error, not the research's event
        failures = 0;
        seen({ id: e.lastEventId, event: e.type, data: JSON.parse(e.data) });
      });
    }
    source.onerror = () => {
      // CONNECTING: the browser resumes by itself. CLOSED: it gave up; the page takes over.
      if (source.readyState === EventSource.CLOSED && !stopped) reopen(backoff());
    };
  };
  // The session's status has every event so far and a fresh link: show what was missed, then
  // open the stream after it. Only a network failure, a 429 or a 5xx is tried again.
  const reopen = async (wait) => {
    source?.close();
    await new Promise((r) => setTimeout(r, wait));
    if (stopped) return;
    let response;
    try {
      response = await fetch(`${researchUrl}/api/research/${id}`, {
        headers: { Authorization: `Bearer ${await getToken()}` },
      });
    } catch {
      return reopen(backoff());
    }
    if (response.status === 429 || response.status >= 500) return reopen(backoff(response.headers.get('Retry-After')));
    if (!response.ok) return finish(String(response.status));
    const status = await response.json();
    for (const e of status.events) seen(e);
    // Ended without its ending event (one that could not be stored is skipped): it is over.
    if (!stopped && ['complete', 'failed', 'cancelled'].includes(status.status)) finish(status.status);
    if (!stopped) open(status.stream_url);
  };
  reopen(0);
  return () => {
    stopped = true;
    source?.close();
  };
}
// #endregion

// #region start
/** Starts a research on `topic` for the signed-in user: `{session_id, stream_url, ...}`.
 * `researchUrl` is the stack's ResearchUrl without its trailing '/' (locally the door's). */
export async function startResearch(researchUrl, token, topic) {
  const response = await fetch(`${researchUrl}/api/research`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ topic }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error?.message ?? `HTTP ${response.status}`);
  return body;
}
// #endregion

// #region stop
/** Stops research `id`: its model and search calls end within about a second. */
export async function stopResearch(researchUrl, token, id) {
  await fetch(`${researchUrl}/api/research/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } });
}
// #endregion

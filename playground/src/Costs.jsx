import { useState } from 'react';

/** What this user spent today, from the cost report (on a laptop, you are its operator). */
export function Costs({ apiUrl, user }) {
  const [report, setReport] = useState(null);
  const [error, setError] = useState(null);
  const load = async () => {
    setError(null);
    const response = await fetch(`${apiUrl}/cost-report`);
    const body = await response.json();
    if (!response.ok) setError(body.error?.message ?? `HTTP ${response.status}`);
    else setReport(body);
  };
  const mine = report?.topSpenders?.users?.find((u) => u.user === user);
  return (
    <section>
      <h2>Costs <button className="secondary" onClick={load}>refresh</button></h2>
      <p className="muted">GET /cost-report (operators only when deployed; the local door calls it as you)</p>
      {error && <p className="error">{error}</p>}
      {report && (
        <>
          <p data-testid="my-spend">{user} spent ${(mine?.usd ?? 0).toFixed(4)} on {report.topSpenders?.day ?? 'today'}</p>
          <table>
            <thead><tr><th>agent</th><th>calls</th><th>cost USD</th></tr></thead>
            <tbody>
              {report.groups.map((g) => (
                <tr key={g.key}><td>{g.title}</td><td>{g.calls}</td><td>{g.totalUsd.toFixed(4)}</td></tr>
              ))}
            </tbody>
          </table>
          <p className="muted">total ${report.totals.costUsd.toFixed(4)} in {report.totals.calls} calls · the cache saved ${report.cache.savedUsd.toFixed(4)}</p>
        </>
      )}
    </section>
  );
}

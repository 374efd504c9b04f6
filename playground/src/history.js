// #region history
/** The conversation's newest turns as `useChat`'s `messages` (after a page reload); `[]` for a
 * conversation the server has never seen (a new one, or one expired). */
export async function loadHistory(chatUrl, conversationId, token) {
  const response = await fetch(`${chatUrl}/${encodeURIComponent(conversationId)}?limit=20`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`history: HTTP ${response.status}`);
  return (await response.json()).messages;
}
// #endregion

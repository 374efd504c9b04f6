// Signing in. `cargo xtask serve` runs a local OpenID issuer at `/issuer` (discovery, JWKS, and a
// token endpoint that signs any name: local only). A deployed front end gets its token from its
// identity provider (Cognito, Auth0, ...) instead; everything after that is the same.

// #region sign-in
/** A token for `name` from the local issuer: `{token, expiresAt}`. */
export async function signIn(issuer, name) {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ sub: name }),
  });
  if (!response.ok) throw new Error(`sign-in: HTTP ${response.status}`);
  return response.json();
}
// #endregion

/** The signed-in user of this tab (kept across a reload), or null when absent or expired. */
export function storedUser() {
  try {
    const user = JSON.parse(sessionStorage.getItem('playground-user'));
    return user && Date.parse(user.expiresAt) > Date.now() + 60_000 ? user : null;
  } catch {
    return null;
  }
}

export function storeUser(user) {
  if (user) sessionStorage.setItem('playground-user', JSON.stringify(user));
  else sessionStorage.removeItem('playground-user');
}

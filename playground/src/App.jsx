import { useState } from 'react';
import { signIn, storedUser, storeUser } from './auth.js';
import { Chat } from './chat.jsx';
import { Timeline } from './Timeline.jsx';
import { Search } from './Search.jsx';
import { Costs } from './Costs.jsx';

// Everything is on the local door's origin: the chat, the timeline and the HTTP API's routes.
const door = window.location.origin;
const newConversation = () => `play-${crypto.randomUUID().slice(0, 8)}`;

export function App() {
  const [user, setUser] = useState(storedUser);
  const [name, setName] = useState('alice');
  const [error, setError] = useState(null);
  const [conversation, setConversation] = useState(() => sessionStorage.getItem('playground-chat') ?? newConversation());
  sessionStorage.setItem('playground-chat', conversation);
  const enter = async (e) => {
    e.preventDefault();
    try {
      const signed = { name, ...(await signIn(`${door}/issuer`, name)) };
      storeUser(signed);
      setUser(signed);
    } catch (err) {
      setError(err.message);
    }
  };
  const signOut = () => {
    // What this tab followed was this user's.
    for (const key of ['playground-research', 'playground-chat']) sessionStorage.removeItem(key);
    storeUser(null);
    setUser(null);
    setConversation(newConversation());
  };
  if (!user) {
    return (
      <>
        <header><h1>research-bundle playground</h1></header>
        <main>
          <section>
            <h2>Sign in</h2>
            <p className="muted">as any name, with the local OpenID issuer of <code>cargo xtask serve</code></p>
            <form onSubmit={enter}>
              <input value={name} onChange={(e) => setName(e.target.value)} />
              <button type="submit">sign in</button>
            </form>
            {error && <p className="error">{error}</p>}
          </section>
        </main>
      </>
    );
  }
  return (
    <>
      <header>
        <h1>research-bundle playground</h1>
        <span className="who">signed in as <b>{user.name}</b> <button className="secondary" onClick={signOut}>sign out</button></span>
      </header>
      <main>
        <Chat key={conversation} chatUrl={`${door}/chat`} token={user.token} conversationId={conversation}
          onNewConversation={() => setConversation(newConversation())} />
        <Timeline researchUrl={door} token={user.token} />
        <Search apiUrl={door} token={user.token} />
        <Costs apiUrl={door} user={user.name} />
      </main>
    </>
  );
}

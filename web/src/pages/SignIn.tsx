import { useId, useRef, useState, type FormEvent } from 'react';
import { describeError, request } from '../api/client';
import { documentText } from '../../../schema/documents/graphql.js';
import { ME } from '../api/operations';
import { usePageTitle } from '../hooks';
import { useSessionState } from '../session';

/**
 * Sign in through the organization's OpenID provider (when configured), or with a token (nifi, operator or
 * viewer), which is checked against the API before it is kept.
 */
export function SignIn() {
  const { signIn, notice, providerSignIn, devTokensFile } = useSessionState();
  usePageTitle('Sign in');
  const [token, setToken] = useState('');
  const [remember, setRemember] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  const tokenId = useId();
  const errorId = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = token.trim();
    if (!value) {
      setError('Enter your token.');
      field.current?.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await request({ token: value }, documentText(ME));
      signIn(value, remember);
    } catch (e) {
      setError(describeError(e));
      setBusy(false);
      field.current?.focus();
    }
  };

  return (
    <main id="main" className="signin">
      <h1>Load Control</h1>
      <form onSubmit={(e) => void submit(e)} noValidate aria-describedby={notice ? 'signin-notice' : undefined}>
        <h2>Sign in</h2>
        {notice && (
          <p id="signin-notice" className="notice" role="status">
            {notice}
          </p>
        )}
        {providerSignIn && (
          <p>
            <a className="button primary" href="/auth/login">
              Sign in with your organization's account
            </a>
          </p>
        )}
        <label htmlFor={tokenId}>Token</label>
        <input
          id={tokenId}
          ref={field}
          type="password"
          autoComplete="off"
          spellCheck={false}
          // biome-ignore lint/a11y/noAutofocus: the page's one field; signing in is all it is for
          autoFocus
          value={token}
          onChange={(e) => setToken(e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? errorId : undefined}
        />
        <label className="choice">
          <input type="checkbox" checked={remember} onChange={(e) => setRemember(e.target.checked)} /> Keep me signed in on this device
        </label>
        {error && (
          <p id={errorId} className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        {devTokensFile && (
          <p className="hint" data-testid="dev-tokens-hint">
            A development instance: <code>npm start</code> printed its tokens when it started, and keeps them in{' '}
            <code>{devTokensFile}</code> (<code>dev-operator</code> may act, <code>dev-viewer</code> may watch).
          </p>
        )}
        <p className="hint">
          Tokens are issued with <code>load-control token &lt;name&gt; &lt;roles…&gt;</code>. Viewers can watch; operators can act.
        </p>
      </form>
    </main>
  );
}

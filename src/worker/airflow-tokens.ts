// Airflow 3's API takes a JWT that expires ([api_auth] jwt_expiration_time). For an origin whose gates.credentials
// entry has airflowToken, the dispatcher gets one from POST {notifyUrl}/auth/token with the user's name and password,
// keeps it in this process's memory only (never in the ledger or the logs), and gets a new one when Airflow answers 401.
// The endpoint is the auth manager's login route under /auth (the simple auth manager's POST /auth/token: a JSON
// LoginBody {username, password}, 201 with LoginResponse {access_token}).
import type { ReceiverClient } from './http-post.js';

export interface AirflowTokens {
  /** The token for tokenUrl: the one held, or (renew, or none yet) a new one. Rejects when Airflow gives none. */
  get(tokenUrl: string, user: { username: string; password: string }, renew: boolean): Promise<string>;
}

export function createAirflowTokens(client: ReceiverClient, timeoutMs: number): AirflowTokens {
  const tokens = new Map<string, Promise<string>>();

  async function fetchToken(tokenUrl: string, user: { username: string; password: string }): Promise<string> {
    const response = await client.post(tokenUrl, { 'Content-Type': 'application/json' }, JSON.stringify(user), timeoutMs);
    if (response.status < 200 || response.status >= 300) throw new Error(`Airflow token: ${tokenUrl} answered HTTP ${response.status}`);
    let token: unknown;
    try {
      token = (JSON.parse(response.text) as { access_token?: unknown }).access_token;
    } catch {
      token = undefined;
    }
    if (typeof token !== 'string' || token === '') throw new Error(`Airflow token: ${tokenUrl} answered without an access_token`);
    return token;
  }

  return {
    get(tokenUrl, user, renew) {
      let token = renew ? undefined : tokens.get(tokenUrl);
      if (!token) {
        token = fetchToken(tokenUrl, user);
        tokens.set(tokenUrl, token);
        // a failed fetch is not kept: the next call asks again
        token.catch(() => {
          if (tokens.get(tokenUrl) === token) tokens.delete(tokenUrl);
        });
      }
      return token;
    },
  };
}

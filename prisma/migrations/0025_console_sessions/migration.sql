-- People's console sessions after an OpenID Connect sign-in, kept here so that every serve process knows them
-- and an operator can end one. The browser holds a random secret in an HttpOnly cookie; the row holds its
-- SHA-256 only. csrf_token is what every state-changing request with the cookie must send in X-CSRF-Token.
-- A new table: nothing existing is locked or rewritten.
CREATE TABLE nifi_ops.lc_console_session (
    session_id      uuid PRIMARY KEY,
    secret_sha256   bytea NOT NULL UNIQUE,
    csrf_token      text NOT NULL,
    issuer          varchar(500) NOT NULL,
    subject         varchar(500) NOT NULL,
    name            varchar(200) NOT NULL,
    roles           text[] NOT NULL,
    -- the provider's ID token, sent back as id_token_hint when the person signs out at the provider too
    id_token        text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at      timestamptz NOT NULL,
    ended_at        timestamptz,
    ended_by        varchar(200)
);

-- Who acted, beyond the name in `actor`: how the request was authenticated (TOKEN, JWT, SESSION) and, for a
-- provider's JWT or a console session, the provider's issuer and the subject's `sub` there. The request sets
-- them for its transaction (nifi_ops.acting_as, or set_config at its start) and every event row the transaction
-- writes takes them as its defaults, so no event-writing function changes. current_setting is stable, not
-- volatile: the columns are added without a rewrite, and the rows already there keep NULL (unknown).
ALTER TABLE nifi_ops.load_event
    ADD COLUMN actor_auth varchar(10) DEFAULT NULLIF(current_setting('load_control.actor_auth', true), ''),
    ADD COLUMN actor_issuer varchar(500) DEFAULT NULLIF(current_setting('load_control.actor_issuer', true), ''),
    ADD COLUMN actor_subject varchar(500) DEFAULT NULLIF(current_setting('load_control.actor_subject', true), '');

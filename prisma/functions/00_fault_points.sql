-- Fault points: test-only windows for race tests. A test sets load_control.fault_points on its database
-- (ALTER DATABASE … SET load_control.fault_points = 'count_run_successes=0.05,claim_partition=0.02'), so
-- every new session of every process — serve, work, the test's own — sleeps that many seconds at the named
-- point, inside its transaction and holding whatever it has locked there. The setting exists nowhere in
-- production, where a point costs one current_setting() lookup.
CREATE OR REPLACE FUNCTION nifi_ops.fault_point(p_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    points text := current_setting('load_control.fault_points', true);
    seconds text;
BEGIN
    IF points IS NULL OR points = '' THEN
        RETURN;
    END IF;
    seconds := substring(',' || points || ',' FROM ',' || p_name || '=([0-9.]+),');
    IF seconds IS NOT NULL THEN
        PERFORM pg_sleep(seconds::float8);
    END IF;
END
$$;

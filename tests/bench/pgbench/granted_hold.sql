-- One granted hold of hold-service, as pgbench replays it (make bench-granted, tests/bench/bench_granted.py): what
-- the service's connection runs for a hold of one seat asked alone, with no Idempotency-Key, one pgbench
-- transaction per hold.
--   1. sql/holds.sql take_seats, its own transaction (autocommit): the seat locked and decided, the seat UPDATE,
--      the booking INSERT (its cap trigger runs at COMMIT), the showtime's row read (FOR KEY SHARE) and the outbox
--      row, pending (append_seat_map_events, sql/schema.sql; its version, the NOTIFYs and the relay's wake-up come
--      after COMMIT, from a numberer: deferred work, as publishing is). TAKE_SEATS is replaced by that statement's
--      text at run time, so this file cannot drift from it. The service binds it as a prepared statement (asyncpg)
--      under plan_cache_mode=force_generic_plan (bootstrap.py PLANS); here each client PREPAREs it once and EXECUTEs it
--      (pgbench's prepared mode cannot send step 2), with PGOPTIONS setting the same plan mode.
--   2. the pool's reset when the connection goes back to the pool (db.released_in_background): asyncpg's reset
--      query, its statements in one message, one round trip. RESET_QUERY is replaced by the query the installed
--      asyncpg sends.
-- Variables: :sid the showtime, :pool its seats (numbered as bench_granted.seat_code numbers them), :cause and
-- :form SQL literals (the cause headers and repository.FORM); :prepared 0 at the start. A random seat of the
-- pool, so a few draws meet a seat taken already: the bench counts the granted holds in the database.
\set k random(0, :pool - 1)
\set a (:k / 1000) / 26
\set b (:k / 1000) % 26
\set num :k % 1000 + 1
\set customer random(1, 1000000000000)
\set h1 random(1, 9223372036854775806)
\set h2 random(1, 9223372036854775806)
\set b1 random(1, 9223372036854775806)
\set b2 random(1, 9223372036854775806)
\if :prepared = 0
PREPARE take_seats AS TAKE_SEATS;
\set prepared 1
\endif
EXECUTE take_seats(:sid, 600, 8, ARRAY[(lpad(to_hex(:h1), 16, '0') || lpad(to_hex(:h2), 16, '0'))::uuid],
                   ARRAY[:customer]::bigint[], ARRAY[(lpad(to_hex(:b1), 16, '0') || lpad(to_hex(:b2), 16, '0'))::uuid],
                   ARRAY[1], ARRAY[chr(65 + :a) || chr(65 + :b) || :num], ARRAY[:cause], :form, ARRAY['ADULT'],
                   0, false);
RESET_QUERY;

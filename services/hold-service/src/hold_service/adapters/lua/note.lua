-- A hold whose seats Postgres chose (best available) has them: its keys, so that the gate refuses clicks on
-- them. KEYS = seat:{showtimeId}:code of the hold's seats; ARGV[1] = the hold id, ARGV[2] = the TTL in ms.
-- Set over any other key, as fill.lua does: Postgres gave these seats to this hold, and a key another request
-- set a moment ago is one Postgres refuses (its release, checked by owner, leaves this key alone).
for _, key in ipairs(KEYS) do
  redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
end
return #KEYS

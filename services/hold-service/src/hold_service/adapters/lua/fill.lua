-- Refill a showtime's seat gate from what Postgres says, after Redis lost it (service_layer/gate_refill.py).
-- KEYS[1] = the gate's mark seatgate:{showtimeId}:loaded, then seat:{showtimeId}:code of every seat to set.
-- ARGV[1] = how long the mark (and a BOOKED seat's key) lasts, in ms; then per seat: its hold id and its
-- key's TTL in ms (0: booked, it lasts as the mark). Each key is set to the hold Postgres says has the seat,
-- over any other: a request that set its own key a moment ago is one Postgres refuses (the seat is taken),
-- and its release, checked by owner, leaves this key alone. Sets the mark last; returns the keys set.
for i = 2, #KEYS do
  local ttl = tonumber(ARGV[2 * i - 1])
  if ttl == 0 then ttl = tonumber(ARGV[1]) end
  redis.call('SET', KEYS[i], ARGV[2 * i - 2], 'PX', ttl)
end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return #KEYS - 1

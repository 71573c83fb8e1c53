-- Join a showtime's waiting room, or get back the ticket one already has there while it is live.
-- KEYS (every room script): wr:{showtimeId}: state, pre, queue, active, tickets, seen, pickup, admits.
-- ARGV[1] = customer, ARGV[2] = a new ticket's nonce, ARGV[3] = the opening time in ms (0: open).
-- Returns {ticket ("nonce:joined µs"), position (-1: before the opening, 0: admitted), sold out (0/1)}.
-- Places are first come, first served by the queue's own clock, strictly increasing (`seq`) so that two
-- joins in one microsecond keep their order. Before the opening joiners wait in `pre`, shuffled at it.
local state, pre, queue, active, tickets, seen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local c = ARGV[1]
local st = redis.call('HMGET', state, 'sold_out', 'opened', 'seq')
local sold_out = st[1] == '1' and 1 or 0
redis.call('ZADD', seen, now, c)
local current = redis.call('HGET', tickets, c)
if current then
  local rank = redis.call('ZRANK', queue, c)
  if rank then return {current, rank + 1, sold_out} end
  if redis.call('ZSCORE', pre, c) then return {current, -1, sold_out} end
  local slot = tonumber(redis.call('ZSCORE', active, c))
  if slot and slot > now then return {current, 0, sold_out} end
end
local joined = string.format('%d', math.max(now_us, (tonumber(st[3]) or 0) + 1))
local ticket = ARGV[2] .. ':' .. joined
redis.call('HSET', state, 'seq', joined)
redis.call('HSET', tickets, c, ticket)
local opens = tonumber(ARGV[3])
if st[2] ~= '1' and opens > 0 and now < opens then
  redis.call('ZADD', pre, joined, c)
  return {ticket, -1, sold_out}
end
redis.call('ZADD', queue, joined, c)
return {ticket, redis.call('ZRANK', queue, c) + 1, sold_out}

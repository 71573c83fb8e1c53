-- Give a flash use back, idempotently: only the call that finds the order held (P, S or R) gives it back.
-- KEYS as reserve.lua. ARGV[1] orderId, ARGV[2] mode:
-- '1' forget: undo a reservation whose VoucherReserved surely never left (the entry is deleted, so the
--     client's retry may reserve again). Only from P: once a retry sent the message again (S) or it was
--     acknowledged (R), a copy may be in Kafka, and forgetting would let the gate hand the use out twice.
-- '0' release: mark it released ('X') so that a retry of the old reserve cannot take a second use.
-- '2' retire: mark released WITHOUT giving the use back (the reconciliation's answer to a Redis-only entry
--     whose message was refused: the gate over-counted, so there is nothing to give back).
-- Returns 1 given back, 0 nothing done (already released, or a forget that is no longer safe), -1 unknown
-- order (e.g. Redis lost its data).
local prev = redis.call('HGET', KEYS[3], ARGV[1])
if not prev then return -1 end
local state, cust, rest = string.match(prev, '^(%a)|(%d+)|(.*)$')
if state ~= 'R' and state ~= 'P' and state ~= 'S' then return 0 end
if ARGV[2] == '1' then
  if state ~= 'P' then return 0 end
  redis.call('HDEL', KEYS[3], ARGV[1])
else
  redis.call('HSET', KEYS[3], ARGV[1], 'X|' .. cust .. '|' .. rest)
end
if ARGV[2] ~= '2' and redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCR', KEYS[1]) end
if redis.call('HINCRBY', KEYS[2], cust, -1) <= 0 then redis.call('HDEL', KEYS[2], cust) end
return 1

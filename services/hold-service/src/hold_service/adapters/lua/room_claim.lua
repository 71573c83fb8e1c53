-- A visitor's ticket (joined without signing in) claimed by the customer who signed in after his admission.
-- KEYS: as room_join.lua, then KEYS[9] = claims (hash: visitor -> the customer who claimed his place).
-- ARGV[1] = visitor, ARGV[2] = customer (0: only look), ARGV[3] = how long claims are kept, in ms.
-- Returns {'mine', the slot's end (0: over)} when this customer owns the place (he claimed it now or before),
-- {'taken', 0} when another customer did, {'none', 0} when nobody did and it cannot be claimed (yet): the
-- visitor's place is then read by room_poll.lua. Claiming moves the visitor's slot in `active` to the customer,
-- with the same end: the seat gate (try_hold.lua) and room_leave.lua then know it as the customer's.
local active, tickets, seen, pickup, claims = KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[9]
local v, c = ARGV[1], ARGV[2]
local owner = redis.call('HGET', claims, v)
if owner then
  if owner ~= c then return {'taken', 0} end
  return {'mine', tonumber(redis.call('ZSCORE', active, c)) or 0}
end
if c == '0' then return {'none', 0} end
local slot = tonumber(redis.call('ZSCORE', active, v))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not slot or slot <= now then return {'none', 0} end
redis.call('ZREM', active, v)
redis.call('ZREM', pickup, v)
redis.call('ZADD', active, slot, c)
redis.call('HDEL', tickets, v)
redis.call('ZREM', seen, v)
redis.call('HSET', claims, v, c)
redis.call('PEXPIRE', claims, tonumber(ARGV[3]))
return {'mine', slot}

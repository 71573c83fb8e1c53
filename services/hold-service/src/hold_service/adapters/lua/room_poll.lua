-- Where a ticket stands. Cheap on purpose (customers poll often): a handful of O(log n) commands.
-- KEYS: as room_join.lua. ARGV[1] = customer, ARGV[2] = his ticket ("nonce:joined µs"), ARGV[3] = joined µs,
-- ARGV[4] = the opening time in ms (0: open), ARGV[5] = how often the room steps, in ms.
-- Returns {what, value, sold out (0/1), admissions per minute, paused until (ms), now (ms), step due (0/1)}:
-- what = 'queued' (value = position), 'pre' (before the opening), 'admitted' (value = the slot's end),
-- 'restoring' (Redis lost the room and no step has rebuilt it yet), 'gone' (not his current ticket, or its
-- place ended: admitted and over, or dropped for not polling).
-- The room's clock for steps lives here too: the first poll after `step_at` takes the next step (`due`), so
-- the room moves exactly while someone waits in it, one step at a time across every API process.
local state, pre, queue, active, tickets, seen, pickup = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local c = ARGV[1]
local st = redis.call('HMGET', state, 'since', 'opened', 'seed', 'sold_out', 'rate', 'paused_until', 'step_at')
local since = tonumber(st[1])
local due = 0
if now >= (tonumber(st[7]) or 0) then
  redis.call('HSET', state, 'step_at', now + tonumber(ARGV[5]))
  due = 1
end

local function answer(what, value)
  return {what, value, st[4] == '1' and 1 or 0, st[5] or '0', tonumber(st[6]) or 0, now, due}
end

local current = redis.call('HGET', tickets, c)
if current ~= ARGV[2] then
  if current then return answer('gone', 0) end  -- he has another ticket now
  if not since then return answer('restoring', 0) end
  local joined = tonumber(ARGV[3])
  if math.floor(joined / 1000) >= since then return answer('gone', 0) end  -- its place ended
  -- Redis lost the queue after he joined (the room was rebuilt at `since`): his place back.
  redis.call('HSET', tickets, c, ARGV[2])
  local opens = tonumber(ARGV[4])
  if opens > 0 and math.floor(joined / 1000) < opens then
    if st[2] == '1' then
      local h = redis.sha1hex(st[3] .. ':' .. c)  -- the opening's shuffle, as room_step.lua placed him
      redis.call('ZADD', queue, tonumber(string.sub(h, 1, 13), 16) / 4503599627370496, c)
    else
      redis.call('ZADD', pre, ARGV[3], c)
    end
  else
    redis.call('ZADD', queue, ARGV[3], c)
  end
end
redis.call('ZADD', seen, now, c)
local slot = tonumber(redis.call('ZSCORE', active, c))
if slot and slot > now then
  redis.call('ZREM', pickup, c)  -- he came for his token: the slot is his until it ends
  return answer('admitted', slot)
end
local rank = redis.call('ZRANK', queue, c)
if rank then return answer('queued', rank + 1) end
if redis.call('ZSCORE', pre, c) then return answer('pre', 0) end
redis.call('HDEL', tickets, c)
redis.call('ZREM', seen, c)
return answer('gone', 0)

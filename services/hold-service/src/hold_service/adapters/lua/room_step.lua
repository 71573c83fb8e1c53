-- One admission step of a showtime's waiting room: the whole decision, atomically, so any number of API
-- processes can take steps (one normally does, see room_poll.lua) and the room never admits past its limit.
-- KEYS: as room_join.lua. ARGV: [1] active limit, [2] opening time ms (0: open), [3] lease ms (no slot may end
-- after it), [4] shuffle seed ('' if not fixed yet), [5] seats available, [6] seats held, [7] the customers
-- holding them (comma-separated), [8] slot length ms, [9] abandon ms, [10] most queue entries looked at,
-- [11] how long the room's keys outlive its last step (ms), [12] 1 if the room was set up in Redis before,
-- [13] 1 on a Redis Cluster.
-- Returns {'ok', admitted, dropped, queued, active, admissions per minute, sold out}, or {'need_seed'} /
-- {'need_lease'}: Postgres must fix the seed / extend the lease first, or {'opening'}: the opening is under
-- way; in each case the caller steps again.
local state, pre, queue, active, tickets, seen, pickup, admits =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, opens, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local available, held = tonumber(ARGV[5]), tonumber(ARGV[6])
local slot_ms, abandon = tonumber(ARGV[8]), tonumber(ARGV[9])

local st = redis.call('HMGET', state, 'since', 'opened', 'paused_until', 'filled_at', 'node')
-- On a Redis Cluster, another node than the one that took the last step may answer: the replica that took over
-- after it died, whose copy may lack the last admissions (replication is asynchronous). That counts as a loss.
local node = ARGV[13] == '1' and redis.call('CLUSTER', 'MYID') or false
if not st[1] or (node and st[5] ~= node) then
  -- The room's first step, or Redis lost it. Tokens handed out before may still be valid, up to the lease:
  -- nobody is admitted until then, so they and the newly admitted are never more than the limit together.
  -- After a loss, `since` tells the tickets from before (they get their places back) from ended ones.
  st[3] = lease > now and lease or 0
  if not st[1] then redis.call('HSET', state, 'since', ARGV[12] == '1' and now or 0) end
  redis.call('HSET', state, 'paused_until', st[3])
end
if node then redis.call('HSET', state, 'node', node) end
local sold_out = (available == 0 and held == 0) and 1 or 0
redis.call('HSET', state, 'limit', limit, 'available', available, 'held', held, 'sold_out', sold_out)

-- The opening: the pre-opening joiners go first, in the order of a hash of the seed and the customer, a
-- uniformly random order nobody knew before (the seed is drawn at the opening and fixed once in Postgres).
-- They are moved a chunk per script run, so Redis answers everyone else in between (the order does not
-- depend on the chunks); nobody is admitted before the last chunk is in.
local opened = st[2] == '1'
if not opened and (opens == 0 or now >= opens) then
  if ARGV[4] == '' then return {'need_seed'} end
  local chunk = redis.call('ZRANGE', pre, 0, tonumber(ARGV[10]) - 1)
  for _, c in ipairs(chunk) do
    local h = redis.sha1hex(ARGV[4] .. ':' .. c)
    redis.call('ZADD', queue, tonumber(string.sub(h, 1, 13), 16) / 4503599627370496, c)  -- in [0, 1)
  end
  if #chunk > 0 then redis.call('ZREMRANGEBYRANK', pre, 0, #chunk - 1) end
  if redis.call('ZCARD', pre) > 0 then return {'opening'} end
  redis.call('HSET', state, 'opened', 1, 'seed', ARGV[4], 'opened_at', now)
  opened = true
end

-- Slots end when their time passes, or when the admitted customer did not come for his token in time.
redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
local dropped = 0
for _, c in ipairs(redis.call('ZRANGEBYSCORE', pickup, '-inf', now - abandon)) do
  if redis.call('ZREM', active, c) == 1 then
    redis.call('HDEL', tickets, c)
    dropped = dropped + 1
  end
  redis.call('ZREM', pickup, c)
end

-- Admission, first in the queue first: up to the limit, and no more customers choosing than seats left to
-- choose from (admitted customers who hold seats are paying, not choosing). Queued customers who stopped
-- polling are dropped when their turn comes (never a slot).
local admitted = 0
if opened and sold_out == 0 and now >= (tonumber(st[3]) or 0) then
  local inside, paying = redis.call('ZCARD', active), 0
  for holder in string.gmatch(ARGV[7], '[^,]+') do
    if redis.call('ZSCORE', active, holder) then paying = paying + 1 end
  end
  local room = math.min(limit - inside, available - (inside - paying))
  if room > 0 and redis.call('ZCARD', queue) > 0 then
    local slot_end = now + slot_ms
    if slot_end > lease then return {'need_lease'} end
    local scanned = 0
    while admitted < room and scanned < tonumber(ARGV[10]) do
      local head = redis.call('ZRANGE', queue, 0, math.min(room - admitted, 500) - 1)
      if #head == 0 then break end
      for _, c in ipairs(head) do
        redis.call('ZREM', queue, c)
        local last_seen = tonumber(redis.call('ZSCORE', seen, c))
        if last_seen and last_seen >= now - abandon then
          redis.call('ZADD', active, slot_end, c)
          redis.call('ZADD', pickup, now, c)
          admitted = admitted + 1
        else
          redis.call('HDEL', tickets, c)
          dropped = dropped + 1
        end
        redis.call('ZREM', seen, c)
      end
      scanned = scanned + #head
    end
  end
end

-- The admission rate over the last minute, for estimated waits. The first fill of the room (everyone let
-- in at once at the opening) says nothing about how fast the queue moves, so it is not counted.
local filled_at = tonumber(st[4])
if admitted > 0 then
  if filled_at then
    redis.call('RPUSH', admits, string.format('%d:%d', now, admitted))
  else
    filled_at = now
    redis.call('HSET', state, 'filled_at', now)
  end
  redis.call('HINCRBY', state, 'admitted', admitted)
end
while true do
  local first = redis.call('LINDEX', admits, 0)
  if not first or tonumber(string.match(first, '^(%d+)')) >= now - 60000 then break end
  redis.call('LPOP', admits)
end
local sum = 0
for _, sample in ipairs(redis.call('LRANGE', admits, 0, -1)) do
  sum = sum + tonumber(string.match(sample, ':(%d+)$'))
end
local rate = '0'
if filled_at then
  rate = string.format('%.3f', sum * 60000 / math.max(5000, math.min(60000, now - filled_at)))
end

local queued = redis.call('ZCARD', queue) + redis.call('ZCARD', pre)
local in_room = redis.call('ZCARD', active)
redis.call('HSET', state, 'rate', rate, 'queued', queued, 'active', in_room, 'stepped_at', now)
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ARGV[11]) end
return {'ok', admitted, dropped, queued, in_room, rate, sold_out}

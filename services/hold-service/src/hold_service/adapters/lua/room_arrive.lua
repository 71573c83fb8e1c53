-- Customers arriving at a showtime, counted for its automatic waiting room (docs/waiting-room.md): how many
-- are new to it per minute, how many are active at it at once. An accelerator: losing these keys only delays
-- an opening by the time it takes to count again.
-- KEYS: wr:{showtimeId}: [1] present (zset: customer -> when last seen, ms), [2] arrivals (hash: 10 s bucket ->
-- customers new to the showtime in it). ARGV[1] = how long a customer counts as active after he was last seen
-- (ms; one who comes back later is new again), ARGV[2..] = the customers arriving now (none: only read).
-- Returns {new customers in the last minute, customers active now}.
local present, arrivals = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local bucket = math.floor(now / 10000)
local new = 0
for i = 2, #ARGV do
  local last = tonumber(redis.call('ZSCORE', present, ARGV[i]))
  if not last or last < now - window then new = new + 1 end
  redis.call('ZADD', present, now, ARGV[i])
end
if new > 0 then
  redis.call('HINCRBY', arrivals, bucket, new)
  redis.call('HDEL', arrivals, bucket - 7, bucket - 8)  -- buckets older than a minute (a bucket per 10 s)
  redis.call('ZREMRANGEBYSCORE', present, '-inf', now - window)
end
-- The last minute: the six buckets before this one, the current one by the part of it that has passed.
local counts = redis.call('HMGET', arrivals, bucket, bucket - 1, bucket - 2, bucket - 3, bucket - 4, bucket - 5,
                          bucket - 6)
local sum = 0
for i, n in ipairs(counts) do
  n = tonumber(n) or 0
  if i == 7 then n = n * (1 - (now % 10000) / 10000) end
  sum = sum + n
end
local active = redis.call('ZCOUNT', present, now - window, '+inf')
if #ARGV > 1 then
  redis.call('PEXPIRE', present, window + 60000)
  redis.call('PEXPIRE', arrivals, 120000)
end
return {math.floor(sum + 0.5), active}

-- A seat-map stream's lease, per client address (SEAT_MAP_MAX_STREAMS_PER_ADDRESS), across the API processes.
-- KEYS[1]: the address's leases, a sorted set: member = a stream, score = when its lease ends (ms, Redis' clock).
-- ARGV[1] = limit, ARGV[2] = lease ms, ARGV[3] = the stream. Lapsed leases (a process that died) are dropped
-- first. Returns 1 when leased, 0 when the address has its limit of streams.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1

-- The leases of an address's streams that are still open in this process, renewed (see stream_lease.lua).
-- KEYS[1]: the address's leases. ARGV[1] = lease ms, ARGV[2..] = the streams. A lease that lapsed meanwhile
-- (Redis restarted, or was unreachable for a lease) is taken again: the stream is open. Returns how many.
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], until_ms, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return #ARGV - 1

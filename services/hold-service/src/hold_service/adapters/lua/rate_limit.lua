-- Moving-window rate limit (the `limits` library's algorithm, with Redis' own clock), one round trip.
-- KEYS[1]: list of the admitted requests' times in ms, newest first. ARGV[1] = limit, ARGV[2] = window ms.
-- Returns 0 when admitted (and records it), else the ms until the oldest counted request leaves the window.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local oldest = redis.call('LINDEX', KEYS[1], limit - 1)
if oldest and tonumber(oldest) > now - window then
  return tonumber(oldest) + window - now
end
redis.call('LPUSH', KEYS[1], now)
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('PEXPIRE', KEYS[1], window)
return 0

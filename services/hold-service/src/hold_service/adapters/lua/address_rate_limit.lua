-- Per-address rate limit: a sliding-window counter (Cloudflare's), O(1) whatever the limit: this minute's
-- count plus last minute's weighted by how much of it still overlaps the last 60 s. An approximation (it
-- takes last minute's requests as evenly spread), exact for a burst within one minute.
-- KEYS[1]: hash {w = this window's number, c = its count, p = the previous window's count}.
-- ARGV[1] = limit, ARGV[2] = window ms. Returns 0 when admitted (and counts it), else the ms to wait.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local win = math.floor(now / window)
local h = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local w, c, p = tonumber(h[1]) or win, tonumber(h[2]) or 0, tonumber(h[3]) or 0
if w ~= win then
  p = (w == win - 1) and c or 0
  c = 0
end
local left = window - (now - win * window)  -- ms of this window still to come
if p * left / window + c + 1 > limit then
  if c + 1 > limit then  -- wait into the next window, until this one's weight is low enough
    return left + math.ceil(window * (1 - (limit - 1) / c))
  end
  return math.max(1, math.ceil(left - (limit - 1 - c) * window / p))
end
redis.call('HSET', KEYS[1], 'w', win, 'c', c + 1, 'p', p)
redis.call('PEXPIRE', KEYS[1], 2 * window)
return 0

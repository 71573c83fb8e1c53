-- Quotes per customer and minute (VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE): a fixed window, counted here.
-- KEYS[1]: the customer's count. ARGV[1] = limit, ARGV[2] = window ms.
-- Returns 0 when admitted (and counted), else the ms until the window ends.
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
end
if n > tonumber(ARGV[1]) then
  return math.max(1, redis.call('PTTL', KEYS[1]))
end
return 0

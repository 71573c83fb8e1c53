-- The broker acknowledged the order's VoucherReserved: P (pending) -> R. Until then a retry of the same
-- order must not be told 201 (the send may still fail and the use be forgotten).
-- KEYS as reserve.lua; ARGV[1] orderId. Returns 1 marked, 0 not pending (unknown, R or X).
local prev = redis.call('HGET', KEYS[3], ARGV[1])
if not prev or string.sub(prev, 1, 1) ~= 'P' then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], 'R' .. string.sub(prev, 2))
return 1

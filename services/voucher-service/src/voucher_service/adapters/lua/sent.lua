-- The broker acknowledged these orders' VoucherReserved: P (pending) -> R. Until then a retry of the same
-- order must not be told 201 (the send may still fail and the use be forgotten).
-- KEYS as reserve.lua; ARGV: orderIds (one or many: the acks of a Kafka batch arrive together).
-- Returns how many were marked (the others were unknown, R or X).
local marked = 0
for i = 1, #ARGV do
  local prev = redis.call('HGET', KEYS[3], ARGV[i])
  if prev and string.sub(prev, 1, 1) == 'P' then
    redis.call('HSET', KEYS[3], ARGV[i], 'R' .. string.sub(prev, 2))
    marked = marked + 1
  end
end
return marked

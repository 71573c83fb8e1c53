-- The broker acknowledged these orders' VoucherReserved: P or S (pending) -> R. Until then a retry of the same
-- order must not be told 201 (the message may never reach Kafka).
-- KEYS as reserve.lua; ARGV: orderIds (one or many: the acks of a Kafka batch arrive together).
-- Returns how many were marked (the others were unknown, R or X).
local marked = 0
for i = 1, #ARGV do
  local prev = redis.call('HGET', KEYS[3], ARGV[i])
  local state = prev and string.sub(prev, 1, 1)
  if state == 'P' or state == 'S' then
    redis.call('HSET', KEYS[3], ARGV[i], 'R' .. string.sub(prev, 2))
    marked = marked + 1
  end
end
return marked

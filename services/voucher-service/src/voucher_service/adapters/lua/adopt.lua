-- Warm-up and repair: make Redis know live uses that Postgres holds.
-- KEYS as reserve.lua. ARGV[1] mode: 'warm' sets remaining to ARGV[2] only if it is missing (SET NX
-- semantics: of concurrent warm-ups exactly one wins) and then records the pairs WITHOUT decrementing
-- (ARGV[2] already subtracted them); returns -5 if the key existed (someone else warmed; nothing done).
-- 'more' records further pairs of a warm-up without decrementing; 'adopt' records pairs unknown to
-- Redis AND decrements remaining for each (a use Postgres holds that the gate forgot).
-- ARGV[3] epoch seconds at which the keys expire ('warm' only; 0 = none). ARGV[4..] pairs orderId,
-- customerId. Returns the number of pairs recorded.
local mode = ARGV[1]
if mode == 'warm' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return -5 end
  redis.call('SET', KEYS[1], ARGV[2])
  if tonumber(ARGV[3]) > 0 then redis.call('EXPIREAT', KEYS[1], ARGV[3]) end
  if #KEYS == 4 then redis.call('SET', KEYS[4], redis.call('CLUSTER', 'MYID')) end  -- see reserve.lua
elseif redis.call('EXISTS', KEYS[1]) == 0 then
  return -3
end
local recorded = 0
for i = 4, #ARGV - 1, 2 do
  if redis.call('HEXISTS', KEYS[3], ARGV[i]) == 0 then
    redis.call('HSET', KEYS[3], ARGV[i], 'R|' .. ARGV[i + 1] .. '|0|0')
    redis.call('HINCRBY', KEYS[2], ARGV[i + 1], 1)
    if mode == 'adopt' then redis.call('DECR', KEYS[1]) end
    recorded = recorded + 1
  end
end
local ttl = redis.call('PTTL', KEYS[1])  -- the hashes (and the node's id) expire with the counter
if ttl > 0 then
  for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return recorded

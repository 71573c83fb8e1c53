-- Take one use of a flash voucher per request, atomically. All keys share the hash
-- tag {CODE}. One run takes the reservations of every request that arrived together, one after the other,
-- with the same answers as separate runs in that order.
-- KEYS[1] voucher:{CODE}:remaining  uses left
-- KEYS[2] voucher:{CODE}:users      hash customerId -> live uses
-- KEYS[3] voucher:{CODE}:orders     hash orderId -> "P|cust|amount|epoch" (reserved, Kafka send pending),
--                                   "S|..." (pending, and a retry is sending the VoucherReserved again),
--                                   "R|..." (reserved, VoucherReserved acknowledged) or "X|..." (released)
-- KEYS[4] voucher:{CODE}:node       on a Redis Cluster only: the id of the node that loaded the gate
-- ARGV[1] epochSeconds, then per request: customerId, perUserLimit, orderId, orderAmount
-- Returns one answer per request: 1 RESERVED, 0 DUPLICATE (a retry), 2 PENDING (a retry while no send is
--         acknowledged yet: the caller sends again, and the entry becomes S so that the first attempt can no
--         longer forget it), -1 OUT_OF_STOCK, -2 ALREADY_USED (quota), -3 NOT_LOADED, -4 ORDER_TAKEN
--         (released earlier, or another customer's order id)
local function reserve(customer, limit, order, amount, epoch)
  local prev = redis.call('HGET', KEYS[3], order)
  if prev then
    local state, cust, rest = string.match(prev, '^(%a)|(%d+)|(.*)$')
    if cust == customer and state == 'R' then return 0 end
    if cust == customer and (state == 'P' or state == 'S') then
      redis.call('HSET', KEYS[3], order, 'S|' .. cust .. '|' .. rest)
      return 2
    end
    return -4
  end
  if redis.call('EXISTS', KEYS[1]) == 0 then return -3 end
  local used = tonumber(redis.call('HGET', KEYS[2], customer) or '0')
  if used >= tonumber(limit) then return -2 end
  if tonumber(redis.call('GET', KEYS[1])) <= 0 then return -1 end
  redis.call('DECR', KEYS[1])
  redis.call('HINCRBY', KEYS[2], customer, 1)
  redis.call('HSET', KEYS[3], order, 'P|' .. customer .. '|' .. amount .. '|' .. epoch)
  return 1
end

-- On a Redis Cluster, a node other than the one that loaded the gate may answer: its replica took over after
-- it died, or the slot moved. Replication is asynchronous, so that copy may lack the last uses taken (told
-- 201, sent to Kafka): promising from it could oversell. The gate counts as lost, as after any loss of Redis
-- data: its counter goes, and the warm-up rebuilds it from Postgres once every use in flight has landed there.
if #KEYS == 4 and redis.call('GET', KEYS[4]) ~= redis.call('CLUSTER', 'MYID') then
  redis.call('DEL', KEYS[1])
end

local answers, reserved = {}, false
for i = 2, #ARGV, 4 do
  local answer = reserve(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[1])
  answers[#answers + 1] = answer
  reserved = reserved or answer == 1
end
-- The hashes live as long as the counter (its TTL is set at warm-up: the voucher's end plus a day).
if reserved then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[2], ttl)
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
end
return answers

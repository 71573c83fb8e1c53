-- Release the seat keys still owned by this hold id (ARGV[1]); a stale hold cannot free a seat
-- that another hold took after it. Returns how many keys were deleted.
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    n = n + redis.call('DEL', key)
  end
end
return n

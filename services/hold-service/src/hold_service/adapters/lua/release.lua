-- Release each seat key (KEYS[i]) still owned by its hold id (ARGV[i]; ARGV[1] for every key when only one
-- is given); a stale hold cannot free a seat that another hold took after it. Returns how many keys were
-- deleted.
local n = 0
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == (ARGV[i] or ARGV[1]) then
    n = n + redis.call('DEL', key)
  end
end
return n

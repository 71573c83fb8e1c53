-- A hold lasts longer (its extension at checkout): its seat keys with it, only those still its own (the
-- "extend" of a token-checked lock: another hold's key is never touched).
-- KEYS = seat:{showtimeId}:code of the hold's seats; ARGV[1] = the hold id, ARGV[2] = the new TTL in ms.
-- Returns how many keys now last that long.
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    n = n + redis.call('PEXPIRE', key, ARGV[2])
  end
end
return n

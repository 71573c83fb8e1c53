-- All-or-nothing seat gate for one or more hold requests on one showtime (those that arrived together),
-- taken one after the other: a later request sees the keys an earlier one set.
-- KEYS: seat:{showtimeId}:code of every request, request after request, then the gate's mark
-- seatgate:{showtimeId}:loaded and the showtime's waiting room keys wr:{showtimeId}:active and
-- wr:{showtimeId}:state (one hash slot per showtime).
-- ARGV[1] = TTL in ms, then per request: its number of seats (0 when the gate is off: only the slot is
-- checked), its hold id, its customer, and the end of his waiting-room slot as his admission token says (''
-- while the room is off).
-- A key set by the same hold id is not "taken": a retry of one hold (an Idempotency-Key) goes on to
-- Postgres, which answers it with the hold it already has.
-- Returns per request the indexes (1-based, within the request) of the seats already taken; an empty list
-- means every key of that request was set to its hold id; -1 means the customer's slot is over (his token
-- is stale: he paid, cancelled, or never came for it) and nothing was set. Then one more element: 1 when the
-- gate's mark is there, 0 when Redis lost it (the gate knows only the holds taken since: refill it).
local mark, active, state = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
local now, since, paused

-- The slot the token names is still the customer's. After Redis lost the room (`since` is when it was
-- rebuilt, `paused_until` the lease of the tokens issued before), those earlier tokens are honoured until
-- they lapse, since nobody new is admitted meanwhile; with the room's state gone entirely, too.
local function slot_live(customer, slot)
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local st = redis.call('HMGET', state, 'since', 'paused_until')
    since, paused = st[1], tonumber(st[2]) or 0
  end
  slot = tonumber(slot)
  if slot <= now then return false end
  if tonumber(redis.call('ZSCORE', active, customer)) == slot then return true end
  return not since or slot <= paused
end

local answers, k = {}, 0
for r = 2, #ARGV, 4 do
  local n, hold, customer, slot = tonumber(ARGV[r]), ARGV[r + 1], ARGV[r + 2], ARGV[r + 3]
  if slot ~= '' and not slot_live(customer, slot) then
    answers[#answers + 1] = -1
  else
    local taken = {}
    for i = 1, n do
      local owner = redis.call('GET', KEYS[k + i])
      if owner and owner ~= hold then taken[#taken + 1] = i end
    end
    if #taken == 0 then
      for i = 1, n do
        redis.call('SET', KEYS[k + i], hold, 'PX', ARGV[1])
      end
    end
    answers[#answers + 1] = taken
  end
  k = k + n
end
answers[#answers + 1] = redis.call('EXISTS', mark)
return answers

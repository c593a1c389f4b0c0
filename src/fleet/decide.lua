-- The rules of a retry budget and a circuit breaker, as src/fleet/rules.rs writes them, for a
-- Redis server: each decision is one call of this script, atomic, on the server's clock.
-- KEYS[1] is the budget of a name, KEYS[2] its breaker; ARGV[1] the decision, then its values.
-- The records are the lines of the file store's records, without their labels:
--   budget:  "SLICE_MS INDEX:FIRSTS:RETRIES ..."
--   breaker: "FAILURES OPEN_UNTIL FAILED_PROBES PROBE_ID:PROBE_UNTIL" ("-" for none)
-- A key expires once idle; a missing key is a full budget and a closed breaker.
-- Times are milliseconds; numbers stay below 2^53, where Lua's doubles are exact; a probe's id
-- is a string. Every reply ends with the number of records that did not parse and were
-- replaced by fresh ones (deleted: a missing key is a fresh state), for the run to say.
-- The constants and reply codes below are src/fleet/rules.rs's and src/fleet/redis.rs's; a test
-- there holds them to each other.

local SLICES = 10
local MOST_DOUBLINGS = 4
-- admit: whether the attempt may go.
local ADMIT_GO = 0
local ADMIT_PROBE = 1
local ADMIT_OPEN = 2
-- record: what the outcome did to the breaker.
local BREAKER_KEPT = 0
local BREAKER_OPENED = 1
local BREAKER_REOPENED = 2
local BREAKER_CLOSED = 3
local replaced = 0
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function int(n)
  return string.format('%.0f', n)
end

-- A record that does not parse is deleted (a fresh state) and counted, never read as fresh
-- in silence. A look at the state (show-*) only counts it: it changes nothing.
local looks_only = ARGV[1] == 'show-budget' or ARGV[1] == 'show-breaker'
local function corrupt(key)
  if not looks_only then
    redis.call('DEL', key)
  end
  replaced = replaced + 1
end

local function load_budget()
  local budget = { slice_ms = 0, slices = {} }
  local text = redis.call('GET', KEYS[1])
  if not text then
    return budget
  end
  local first = true
  for word in string.gmatch(text, '%S+') do
    if first then
      budget.slice_ms = tonumber(string.match(word, '^%d+$'))
      first = false
      if not budget.slice_ms then
        corrupt(KEYS[1])
        return { slice_ms = 0, slices = {} }
      end
    else
      local index, firsts, retries = string.match(word, '^(%d+):(%d+):(%d+)$')
      if not index then
        corrupt(KEYS[1])
        return { slice_ms = 0, slices = {} }
      end
      table.insert(budget.slices,
        { index = tonumber(index), firsts = tonumber(firsts), retries = tonumber(retries) })
    end
  end
  if first then
    corrupt(KEYS[1])
  end
  return budget
end

-- Brings the budget to now under a window of window_ms; returns the slice now is in.
local function align(budget, window_ms)
  local slice_ms = math.max(math.floor(window_ms / SLICES), 1)
  if budget.slice_ms ~= slice_ms then
    budget.slice_ms = slice_ms
    budget.slices = {}
  end
  local index = math.floor(now / slice_ms)
  local newest = budget.slices[#budget.slices]
  if newest and index < newest.index then
    if newest.index - index > SLICES then
      budget.slices = {}
    else
      index = newest.index
    end
  end
  local kept = {}
  for _, slice in ipairs(budget.slices) do
    if slice.index + SLICES >= index then
      table.insert(kept, slice)
    end
  end
  budget.slices = kept
  return index
end

local function slice_at(budget, index)
  local last = budget.slices[#budget.slices]
  if not last or last.index ~= index then
    last = { index = index, firsts = 0, retries = 0 }
    table.insert(budget.slices, last)
  end
  return last
end

local function view(budget, floor, ratio, window_ms)
  align(budget, window_ms)
  local firsts, retries = 0, 0
  for _, slice in ipairs(budget.slices) do
    firsts = firsts + slice.firsts
    retries = retries + slice.retries
  end
  return firsts, retries, floor + ratio * firsts - retries
end

local function store_budget(budget, window_ms)
  local words = { int(budget.slice_ms) }
  for _, slice in ipairs(budget.slices) do
    table.insert(words, int(slice.index) .. ':' .. int(slice.firsts) .. ':' .. int(slice.retries))
  end
  -- Idle for twice its window, a budget is whole again anyway.
  redis.call('SET', KEYS[1], table.concat(words, ' '), 'PX', int(math.max(2 * window_ms, 1000)))
end

local function load_breaker()
  local breaker = { failures = 0, open_until = nil, failed_probes = 0, probe_id = nil, probe_until = 0 }
  local text = redis.call('GET', KEYS[2])
  if not text then
    return breaker
  end
  local failures, open_until, failed_probes, probe = string.match(text, '^(%d+) (%S+) (%d+) (%S+)$')
  local id, probe_until = string.match(probe or '', '^(%d+):(%d+)$')
  if not failures or (open_until ~= '-' and not string.match(open_until, '^%d+$'))
    or (probe ~= '-' and not id) then
    corrupt(KEYS[2])
    return breaker
  end
  breaker.failures = tonumber(failures)
  breaker.open_until = tonumber(open_until)
  breaker.failed_probes = tonumber(failed_probes)
  if id then
    breaker.probe_id = id
    breaker.probe_until = tonumber(probe_until)
  end
  return breaker
end

local function store_breaker(breaker, cooldown_ms)
  local open_until = breaker.open_until and int(breaker.open_until) or '-'
  local probe = breaker.probe_id and (breaker.probe_id .. ':' .. int(breaker.probe_until)) or '-'
  local text = int(breaker.failures) .. ' ' .. open_until .. ' ' .. int(breaker.failed_probes) .. ' ' .. probe
  if breaker.failures == 0 and not breaker.open_until and not breaker.probe_id then
    redis.call('DEL', KEYS[2])
    return
  end
  if not cooldown_ms then
    -- A probe taken: the record lives as long as its opening made it.
    redis.call('SET', KEYS[2], text, 'KEEPTTL')
    return
  end
  -- Idle past its longest cooldown, twice over, a breaker is forgotten: closed.
  local left = math.max((breaker.open_until or now) - now, 0)
  local idle = 2 * cooldown_ms * 2 ^ MOST_DOUBLINGS
  redis.call('SET', KEYS[2], text, 'PX', int(math.max(left + idle, 1000)))
end

local function cooldown(cooldown_ms, failed_probes)
  return cooldown_ms * 2 ^ math.min(failed_probes, MOST_DOUBLINGS)
end

local op = ARGV[1]

-- Every reply, with the count of records replaced at its end.
local function reply(values)
  table.insert(values, replaced)
  return values
end

-- A first attempt earns its share of the budget (window_ms: the budget's window).
local function first_attempt(window_ms)
  local budget = load_budget()
  local slice = slice_at(budget, align(budget, window_ms))
  slice.firsts = slice.firsts + 1
  store_budget(budget, window_ms)
end

if op == 'admit' then
  -- ARGV: id, lease, then the budget's window when the attempt it lets through earns its share
  -- of the budget of the same name.
  local id, lease = ARGV[2], tonumber(ARGV[3])
  local breaker = load_breaker()
  if breaker.open_until and now < breaker.open_until then
    return reply({ ADMIT_OPEN, breaker.open_until, now })
  end
  if breaker.open_until and breaker.probe_id and breaker.probe_id ~= id and now < breaker.probe_until then
    return reply({ ADMIT_OPEN, breaker.probe_until, now })
  end
  local kind = ADMIT_GO
  if breaker.open_until then
    breaker.probe_id = id
    breaker.probe_until = now + lease
    store_breaker(breaker, nil)
    kind = ADMIT_PROBE
  end
  if ARGV[4] then
    first_attempt(tonumber(ARGV[4]))
  end
  return reply({ kind, 0, now })
elseif op == 'first' then
  first_attempt(tonumber(ARGV[4]))
  return reply({})
elseif op == 'retry' then
  local floor, ratio, window = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local budget = load_budget()
  local _, _, balance = view(budget, floor, ratio, window)
  local spent = 0
  if balance >= 1 then
    local slice = slice_at(budget, align(budget, window))
    slice.retries = slice.retries + 1
    spent = 1
    balance = balance - 1
    store_budget(budget, window)
  end
  return reply({ spent, int(math.floor(balance * 1000 + 0.5)) })
elseif op == 'record' then
  -- ARGV: id, outcome (success, failure, nothing), threshold, cooldown.
  local id, outcome = ARGV[2], ARGV[3]
  local threshold, cooldown_ms = tonumber(ARGV[4]), tonumber(ARGV[5])
  local breaker = load_breaker()
  local was_probe = breaker.probe_id == id
  if outcome == 'success' then
    local was_open = breaker.open_until ~= nil
    redis.call('DEL', KEYS[2])
    if was_open then
      return reply({ BREAKER_CLOSED, 0, now })
    end
    return reply({ BREAKER_KEPT, 0, now })
  elseif outcome == 'failure' and was_probe then
    breaker.failed_probes = math.min(breaker.failed_probes + 1, MOST_DOUBLINGS)
    breaker.open_until = now + cooldown(cooldown_ms, breaker.failed_probes)
    breaker.probe_id = nil
    store_breaker(breaker, cooldown_ms)
    return reply({ BREAKER_REOPENED, breaker.open_until, now })
  elseif outcome == 'failure' and not breaker.open_until then
    breaker.failures = breaker.failures + 1
    if breaker.failures < threshold then
      store_breaker(breaker, cooldown_ms)
      return reply({ BREAKER_KEPT, 0, now })
    end
    breaker = { failures = 0, open_until = now + cooldown(cooldown_ms, 0), failed_probes = 0 }
    store_breaker(breaker, cooldown_ms)
    return reply({ BREAKER_OPENED, breaker.open_until, now })
  elseif outcome == 'nothing' and was_probe then
    breaker.probe_id = nil
    store_breaker(breaker, cooldown_ms)
  end
  return reply({ BREAKER_KEPT, 0, now })
elseif op == 'show-budget' then
  local firsts, retries, balance = view(load_budget(), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
  return reply({ firsts, retries, int(math.floor(balance * 1000 + 0.5)) })
elseif op == 'show-breaker' then
  local breaker = load_breaker()
  return reply({ breaker.failures, breaker.open_until and int(breaker.open_until) or '-',
    breaker.failed_probes, breaker.probe_id or '-', int(breaker.probe_until), now })
elseif op == 'reset-budget' then
  redis.call('DEL', KEYS[1])
  return reply({})
elseif op == 'reset-breaker' then
  redis.call('DEL', KEYS[2])
  return reply({})
end
return redis.error_reply('unknown decision ' .. tostring(op))

-- Shared by every wrk script of scripts/load-table: counts the answers by status class in
-- each thread, and prints one RESULT line when the run is done (scripts/load-table reads it).
-- Each script loads it with dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua").

local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("thread_id", next_id)
  table.insert(threads, thread)
end

s2xx, s3xx, s4xx, s5xx, sother = 0, 0, 0, 0, 0

function response(status, headers, body)
  if status >= 200 and status < 300 then s2xx = s2xx + 1
  elseif status >= 300 and status < 400 then s3xx = s3xx + 1
  elseif status >= 400 and status < 500 then s4xx = s4xx + 1
  elseif status >= 500 then s5xx = s5xx + 1
  else sother = sother + 1 end
end

-- A random number generator of the thread's own (each thread is its own Lua state).
function seed()
  math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919 + math.floor(os.clock() * 1e6))
end

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

-- `n` random base64url characters.
function random_b64url(n)
  local t = {}
  for i = 1, n do
    local r = math.random(1, 64)
    t[i] = alphabet:sub(r, r)
  end
  return table.concat(t)
end

-- `s` in base64url without padding (RFC 7515 §2).
function b64url(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local c1 = math.floor(n / 262144) % 64
    local c2 = math.floor(n / 4096) % 64
    local c3 = math.floor(n / 64) % 64
    local c4 = n % 64
    out[#out + 1] = alphabet:sub(c1 + 1, c1 + 1) .. alphabet:sub(c2 + 1, c2 + 1)
    if b then out[#out + 1] = alphabet:sub(c3 + 1, c3 + 1) end
    if c then out[#out + 1] = alphabet:sub(c4 + 1, c4 + 1) end
  end
  return table.concat(out)
end

-- The request's headers: wrk's own (Host with the port) and `extra`.
function headers_with(extra)
  local h = {}
  for k, v in pairs(wrk.headers) do h[k] = v end
  for k, v in pairs(extra) do h[k] = v end
  return h
end

function done(summary, latency, requests)
  local c = { s2xx = 0, s3xx = 0, s4xx = 0, s5xx = 0, sother = 0 }
  for _, thread in ipairs(threads) do
    for k, _ in pairs(c) do c[k] = c[k] + (thread:get(k) or 0) end
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d s2xx=%d s3xx=%d s4xx=%d s5xx=%d sother=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    c.s2xx, c.s3xx, c.s4xx, c.s5xx, c.sother, e.connect, e.read, e.write, e.timeout))
end

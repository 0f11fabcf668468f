-- Flood (c): the bearer API (the URL given to wrk) with tokens it must refuse, in turn: a
-- random string (new in every request: 16 to 400 characters, token68 or not), and a
-- well-formed access-token JWT signed by a key the app does not know (the next of the pool in
-- the file LOAD_TABLE_FOREIGN_JWTS, one a line, made by scripts/load-table with openssl).
dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua")

local foreign = {}
local n = 0
local junk = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=!#$%&*?@^`|{}"

local function garbage()
  local t = {}
  for i = 1, math.random(16, 400) do
    local r = math.random(1, #junk)
    t[i] = junk:sub(r, r)
  end
  return table.concat(t)
end

function init(args)
  seed()
  for line in io.lines(os.getenv("LOAD_TABLE_FOREIGN_JWTS")) do
    if #line > 0 then foreign[#foreign + 1] = line end
  end
  n = math.random(0, #foreign)
end

function request()
  n = n + 1
  local token
  if n % 2 == 0 then token = foreign[n / 2 % #foreign + 1] else token = garbage() end
  return wrk.format("GET", nil, headers_with({ ["Authorization"] = "Bearer " .. token }))
end

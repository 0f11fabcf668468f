-- Flood (a): GET / with 240 random, well-formed session-cookie values under the app's cookie
-- name (LOAD_TABLE_COOKIE_NAME) in one Cookie header. The first two values, the ones the app
-- looks up, are new in every request; the other 238 come from a pool of random tails.
dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua")

local name = os.getenv("LOAD_TABLE_COOKIE_NAME")
local tails = {}

function init(args)
  seed()
  for k = 1, 32 do
    local parts = {}
    for i = 1, 238 do parts[i] = name .. "=" .. random_b64url(43) end
    tails[k] = table.concat(parts, "; ")
  end
end

function request()
  local cookie = name .. "=" .. random_b64url(43) .. "; " .. name .. "=" .. random_b64url(43) .. "; " .. tails[math.random(1, #tails)]
  return wrk.format("GET", nil, headers_with({ ["Cookie"] = cookie }))
end

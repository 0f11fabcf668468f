-- Signed-in page views: GET of the URL given to wrk with the user's session cookie
-- (LOAD_TABLE_COOKIE: "name=value").
dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua")

local cookie = os.getenv("LOAD_TABLE_COOKIE")

function init(args)
  wrk.headers["Cookie"] = cookie
end

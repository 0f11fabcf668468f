-- Flood (b): GET of the login route (the URL given to wrk), no cookie: each one a new
-- sign-in in progress.
dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua")

-- Flood (d): the bearer API (the URL given to wrk) with RS256 access-token JWTs whose
-- header names a `kid` no key of the issuer has (new in every request), and otherwise
-- well-formed claims for this API (iss LOAD_TABLE_ISSUER, aud and client_id the demo
-- confidential client, exp in 10 minutes, a new jti); the signature is 256 random bytes,
-- which no key can check since none has that kid.
dofile(os.getenv("LOAD_TABLE_LUA") .. "/common.lua")

local issuer = os.getenv("LOAD_TABLE_ISSUER")
local audience = os.getenv("LOAD_TABLE_AUDIENCE")
local signatures = {}

function init(args)
  seed()
  for k = 1, 64 do signatures[k] = random_b64url(342) end
end

function request()
  local now = os.time()
  local header = '{"alg":"RS256","typ":"at+jwt","kid":"' .. random_b64url(16) .. '"}'
  local claims = string.format(
    '{"iss":"%s","sub":"load-%s","aud":"%s","client_id":"%s","scope":"api","iat":%d,"exp":%d,"jti":"%s"}',
    issuer, random_b64url(8), audience, audience, now, now + 600, random_b64url(22))
  local token = b64url(header) .. "." .. b64url(claims) .. "." .. signatures[math.random(1, #signatures)]
  return wrk.format("GET", nil, headers_with({ ["Authorization"] = "Bearer " .. token }))
end

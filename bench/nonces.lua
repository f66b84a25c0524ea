-- wrk script for the memory phase: fresh GitHub events, as many as fit in
-- the run's duration.
--
--   wrk ... -s nonces.lua URL -- POOL_FILE RECORD_LENGTH FIRST_ID
--
-- Cycles through the signed requests of a pool file and gives each request a
-- new X-GitHub-Delivery id (FIRST_ID, FIRST_ID+1, ...; GitHub does not sign
-- it), so distinct event ids reach the store however small the pool is.

function init(args)
  local path, reclen = args[1], tonumber(args[2])
  sent = tonumber(args[3])
  heads, tails = {}, {}
  local f = assert(io.open(path, "rb"))
  while true do
    local rec = f:read(reclen)
    if not rec or #rec < reclen then break end
    local s, e = rec:find("X%-GitHub%-Delivery: [^\r]*")
    assert(s, "the pool holds no X-GitHub-Delivery header (SCHEME=github only)")
    heads[#heads + 1] = rec:sub(1, s - 1) .. "X-GitHub-Delivery: nonce-"
    tails[#tails + 1] = rec:sub(e + 1)
  end
  f:close()
end

function request()
  sent = sent + 1
  local k = (sent % #heads) + 1
  return heads[k] .. sent .. tails[k]
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d err_status=%d\n",
    summary.requests, summary.duration, summary.errors.status))
end

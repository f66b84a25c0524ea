-- wrk script: sends the pre-built requests of a pool file in order, each once.
--
--   wrk ... -s pool.lua URL -- POOL_FILE RECORD_LENGTH [THREADS [SKIP]]
--
-- The pool holds fixed-length raw HTTP requests (bench/gen_pool.py). With
-- several wrk threads (pass their number as THREADS) each takes every n-th
-- record, so no request is sent twice. SKIP (default 0) starts each thread
-- that many records into its share, so a run can go on where another stopped. When a thread runs out it wraps around and the summary says so (a
-- fresh-event run that wrapped measured duplicates, and run.sh rejects it).
-- done() prints one machine-readable RESULT line.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path, reclen = args[1], tonumber(args[2])
  local step = tonumber(args[3]) or 1
  pool = {}
  local f = assert(io.open(path, "rb"))
  local index = 0
  while true do
    local rec = f:read(reclen)
    if not rec or #rec < reclen then break end
    if index % step == (id or 0) then pool[#pool + 1] = rec end
    index = index + 1
  end
  f:close()
  n = #pool
  i = (tonumber(args[4]) or 0) % math.max(n, 1)
  wrapped = 0
end

function request()
  i = i + 1
  if i > n then
    i = 1
    wrapped = wrapped + 1
  end
  return pool[i]
end

function done(summary, latency, requests)
  local wraps = 0
  for _, t in ipairs(threads) do
    wraps = wraps + (t:get("wrapped") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d wrapped=%d\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout, wraps))
end

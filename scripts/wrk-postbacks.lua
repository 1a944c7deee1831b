-- wrk script for scripts/serve-bench.sh, scripts/soak.sh and scripts/conversion-value-bench.sh:
-- sends the lines of a file, one per request, over keep-alive connections: as POST bodies (the
-- postbacks of a JSON Lines corpus, by default), or with WRK_METHOD=GET as query strings.
-- Thread k of n sends lines k, k+n, k+2n, … so that no two threads send the same line; at the
-- end of the file it starts again (a line sent again is still answered).
--
-- The file is read as it is sent, never held: a thread holding a large corpus paused in
-- proportion to it (about 0.4 s once a run with a million lines), and its loading delayed the
-- next thread's start while the first already sent, which wrk counted but did not time (a
-- 15 s run with 5.4 million lines read 16,794/s of a server that answers about 7,000/s).
--
-- Environment: WRK_CORPUS (the file), WRK_THREADS (wrk's -t), WRK_DELAY_MS (pause before each
-- request on a connection: a rate-limited client; 0 = as fast as answers come), WRK_METHOD
-- (POST or GET), WRK_PATH (default the SKAdNetwork report-attribution endpoint).
local corpus = os.getenv("WRK_CORPUS")
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  stride = tonumber(os.getenv("WRK_THREADS") or "1")
  pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
  method = os.getenv("WRK_METHOD") or "POST"
  path = os.getenv("WRK_PATH") or "/.well-known/skadnetwork/report-attribution/"
  file = assert(io.open(corpus, "r"))
  -- This thread's first line is line `id` (from 0).
  for _ = 1, id do file:read("*l") end
end

-- The next non-empty line of this thread's, wrapping around at the end of the file.
local function next_line()
  for _ = 1, 2 do
    local line = file:read("*l")
    while line ~= nil and #line == 0 do line = file:read("*l") end
    if line ~= nil then
      for _ = 2, stride do file:read("*l") end
      return line
    end
    file:seek("set", 0)
    for _ = 1, id do file:read("*l") end
  end
  error("no line in " .. corpus)
end

function request()
  local line = next_line()
  if method == "GET" then
    return wrk.format("GET", path .. "?" .. line)
  end
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" }, line)
end

-- Defined only for a rate-limited client, and no `response` hook: each hook is a call into Lua
-- per request, CPU that wrk takes from the server it shares the machine with. wrk counts
-- answers of 400 and above itself (summary.errors.status).
if tonumber(os.getenv("WRK_DELAY_MS") or "0") > 0 then
  function delay()
    return pause
  end
end

function done(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rate=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d status_4xx_5xx=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end

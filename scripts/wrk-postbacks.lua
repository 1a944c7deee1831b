-- wrk script for scripts/serve-bench.sh: POSTs the postbacks of a JSON Lines corpus, one per
-- request, over keep-alive connections. Thread k of n sends lines k, k+n, k+2n, … so that no
-- two threads send the same postback (wrap-around sends duplicates, which are still answered).
--
-- Environment: WRK_CORPUS (the .jsonl file), WRK_THREADS (wrk's -t), WRK_DELAY_MS (pause
-- before each request on a connection: a rate-limited client; 0 = as fast as answers come).
local corpus = os.getenv("WRK_CORPUS")
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  bodies = {}
  for line in io.lines(corpus) do
    if #line > 0 then bodies[#bodies + 1] = line end
  end
  stride = tonumber(os.getenv("WRK_THREADS") or "1")
  pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
  index = id
  statuses = {}
end

function request()
  local body = bodies[(index % #bodies) + 1]
  index = index + stride
  return wrk.format("POST", "/.well-known/skadnetwork/report-attribution/",
    { ["Content-Type"] = "application/json" }, body)
end

function delay()
  return pause
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local totals = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      totals[status] = (totals[status] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(totals) do parts[#parts + 1] = status .. ":" .. count end
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rate=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d statuses=%s\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status
      + summary.errors.timeout,
    table.concat(parts, ",")))
end

-- wrk script: PUT a replacement (the JSON in BODY_FILE) to a random posting of the ids listed in IDS_FILE
-- (BENCH_METHOD and the path around the id, BENCH_PATH_BEFORE and BENCH_PATH_AFTER, say how a target takes it).
local ids = {}
local method = os.getenv("BENCH_METHOD") or "PUT"
local before, after = os.getenv("BENCH_PATH_BEFORE") or "/postings/", os.getenv("BENCH_PATH_AFTER") or ""
local token = os.getenv("BENCH_TOKEN")
for line in io.lines(os.getenv("IDS_FILE")) do ids[#ids + 1] = line end
local file = io.open(os.getenv("BODY_FILE"))
local body = file:read("*a")
file:close()
-- Each request's own content: BODY_MARK in the body becomes "<BENCH_RUN>.<n>" (a board sees
-- the same content twice as the same job applied again).
local mark, run, sent = os.getenv("BODY_MARK"), os.getenv("BENCH_RUN"), 0
request = function()
  local id = ids[math.random(#ids)]
  sent = sent + 1
  local own = body:gsub(mark, run .. "." .. sent, 1)
  return wrk.format(method, before .. id .. after, {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, own)
end
done = function(summary, latency, requests)
  io.write(string.format("wrk: %d requests, %d errors (status %d), p50 %.1f ms, p99 %.1f ms, p999 %.1f ms\n",
    summary.requests, summary.errors.status + summary.errors.connect + summary.errors.timeout, summary.errors.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000))
end
-- Think time between a connection's requests (BENCH_DELAY_MS), to hold a fixed rate.
local think = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
if think > 0 then
  delay = function() return think end
end

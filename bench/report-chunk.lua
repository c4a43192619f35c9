-- wrk script for bench/report-chunk.ts: request n reports chunk floor(n / partitions) of partition n % partitions,
-- exactly as the Node load generator does. The file named by LC_BENCH_WRK_PARAMS holds the run id, the run's
-- HDFS path, the chunk count, the number of reports, then one claim token per partition, one per line.
local params = {}
for line in io.lines(os.getenv("LC_BENCH_WRK_PARAMS")) do params[#params + 1] = line end
local runId, runPath, chunkCount, total = params[1], params[2], tonumber(params[3]), tonumber(params[4])
local partitions = #params - 4
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. os.getenv("LC_BENCH_TOKEN") }
local query = "mutation($i: ReportChunkInput!) { reportChunk(input: $i) {"
  .. " recorded partitionStatus runStatus receivedChunks chunkCount validationScheduled } }"
local healthz = '{"status":"ok"}'
local sent = 0
local verified = false
-- globals, so that done() can read them through thread:get
answered, failed, scheduled, firstFailure = 0, 0, 0, ""

request = function()
  -- wrk calls request() once before it starts, to check what it returns; that request is never sent
  if not verified then
    verified = true
    return wrk.format("GET", "/healthz")
  end
  -- after the last report only cheap requests, until the bench stops wrk: the last reports are still in flight
  if sent >= total then return wrk.format("GET", "/healthz") end
  local p, chunk = sent % partitions, math.floor(sent / partitions)
  sent = sent + 1
  local pid = string.format("%04d", p)
  return wrk.format("POST", "/graphql", headers, string.format(
    '{"query":"%s","variables":{"i":{"runId":"%s","partitionId":"%s","claimToken":"%s","chunkIndex":%d,'
      .. '"chunkCount":%d,"hdfsPath":"%s/part-%s-%06d.parquet","recordCount":1,"byteCount":100}}}',
    query, runId, pid, params[5 + p], chunk, chunkCount, runPath, pid, chunk))
end

response = function(status, headers, body)
  if body == healthz then return end
  answered = answered + 1
  if status ~= 200 or not body:find('"recorded":true', 1, true) then
    failed = failed + 1
    if firstFailure == "" then firstFailure = body end
  end
  if body:find('"validationScheduled":true', 1, true) then scheduled = scheduled + 1 end
  -- tells the bench, which stops wrk and takes the time
  if answered == total then io.write("answered all\n"); io.flush() end
end

local threads = {}
setup = function(thread) threads[#threads + 1] = thread end

done = function(summary, latency)
  local t = threads[1]
  io.write(string.format('RESULT {"answered":%d,"failed":%d,"scheduled":%d,"p50us":%d,"p99us":%d,"firstFailure":%q}\n',
    t:get("answered"), t:get("failed"), t:get("scheduled"), latency:percentile(50), latency:percentile(99), t:get("firstFailure")))
end

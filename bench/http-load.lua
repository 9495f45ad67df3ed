-- wrk script for bench/http.ts (the `--client wrk` choice): POST /products/search, every request
-- with a query of its own ("<tag> <n>"), or one of `repeat` queries in turn when repeat > 0, and one
-- JSON line at the end, like bench/http-load.ts.
--   wrk -t1 -c16 -d5s -s bench/http-load.lua http://127.0.0.1:PORT -- <tag> <repeat> [token]
local counter = 0
local tag = "q"
local repeat_every = 0
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  tag = args[1] or tag
  repeat_every = tonumber(args[2] or "0") or 0
  if args[3] and args[3] ~= "" then
    headers["Authorization"] = "Bearer " .. args[3]
  end
end

function request()
  counter = counter + 1
  local n = counter
  if repeat_every > 0 then n = counter % repeat_every end
  local body = '{"query":"consulta ' .. tag .. " " .. n .. '","limit":10}'
  return wrk.format("POST", "/products/search", headers, body)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"failures":%d,"p50_us":%d,"p95_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration,
    errors.connect + errors.read + errors.write + errors.timeout + errors.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end

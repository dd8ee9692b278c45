-- wrk script for POST /v1/openai/preflight (docs/perf.md, docs/api.md).
-- Usage: wrk -t2 -c32 -d20s --latency -s bench/preflight.lua http://127.0.0.1:18080 -- [turns]
-- turns = number of user/assistant message pairs of filler (default 2, a ~1.5 KB
-- request; 60 gives the ~32 KB request of the issue's latency target).
-- Every S2 flag is on, with 8 tools and tool_choice "any", so each request
-- takes the normalizing path and answers 200 with the rewritten request.
local function envelope(turns)
  local msgs = { '{"role":"system","content":"You are a helpful assistant."}' }
  for i = 1, turns do
    msgs[#msgs + 1] = '{"role":"user","content":"turn ' .. i .. ': ' .. string.rep("lorem ipsum dolor sit amet ", 10) .. '"}'
    msgs[#msgs + 1] = '{"role":"assistant","content":"answer ' .. i .. ': ' .. string.rep("consectetur adipiscing elit ", 8) .. '"}'
  end
  msgs[#msgs + 1] = '{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":"https://example.com/cat.png"}]}'
  msgs[#msgs + 1] = '{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"line one"},{"type":"text","text":"line two"}]}'
  local tools = {}
  for i = 0, 7 do
    tools[#tools + 1] = '{"type":"function","function":{"name":"tool_' .. i .. '","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}}'
  end
  local request = '{"model":"glm-4.5","messages":[' .. table.concat(msgs, ",") .. '],"tools":[' ..
    table.concat(tools, ",") .. '],"tool_choice":"any","user":"bench"}'
  return '{"request":' .. request .. ',"prompt_tokens":1000,"context_len":32768,"max_total_tokens":100000,' ..
    '"flags":{"para_chat_default_max_tokens":32768,"normalize_tool_choice":true,"flatten_tool_role_content":true}}'
end

local body = envelope(2)

function init(args)
  if args[1] then body = envelope(tonumber(args[1])) end
  io.write(string.format("thread body: %d bytes\n", #body))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = body
end

-- wrk itself reports "Non-2xx or 3xx responses" when any request did not answer 200.
function done(summary, latency, requests)
  io.write(string.format("p50 %.3f ms, p99 %.3f ms, %.0f req/s\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6)))
end

-- mcp_triage.lua: the mcp-triage classifier inside nginx / OpenResty, over the C ABI of
-- crates/mcp-triage-ffi (libmcp_triage_ffi.so) loaded by LuaJIT FFI.
--
-- Why FFI and not a Lua port: the verdict must be the one the client, the proxy and the
-- bindings give, so the same core decides; Lua only moves bytes and labels around.
--
-- Phases (see nginx.conf.template):
--   access_by_lua        mcp_triage.access()         reads the request body once (bounded)
--   header_filter_by_lua mcp_triage.header_filter()  creates the classifier (status, headers)
--   body_filter_by_lua   mcp_triage.body_filter()    feeds each chunk, never buffers or edits it
--   log_by_lua           mcp_triage.log()            verdict -> $mcp_* variables, JSON line, metrics
-- and content_by_lua mcp_triage.metrics() on a /metrics location.
--
-- Nothing here may break the proxied request: every ABI error is logged with ngx.log and the
-- exchange passes as it would without the module.

local ffi = require "ffi"
local cjson = require "cjson.safe"

local C_DEF = [[
typedef struct McptClassifier McptClassifier;
typedef struct McptVerdict McptVerdict;
typedef struct McptHeader {
  const uint8_t *name;  size_t name_len;
  const uint8_t *value; size_t value_len;
} McptHeader;
typedef struct McptCallOptions {
  int32_t expect_id_kind;
  int64_t expect_id_number;
  const uint8_t *expect_id_string; size_t expect_id_string_len;
  const char *protocol_version;
  int64_t now_unix_ms;
  const char *limits_json;
  const char *output_schema_json;
} McptCallOptions;
int32_t mcpt_classifier_new(uint16_t status, const McptHeader *headers, size_t header_count,
                            const McptCallOptions *opts, McptClassifier **out);
int32_t mcpt_classifier_feed(McptClassifier *c, const uint8_t *chunk, size_t len);
int32_t mcpt_classifier_is_decided(const McptClassifier *c);
int32_t mcpt_classifier_finish(McptClassifier *c, McptVerdict **out);
int32_t mcpt_classifier_interrupted(McptClassifier *c, int32_t kind, const char *reason,
                                    McptVerdict **out);
void    mcpt_classifier_free(McptClassifier *c);
int32_t mcpt_verdict_no_response(int32_t kind, const char *reason, McptVerdict **out);
int32_t mcpt_verdict_layer(const McptVerdict *v);
int32_t mcpt_verdict_outcome(const McptVerdict *v);
int32_t mcpt_verdict_jsonrpc_code(const McptVerdict *v, int64_t *code);
const char *mcpt_verdict_json(const McptVerdict *v, size_t *len);
void    mcpt_verdict_free(McptVerdict *v);
const char *mcpt_layer_name(int32_t code);
const char *mcpt_outcome_name(int32_t code);
const char *mcpt_last_error(void);
const char *mcpt_version(void);
]]

local ID_NUMBER, ID_STRING = 0, 1
local INTERRUPT_CONNECTION_LOST, INTERRUPT_TIMED_OUT = 1, 2

-- Upper bounds (seconds) of the latency histogram: DURATION_BUCKETS of
-- crates/mcp-triage-proxy/src/ui/metrics.rs, written as Rust's `{}` prints them.
local BUCKETS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300 }
local BUCKET_LABELS = { "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
  "5", "10", "30", "60", "300" }
local OTHER_TOOL, UNNAMED_TOOL, MAX_TOOL_LABEL_BYTES = "other", "unknown", 128
-- Largest integer a Lua number (double) holds exactly: a larger JSON-RPC id cannot be matched.
local MAX_EXACT_ID = 9007199254740991

local _M = { _VERSION = "0.1" }

-- the declarations at load time (once per Lua VM): the ctypes below need them
ffi.cdef(C_DEF)

local lib            -- the loaded .so
local cfg = {        -- defaults; init() overrides
  so_path = "libmcp_triage_ffi.so",
  max_body_bytes = 1048576,  -- request bodies larger than this pass unclassified
  read_timeout_ms = 60000,   -- nginx's proxy_read_timeout: silence this long = TIMED_OUT
  limits_json = nil,         -- the core's Limits as camelCase JSON (nil = defaults)
  dict = "mcp_triage",       -- lua_shared_dict of the metrics
  server = "upstream",       -- the `server` label, the upstream's authority
  max_tools = 100,           -- distinct tool labels before `other`
  -- the upstream closed the connection after the request, before a response head: close the
  -- client's connection too (as `mcp-triage proxy` does) instead of nginx's 502, so the client
  -- sees the failure it would see without the gateway
  close_on_upstream_loss = true,
}
local out_classifier = ffi.new("McptClassifier*[1]")
local out_verdict = ffi.new("McptVerdict*[1]")
local len_out = ffi.new("size_t[1]")
local code_out = ffi.new("int64_t[1]")

local function last_error()
  local e = lib.mcpt_last_error()
  return e ~= nil and ffi.string(e) or "(no message)"
end

--- Loads the library and applies options; call once from init_by_lua (before workers fork).
function _M.init(opts)
  for k, v in pairs(opts or {}) do
    if cfg[k] == nil and k ~= "limits_json" then
      error("mcp_triage.init: unknown option " .. tostring(k))
    end
    cfg[k] = v
  end
  lib = ffi.load(cfg.so_path)
  if cfg.limits_json ~= nil and type(cfg.limits_json) ~= "string" then
    error("mcp_triage.init: limits_json must be a JSON string")
  end
  return ffi.string(lib.mcpt_version())
end

--- access phase: read the body once and keep what the classifier needs in ngx.ctx.mcp.
function _M.access()
  if ngx.req.get_method() ~= "POST" then return end
  local len = tonumber(ngx.var.http_content_length or "")
  if len and len > cfg.max_body_bytes then
    ngx.log(ngx.INFO, "mcp_triage: request body of ", len, " bytes over max_body_bytes, not classified")
    return
  end
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body == nil then
    -- empty, or spooled to a file because it exceeded client_body_buffer_size
    if ngx.req.get_body_file() then
      ngx.log(ngx.INFO, "mcp_triage: request body spooled to a file, not classified")
    end
    return
  end
  if #body > cfg.max_body_bytes then return end
  local msg = cjson.decode(body)
  -- a batch (an array), a notification (no id) or anything not a tools/call request passes
  if type(msg) ~= "table" or msg.jsonrpc ~= "2.0" or msg.method ~= "tools/call" then return end
  local id = msg.id
  local kind
  if type(id) == "string" then
    kind = ID_STRING
  elseif type(id) == "number" and id == math.floor(id) and math.abs(id) <= MAX_EXACT_ID then
    kind = ID_NUMBER
  else
    return
  end
  local params = type(msg.params) == "table" and msg.params or {}
  local tool = type(params.name) == "string" and params.name or nil
  ngx.ctx.mcp = {
    id = id, id_kind = kind, tool = tool, method = msg.method,
    protocol = ngx.var.http_mcp_protocol_version,
    request_bytes = #body, response_bytes = 0,
  }
end

-- The last value of an $upstream_* list ("-, 0.002" after nginx tried two servers).
local function last_of(list)
  if list == nil then return nil end
  return list:match("([^,%s]+)%s*$")
end

-- nginx answered itself because the upstream sent no response head: the call has no response
-- to classify. Returns the interruption kind and reason, or nil when the upstream answered.
local function no_upstream_head()
  if ngx.status < 500 or last_of(ngx.var.upstream_header_time) ~= "-" then return nil end
  if ngx.status == 504 then
    return INTERRUPT_TIMED_OUT, "the upstream sent no response head within proxy_read_timeout (nginx 504)"
  end
  if last_of(ngx.var.upstream_connect_time) == "-" then
    return INTERRUPT_CONNECTION_LOST, "nginx could not connect to the upstream (nginx " .. ngx.status .. ")"
  end
  return INTERRUPT_CONNECTION_LOST, "the upstream closed the connection before a response head"
end

-- Reused for every call (a worker runs one Lua call at a time and the library copies what it
-- keeps): no allocation per response for the header array and the options.
local MAX_STATIC_HEADERS = 64
local static_headers = ffi.new("McptHeader[?]", MAX_STATIC_HEADERS)
local opts = ffi.new("McptCallOptions")

-- The McptHeader array of the response headers nginx sends on. `hs` (returned) holds the Lua
-- strings the array points into: keep it alive until the call that reads them.
local function header_array()
  local hs = ngx.resp.get_headers(100, true)
  local n = 0
  for _, value in pairs(hs) do n = n + (type(value) == "table" and #value or 1) end
  local arr = n <= MAX_STATIC_HEADERS and static_headers or ffi.new("McptHeader[?]", n)
  local i = 0
  for name, value in pairs(hs) do
    if type(value) == "table" then
      for _, v in ipairs(value) do
        arr[i].name, arr[i].name_len, arr[i].value, arr[i].value_len = name, #name, v, #v
        i = i + 1
      end
    else
      arr[i].name, arr[i].name_len, arr[i].value, arr[i].value_len = name, #name, value, #value
      i = i + 1
    end
  end
  return arr, n, hs
end

--- header_filter phase: the classifier, from the status and headers nginx sends on.
function _M.header_filter()
  local m = ngx.ctx.mcp
  if not m then return end
  local kind, reason = no_upstream_head()
  if kind then
    m.no_head = { kind = kind, reason = reason, status = ngx.status }
    if kind == INTERRUPT_CONNECTION_LOST and cfg.close_on_upstream_loss
        and last_of(ngx.var.upstream_connect_time) ~= "-" then
      m.no_head.status = nil -- nothing is sent: the client's connection is closed
      return ngx.exit(ngx.ERROR)
    end
    return
  end
  local arr, n, keep = header_array()
  local o = opts
  o.expect_id_kind = m.id_kind
  if m.id_kind == ID_NUMBER then
    o.expect_id_number = m.id
    o.expect_id_string, o.expect_id_string_len = nil, 0
  else
    o.expect_id_number = 0
    o.expect_id_string, o.expect_id_string_len = m.id, #m.id
  end
  o.protocol_version = m.protocol
  ngx.update_time()
  o.now_unix_ms = math.floor(ngx.now() * 1000)
  o.limits_json = cfg.limits_json
  local rc = lib.mcpt_classifier_new(ngx.status, arr, n, o, out_classifier)
  if rc ~= 0 and m.protocol then
    -- a protocol version the core does not know: classify leniently rather than not at all
    ngx.log(ngx.WARN, "mcp_triage: MCP-Protocol-Version ", m.protocol, ": ", last_error(),
      "; classified as version unknown")
    o.protocol_version = nil
    rc = lib.mcpt_classifier_new(ngx.status, arr, n, o, out_classifier)
  end
  o.protocol_version, o.expect_id_string, o.limits_json = nil, nil, nil -- no dangling pointers
  keep = nil
  if rc ~= 0 then
    ngx.log(ngx.ERR, "mcp_triage: classifier_new failed (", rc, "): ", last_error())
    ngx.ctx.mcp = nil
    return
  end
  -- freed by log(), or by the GC when the request is aborted before the log phase
  m.c = ffi.gc(out_classifier[0], lib.mcpt_classifier_free)
  m.status = ngx.status
  m.last_chunk = ngx.now()
end

--- body_filter phase: feed the chunk as it passes; the bytes are not touched.
function _M.body_filter()
  local m = ngx.ctx.mcp
  if not m or not m.c then return end
  local chunk, eof = ngx.arg[1], ngx.arg[2]
  if chunk and #chunk > 0 then
    m.response_bytes = m.response_bytes + #chunk
    m.last_chunk = ngx.now()
    if not m.decided then
      local rc = lib.mcpt_classifier_feed(m.c, chunk, #chunk)
      if rc ~= 0 then
        ngx.log(ngx.ERR, "mcp_triage: feed failed (", rc, "): ", last_error())
        m.failed = true
        m.decided = true
      elseif lib.mcpt_classifier_is_decided(m.c) == 1 then
        m.decided = true
      end
    end
  end
  if eof then m.eof = true end
end

local function verdict_of(m)
  local rc
  if not m.c then
    local h = m.no_head or {
      -- the log phase came before any response head: the client closed its connection first
      kind = INTERRUPT_CONNECTION_LOST,
      reason = "the client closed the connection before a response head",
    }
    rc = lib.mcpt_verdict_no_response(h.kind, h.reason, out_verdict)
  elseif m.eof then
    rc = lib.mcpt_classifier_finish(m.c, out_verdict)
  else
    -- the body did not end: nginx closes a response after proxy_read_timeout of silence,
    -- anything else (upstream reset, client gone) is a lost connection
    ngx.update_time()
    local silent_ms = (ngx.now() - m.last_chunk) * 1000
    local kind = silent_ms >= cfg.read_timeout_ms and INTERRUPT_TIMED_OUT or INTERRUPT_CONNECTION_LOST
    rc = lib.mcpt_classifier_interrupted(m.c, kind, "response body ended before its end (nginx)",
      out_verdict)
  end
  if rc ~= 0 then
    ngx.log(ngx.ERR, "mcp_triage: verdict failed (", rc, "): ", last_error())
    return nil
  end
  return ffi.gc(out_verdict[0], lib.mcpt_verdict_free)
end

local function tool_label(dict, tool)
  if tool == nil then return UNNAMED_TOOL end
  if #tool > MAX_TOOL_LABEL_BYTES then
    local e = MAX_TOOL_LABEL_BYTES
    -- cut at a UTF-8 character boundary (not inside a continuation byte)
    while e > 0 and bit.band(tool:byte(e + 1), 0xC0) == 0x80 do e = e - 1 end
    tool = tool:sub(1, e)
  end
  -- "t\t<name>" is true for a name with its own series, false for one counted as `other`;
  -- add() makes one worker the first to see a name, so each name takes one place of the cap
  local key = "t\t" .. tool
  local own = dict:get(key)
  if own == nil then
    if dict:safe_add(key, true) then
      local n = dict:incr("tools_n", 1, 0)
      own = n ~= nil and n <= cfg.max_tools
      if not own then dict:set(key, false) end
    else
      own = dict:get(key)
    end
  end
  return own and tool or OTHER_TOOL
end

local function observe(tool, layer, outcome, seconds)
  local dict = ngx.shared[cfg.dict]
  if not dict then return end
  local t = tool_label(dict, tool)
  local ok, err = dict:incr("c\t" .. t .. "\t" .. layer .. "\t" .. outcome, 1, 0)
  if not ok then ngx.log(ngx.ERR, "mcp_triage: metrics dict: ", err) return end
  for i = 1, #BUCKETS do
    if seconds <= BUCKETS[i] then dict:incr("b\t" .. t .. "\t" .. i, 1, 0) break end
  end
  dict:incr("s\t" .. t, seconds, 0)
  dict:incr("n\t" .. t, 1, 0)
end

local date_sec, date_text = -1, ""
local function rfc3339(t)
  local secs = math.floor(t)
  if secs ~= date_sec then
    date_sec, date_text = secs, os.date("!%Y-%m-%dT%H:%M:%S", secs)
  end
  return string.format('"%s.%03dZ"', date_text, math.floor((t - secs) * 1000))
end

-- Record ids unique per nginx: the worker's pid and start time, and a counter (nginx's
-- $request_id would draw 16 random bytes from OpenSSL for every request).
local id_prefix, id_count = nil, 0
local function record_id()
  if not id_prefix then
    id_prefix = string.format("%x%x", math.floor(ngx.now() * 1000), ngx.worker.pid())
  end
  id_count = id_count + 1
  return string.format('"%s%08x"', id_prefix, id_count)
end

-- JSON text of a Lua value; lua-cjson 2.1.0 (Debian's) writes "/" as "\/", which JSON allows but
-- the proxy's records do not do: undone here (every "/" it writes is escaped, so each "\/" is one)
local function e(v)
  if type(v) == "number" and v == math.floor(v) and math.abs(v) <= MAX_EXACT_ID then
    return string.format("%d", v)
  end
  local text = cjson.encode(v)
  if text:find("\\/", 1, true) then text = text:gsub("\\/", "/") end
  return text
end

local function json_line(m, layer, outcome, verdict_json, duration_ms)
  local parts = {
    '{"recordId":', record_id(), ',"time":', rfc3339(ngx.req.start_time()),
    ',"durationMs":', string.format("%.3f", duration_ms),
    ',"kind":"request","transport":"http","httpMethod":"POST","path":', e(ngx.var.request_uri),
    ',"method":"tools/call","id":', e(m.id),
  }
  if m.tool then parts[#parts + 1] = ',"tool":' .. e(m.tool) end
  local sid = ngx.var.http_mcp_session_id
  if sid then parts[#parts + 1] = ',"sessionId":' .. e(sid) end
  if m.protocol then parts[#parts + 1] = ',"protocolVersion":' .. e(m.protocol) end
  -- the status the client got: none when no head was sent (client gone, connection closed)
  local status = m.status or (m.no_head and m.no_head.status)
  parts[#parts + 1] = ',"httpStatuses":[' .. (status and tostring(status) or "") .. '],"outcome":' .. e(outcome)
    .. ',"layer":' .. e(layer) .. ',"classified":true,"verdict":' .. verdict_json
    .. ',"requestBytes":' .. m.request_bytes .. ',"responseBytes":' .. m.response_bytes
  -- cancelled: the client hung up before the response ended (proxy's meaning). nginx says
  -- request_completion "OK" when it finished the request itself, upstream cut included
  if not m.eof and not m.no_head and ngx.var.request_completion ~= "OK" then
    parts[#parts + 1] = ',"cancelled":true'
  end
  parts[#parts + 1] = "}"
  return table.concat(parts)
end

--- log phase: the verdict, the $mcp_* variables, the JSON line ($mcp_record) and metrics.
function _M.log()
  local m = ngx.ctx.mcp
  if not m or m.failed then return end
  local v = verdict_of(m)
  if m.c then
    lib.mcpt_classifier_free(ffi.gc(m.c, nil))
    m.c = nil
  end
  if not v then return end
  local layer = ffi.string(lib.mcpt_layer_name(lib.mcpt_verdict_layer(v)))
  local outcome = ffi.string(lib.mcpt_outcome_name(lib.mcpt_verdict_outcome(v)))
  local code = lib.mcpt_verdict_jsonrpc_code(v, code_out) == 1 and tostring(code_out[0]) or ""
  code = code:gsub("LL$", "")
  local vjson = ffi.string(lib.mcpt_verdict_json(v, len_out), len_out[0])
  lib.mcpt_verdict_free(ffi.gc(v, nil))
  ngx.update_time()
  local duration_ms = (ngx.now() - ngx.req.start_time()) * 1000
  ngx.var.mcp_layer, ngx.var.mcp_outcome = layer, outcome
  ngx.var.mcp_tool, ngx.var.mcp_method = m.tool or "", m.method
  ngx.var.mcp_jsonrpc_code = code
  ngx.var.mcp_record = json_line(m, layer, outcome, vjson, duration_ms)
  observe(m.tool, layer, outcome, duration_ms / 1000)
end

local function escape_label(v)
  return (v:gsub('[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" }))
end

--- content phase of /metrics: the Prometheus text of the series proxy --ui exports.
function _M.metrics()
  local dict = ngx.shared[cfg.dict]
  local server = escape_label(cfg.server)
  local calls, tools = {}, {}
  for _, k in ipairs(dict and dict:get_keys(0) or {}) do
    local kind, rest = k:match("^(%a)\t(.*)$")
    if kind == "c" then calls[#calls + 1] = rest
    elseif kind == "n" then tools[#tools + 1] = rest end
  end
  table.sort(calls)
  table.sort(tools)
  local out = {
    "# HELP mcp_triage_calls_total tools/call exchanges observed by the proxy, by tool and by the layer and outcome of their verdict.",
    "# TYPE mcp_triage_calls_total counter",
  }
  for _, rest in ipairs(calls) do
    local tool, layer, outcome = rest:match("^(.*)\t([^\t]*)\t([^\t]*)$")
    out[#out + 1] = string.format('mcp_triage_calls_total{server="%s",tool="%s",layer="%s",outcome="%s"} %d',
      server, escape_label(tool), escape_label(layer), escape_label(outcome), dict:get("c\t" .. rest) or 0)
  end
  out[#out + 1] = "# HELP mcp_triage_call_duration_seconds Time from a tools/call request's arrival at the proxy to the end of its response."
  out[#out + 1] = "# TYPE mcp_triage_call_duration_seconds histogram"
  for _, tool in ipairs(tools) do
    local t, cum = escape_label(tool), 0
    local count = dict:get("n\t" .. tool) or 0
    for i = 1, #BUCKETS do
      cum = cum + (dict:get("b\t" .. tool .. "\t" .. i) or 0)
      out[#out + 1] = string.format('mcp_triage_call_duration_seconds_bucket{server="%s",tool="%s",le="%s"} %d',
        server, t, BUCKET_LABELS[i], cum)
    end
    out[#out + 1] = string.format('mcp_triage_call_duration_seconds_bucket{server="%s",tool="%s",le="+Inf"} %d', server, t, count)
    out[#out + 1] = string.format('mcp_triage_call_duration_seconds_sum{server="%s",tool="%s"} %.17g', server, t, dict:get("s\t" .. tool) or 0)
    out[#out + 1] = string.format('mcp_triage_call_duration_seconds_count{server="%s",tool="%s"} %d', server, t, count)
  end
  ngx.header["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
  ngx.print(table.concat(out, "\n"), "\n")
end

return _M

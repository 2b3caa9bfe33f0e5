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
--   init_worker_by_lua   mcp_triage.init_worker()    the timer that moves metrics to the shared dict
-- and content_by_lua mcp_triage.metrics() on a /metrics location.
--
-- Cost: every exchange passes through here, so the per-exchange work is kept to FFI calls the
-- library does in Rust (the request is parsed by mcpt_request_parse, the JSON line written by
-- mcpt_record_write) and a few ngx.var reads; metrics are counted in plain Lua tables and added
-- to the shared dict once per metrics_flush_s (bench/nginx-module-overhead.sh measures it).
--
-- Nothing here may break the proxied request: every ABI error is logged with ngx.log and the
-- exchange passes as it would without the module.

local ffi = require "ffi"

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
  const char *request_method;
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
typedef struct McptRequest McptRequest;
typedef struct McptRecordFields {
  const uint8_t *record_id; size_t record_id_len;
  double start_unix_s;
  double duration_ms;
  const uint8_t *path; size_t path_len;
  const uint8_t *session_id; size_t session_id_len;
  const uint8_t *protocol_version; size_t protocol_version_len;
  uint16_t http_status;
  uint64_t request_bytes;
  uint64_t response_bytes;
  int32_t cancelled;
} McptRecordFields;
int32_t mcpt_request_parse(const uint8_t *body, size_t len, McptRequest **out);
const uint8_t *mcpt_request_tool(const McptRequest *r, size_t *len);
int32_t mcpt_request_expect_id(const McptRequest *r, McptCallOptions *opts);
void    mcpt_request_free(McptRequest *r);
int32_t mcpt_record_write(const McptRequest *r, const McptVerdict *v, const McptRecordFields *f,
                          uint8_t *buf, size_t cap, size_t *len);
]]

local INTERRUPT_CONNECTION_LOST, INTERRUPT_TIMED_OUT = 1, 2
local ERR_INVALID_ARGUMENT = -2

-- Upper bounds (seconds) of the latency histogram: DURATION_BUCKETS of
-- crates/mcp-triage-proxy/src/ui/metrics.rs, written as Rust's `{}` prints them.
local BUCKETS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300 }
local BUCKET_LABELS = { "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
  "5", "10", "30", "60", "300" }
local OTHER_TOOL, UNNAMED_TOOL, MAX_TOOL_LABEL_BYTES = "other", "unknown", 128
-- Tool names whose label (own or `other`) a worker remembers, so that a known name costs no
-- shared-dict lookup; beyond this many distinct names, later ones are looked up every time.
local MAX_CACHED_LABELS = 4096

local _M = { _VERSION = "0.1" }

-- the declarations at load time (once per Lua VM): the ctypes below need them
ffi.cdef(C_DEF)

local lib            -- the loaded .so
local cfg = {        -- defaults; init() overrides
  so_path = "libmcp_triage_ffi.so",
  max_body_bytes = 1048576,  -- request bodies larger than this pass unclassified
  read_timeout_ms = 60000,   -- nginx's proxy_read_timeout: silence this long = TIMED_OUT
  -- nginx's proxy_buffer_size (default one memory page, 4k here): an upstream head that filled
  -- it is nginx's "upstream sent too big header", recorded as such (see no_upstream_head)
  proxy_buffer_size = 4096,
  limits_json = nil,         -- the core's Limits as camelCase JSON (nil = defaults)
  dict = "mcp_triage",       -- lua_shared_dict of the metrics
  server = "upstream",       -- the `server` label, the upstream's authority
  max_tools = 100,           -- distinct tool labels before `other`
  -- seconds between two moves of a worker's metrics into the shared dict (0 = at every
  -- exchange): /metrics lags behind the JSON log by up to this long
  metrics_flush_s = 1,
  -- the upstream closed the connection after the request, before a response head: close the
  -- client's connection too (as `mcp-triage proxy` does) instead of nginx's 502, so the client
  -- sees the failure it would see without the gateway
  close_on_upstream_loss = true,
}
local out_classifier = ffi.new("McptClassifier*[1]")
local out_verdict = ffi.new("McptVerdict*[1]")
local out_request = ffi.new("McptRequest*[1]")
local len_out = ffi.new("size_t[1]")
local code_out = ffi.new("int64_t[1]")
local LAYER, OUTCOME = {}, {}  -- wire names by code, read from the library once

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
  -- every function now, so that a library older than this file fails at startup, not per request
  for name in C_DEF:gmatch("(mcpt_[%w_]+)%(") do
    if not pcall(function() return lib[name] end) then
      error("mcp_triage.init: " .. cfg.so_path .. " has no " .. name .. " (an older library?)")
    end
  end
  for code = 1, 4 do LAYER[code] = ffi.string(lib.mcpt_layer_name(code)) end
  for code = 1, 15 do OUTCOME[code] = ffi.string(lib.mcpt_outcome_name(code)) end
  return ffi.string(lib.mcpt_version())
end

--- access phase: read the body once; a tools/call request (parsed by the library) is kept in
--- ngx.ctx.mcp with what the other phases need.
function _M.access()
  if ngx.req.get_method() ~= "POST" then return end
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body == nil then
    -- empty, or spooled to a file because it exceeded client_body_buffer_size
    if ngx.req.get_body_file() then
      ngx.log(ngx.INFO, "mcp_triage: request body spooled to a file, not classified")
    end
    return
  end
  if #body > cfg.max_body_bytes then
    ngx.log(ngx.INFO, "mcp_triage: request body of ", #body, " bytes over max_body_bytes, not classified")
    return
  end
  -- a batch, a notification or anything not a tools/call request passes (0)
  local rc = lib.mcpt_request_parse(body, #body, out_request)
  if rc ~= 1 then
    if rc < 0 then ngx.log(ngx.ERR, "mcp_triage: request_parse failed (", rc, "): ", last_error()) end
    return
  end
  -- freed by log(), or by the GC when the request never gets there
  local req = ffi.gc(out_request[0], lib.mcpt_request_free)
  local tool = lib.mcpt_request_tool(req, len_out)
  ngx.ctx.mcp = {
    req = req, tool = tool ~= nil and ffi.string(tool, len_out[0]) or nil,
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
-- to classify. Returns the interruption kind and reason (and true when nginx refused a head too
-- big for proxy_buffer_size), or nil when the upstream answered.
local function no_upstream_head(status)
  if status < 500 or last_of(ngx.var.upstream_header_time) ~= "-" then return nil end
  if status == 504 then
    return INTERRUPT_TIMED_OUT, "the upstream sent no response head within proxy_read_timeout (nginx 504)"
  end
  if last_of(ngx.var.upstream_connect_time) == "-" then
    return INTERRUPT_CONNECTION_LOST, "nginx could not connect to the upstream (nginx " .. status .. ")"
  end
  -- the head filled nginx's header buffer without ending ("upstream sent too big header"):
  -- nginx read exactly proxy_buffer_size bytes then; any other failure leaves it short of full
  if (tonumber(last_of(ngx.var.upstream_bytes_received)) or 0) >= cfg.proxy_buffer_size then
    return INTERRUPT_CONNECTION_LOST, "the upstream's response head is larger than proxy_buffer_size ("
      .. cfg.proxy_buffer_size .. " bytes; nginx: upstream sent too big header, answered " .. status .. ")",
      true
  end
  return INTERRUPT_CONNECTION_LOST, "the upstream closed the connection before a response head"
end

-- Reused for every call (a worker runs one Lua call at a time and the library copies what it
-- keeps): no allocation per response for the header array and the options.
local header_slots = 8  -- grows (doubling) for a response with more classified headers
local static_headers = ffi.new("McptHeader[?]", header_slots)
local opts = ffi.new("McptCallOptions")

-- The response headers the core reads (ResponseClassifier::new in
-- crates/mcp-triage-core/src/classify.rs: the first Content-Type and Retry-After, every
-- WWW-Authenticate, every Content-Encoding, which the core undoes so that a gzip body is read as
-- the JSON it holds): the verdict is the same as with every header, and reading four by name
-- costs far less than the table of all of them ngx.resp.get_headers() builds.
local CLASSIFIED_HEADERS = { "content-type", "content-encoding", "retry-after", "www-authenticate" }

-- Adds header `name` (`value`: nil, a string, or a table of repeated values) at
-- static_headers[n..]; returns the new count. Every value goes in (a response may carry many
-- WWW-Authenticate lines, and the Bearer challenge a client must act on may be the last): the
-- array doubles when full, and the larger one is kept for the worker's later responses.
local function put_header(n, name, value)
  if type(value) == "table" then
    for _, v in ipairs(value) do n = put_header(n, name, v) end
  elseif value ~= nil then
    if n >= header_slots then
      local bigger = ffi.new("McptHeader[?]", header_slots * 2)
      ffi.copy(bigger, static_headers, ffi.sizeof("McptHeader") * header_slots)
      static_headers, header_slots = bigger, header_slots * 2
    end
    local arr = static_headers
    arr[n].name, arr[n].name_len, arr[n].value, arr[n].value_len = name, #name, value, #value
    n = n + 1
  end
  return n
end

-- The McptHeader array of the classified headers nginx sends on. `keep` (returned) holds the
-- Lua strings the array points into: keep it alive until the call that reads them.
local function header_array()
  local h = ngx.header
  local keep, n = {}, 0
  for i = 1, #CLASSIFIED_HEADERS do
    local name = CLASSIFIED_HEADERS[i]
    local value = h[name]
    keep[i] = value
    n = put_header(n, name, value)
  end
  return static_headers, n, keep
end

--- header_filter phase: the classifier, from the status and headers nginx sends on.
function _M.header_filter()
  local m = ngx.ctx.mcp
  if not m then return end
  local status = ngx.status
  local kind, reason, too_big = no_upstream_head(status)
  if kind then
    m.no_head = { kind = kind, reason = reason, status = status }
    -- a head too big is nginx's refusal, not a loss: nginx's 502 goes out
    if kind == INTERRUPT_CONNECTION_LOST and cfg.close_on_upstream_loss and not too_big
        and last_of(ngx.var.upstream_connect_time) ~= "-" then
      m.no_head.status = nil -- nothing is sent: the client's connection is closed
      return ngx.exit(ngx.ERROR)
    end
    return
  end
  local arr, n, keep = header_array()
  local o = opts
  lib.mcpt_request_expect_id(m.req, o)
  o.protocol_version = m.protocol
  -- nginx's clock of this event-loop turn, as $request_time uses: ngx.update_time() would
  -- format five time strings for a millisecond nobody sees
  local now = ngx.now()
  o.now_unix_ms = math.floor(now * 1000)
  o.limits_json = cfg.limits_json
  local rc = lib.mcpt_classifier_new(status, arr, n, o, out_classifier)
  if rc ~= 0 and m.protocol then
    -- a protocol version the core does not know: classify leniently rather than not at all
    ngx.log(ngx.WARN, "mcp_triage: MCP-Protocol-Version ", m.protocol, ": ", last_error(),
      "; classified as version unknown")
    o.protocol_version = nil
    rc = lib.mcpt_classifier_new(status, arr, n, o, out_classifier)
  end
  o.protocol_version, o.expect_id_string, o.limits_json = nil, nil, nil -- no dangling pointers
  keep = nil
  if rc ~= 0 then
    ngx.log(ngx.ERR, "mcp_triage: classifier_new failed (", rc, "): ", last_error())
    lib.mcpt_request_free(ffi.gc(m.req, nil))
    ngx.ctx.mcp = nil
    return
  end
  -- freed by log(), or by the GC when the request is aborted before the log phase
  m.c = ffi.gc(out_classifier[0], lib.mcpt_classifier_free)
  m.status = status
  m.last_chunk = now
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
    local silent_ms = (ngx.now() - m.last_chunk) * 1000
    local kind = silent_ms >= cfg.read_timeout_ms and INTERRUPT_TIMED_OUT or INTERRUPT_CONNECTION_LOST
    rc = lib.mcpt_classifier_interrupted(m.c, kind, "response body ended before its end (nginx)",
      out_verdict)
  end
  if rc ~= 0 then
    ngx.log(ngx.ERR, "mcp_triage: verdict failed (", rc, "): ", last_error())
    return nil
  end
  -- freed by log() right after its few reads, before anything that could raise an error
  return out_verdict[0]
end

-- A worker's labels of tool names (the name, or `other` past max_tools), once decided.
local labels, labels_n = {}, 0

-- The label of a tool name: its own series for the first max_tools names nginx saw (all
-- workers together), `other` after that, `unknown` for a call without a name.
local function tool_label(tool)
  if tool == nil then return UNNAMED_TOOL end
  local known = labels[tool]
  if known then return known end
  local name = tool
  if #name > MAX_TOOL_LABEL_BYTES then
    local e = MAX_TOOL_LABEL_BYTES
    -- cut at a UTF-8 character boundary (not inside a continuation byte)
    while e > 0 and bit.band(name:byte(e + 1), 0xC0) == 0x80 do e = e - 1 end
    name = name:sub(1, e)
  end
  local dict = ngx.shared[cfg.dict]
  if not dict then return name end
  -- "t\t<name>" is true for a name with its own series, false for one counted as `other`;
  -- add() makes one worker the first to see a name, so each name takes one place of the cap
  local key = "t\t" .. name
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
  local label = own and name or OTHER_TOOL
  if labels_n < MAX_CACHED_LABELS then
    labels[tool], labels_n = label, labels_n + 1
  end
  return label
end

-- This worker's metrics since the last flush: label -> { calls = { [layer * 32 + outcome] = n },
-- buckets = { [i] = n }, sum = seconds, n = count }.
local pending = {}

-- Adds a worker's pending metrics to the shared dict (all workers' sums) and starts afresh.
local function flush()
  local dict = ngx.shared[cfg.dict]
  local batch = pending
  pending = {}
  if not dict then return end
  for label, p in pairs(batch) do
    for lo, n in pairs(p.calls) do
      local key = "c\t" .. label .. "\t" .. LAYER[bit.rshift(lo, 5)] .. "\t" .. OUTCOME[bit.band(lo, 31)]
      local ok, err = dict:incr(key, n, 0)
      if not ok then ngx.log(ngx.ERR, "mcp_triage: metrics dict: ", err) end
    end
    for i, n in pairs(p.buckets) do dict:incr("b\t" .. label .. "\t" .. i, n, 0) end
    dict:incr("s\t" .. label, p.sum, 0)
    dict:incr("n\t" .. label, p.n, 0)
  end
end

-- Counts one call in this worker's pending metrics.
local function observe(tool, layer, outcome, seconds)
  local label = tool_label(tool)
  local p = pending[label]
  if not p then
    p = { calls = {}, buckets = {}, sum = 0, n = 0 }
    pending[label] = p
  end
  local lo = layer * 32 + outcome
  p.calls[lo] = (p.calls[lo] or 0) + 1
  for i = 1, #BUCKETS do
    if seconds <= BUCKETS[i] then p.buckets[i] = (p.buckets[i] or 0) + 1 break end
  end
  p.sum, p.n = p.sum + seconds, p.n + 1
  if cfg.metrics_flush_s <= 0 then flush() end
end

--- init_worker phase: moves this worker's metrics to the shared dict every metrics_flush_s
--- seconds, and a last time when the worker exits (the timer then runs early).
function _M.init_worker()
  if cfg.metrics_flush_s > 0 then
    local ok, err = ngx.timer.every(cfg.metrics_flush_s, flush)
    if not ok then ngx.log(ngx.ERR, "mcp_triage: metrics timer: ", err) end
  end
end

-- Record ids unique per nginx: the worker's pid and start time, and a counter (nginx's
-- $request_id would draw 16 random bytes from OpenSSL for every request).
local id_prefix, id_count = nil, 0
local function record_id()
  if not id_prefix then
    id_prefix = string.format("%x%x", math.floor(ngx.now() * 1000), ngx.worker.pid())
  end
  id_count = id_count + 1
  return id_prefix .. bit.tohex(id_count, 8)
end

-- One buffer for every JSON line (grown when a line does not fit).
local line_cap = 16384
local line_buf = ffi.new("uint8_t[?]", line_cap)
local fields = ffi.new("McptRecordFields")

-- Sets a (pointer, length) pair of `fields` to a Lua string, or NULL for nil.
local function set_text(f, ptr, len, text)
  f[ptr], f[len] = text, text and #text or 0
end

-- The JSON line of the exchange (mcpt_record_write), or nil after an error.
local function json_line(m, v, duration_ms)
  local f = fields
  local rid, uri, sid = record_id(), ngx.var.request_uri, ngx.var.http_mcp_session_id
  set_text(f, "record_id", "record_id_len", rid)
  set_text(f, "path", "path_len", uri)
  set_text(f, "session_id", "session_id_len", sid)
  set_text(f, "protocol_version", "protocol_version_len", m.protocol)
  f.start_unix_s, f.duration_ms = ngx.req.start_time(), duration_ms
  -- the status the client got: none when no head was sent (client gone, connection closed)
  f.http_status = m.status or (m.no_head and m.no_head.status) or 0
  f.request_bytes, f.response_bytes = m.request_bytes, m.response_bytes
  -- cancelled: the client hung up before the response ended (proxy's meaning). nginx says
  -- request_completion "OK" when it finished the request itself, upstream cut included
  f.cancelled = (not m.eof and not m.no_head and ngx.var.request_completion ~= "OK") and 1 or 0
  local rc = lib.mcpt_record_write(m.req, v, f, line_buf, line_cap, len_out)
  if rc == ERR_INVALID_ARGUMENT and len_out[0] > line_cap then
    line_cap = tonumber(len_out[0])
    line_buf = ffi.new("uint8_t[?]", line_cap)
    rc = lib.mcpt_record_write(m.req, v, f, line_buf, line_cap, len_out)
  end
  f.record_id, f.path, f.session_id, f.protocol_version = nil, nil, nil, nil -- no dangling pointers
  if rc ~= 0 then
    ngx.log(ngx.ERR, "mcp_triage: record_write failed (", rc, "): ", last_error())
    return nil
  end
  return ffi.string(line_buf, len_out[0])
end

-- Frees what log() is done with: the classifier and the request.
local function release(m)
  if m.c then lib.mcpt_classifier_free(ffi.gc(m.c, nil)) m.c = nil end
  if m.req then lib.mcpt_request_free(ffi.gc(m.req, nil)) m.req = nil end
end

--- log phase: the verdict, the $mcp_* variables, the JSON line ($mcp_record) and metrics.
function _M.log()
  local m = ngx.ctx.mcp
  if not m then return end
  if m.failed then release(m) return end
  local v = verdict_of(m)
  if m.c then lib.mcpt_classifier_free(ffi.gc(m.c, nil)) m.c = nil end
  if not v then release(m) return end
  local layer, outcome = lib.mcpt_verdict_layer(v), lib.mcpt_verdict_outcome(v)
  local code = ""
  if lib.mcpt_verdict_jsonrpc_code(v, code_out) == 1 then
    code = tostring(code_out[0]):gsub("LL$", "")
  end
  local duration_ms = (ngx.now() - ngx.req.start_time()) * 1000
  local line = json_line(m, v, duration_ms)
  lib.mcpt_verdict_free(v)
  release(m)
  ngx.var.mcp_layer, ngx.var.mcp_outcome = LAYER[layer], OUTCOME[outcome]
  ngx.var.mcp_tool, ngx.var.mcp_method = m.tool or "", "tools/call"
  ngx.var.mcp_jsonrpc_code = code
  if line then ngx.var.mcp_record = line end
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

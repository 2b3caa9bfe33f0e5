/*
 * ngx_http_mcp_triage_module: the mcp-triage classifier inside nginx as a native HTTP module,
 * linked with the staticlib of crates/mcp-triage-ffi (header crates/mcp-triage-ffi/include).
 *
 * Why a C module next to the LuaJIT one (integrations/nginx/mcp_triage.lua): lua-nginx-module
 * entering four phases costs about 1.2x plain nginx's instructions per exchange before any
 * work, which leaves no room for issue 20's target (module <= 1.5x plain nginx). Here the
 * per-exchange work is the FFI calls plus a few pointer moves; everything the verdict depends on
 * is decided by the Rust core, exactly as in the Lua module, the proxy and the client.
 *
 * What it does per request in a location with `mcp_triage on`:
 *   precontent phase  reads the request body (in memory, up to mcp_triage_max_body_bytes);
 *                     mcpt_request_parse keeps a tools/call request with an id
 *   header filter     mcpt_classifier_new with the status and the four headers the core reads;
 *                     no response head from the upstream: the proxy's verdicts (see no_head)
 *   body filter       mcpt_classifier_feed with each buffer as it passes (never buffered or
 *                     changed); once decided, buffers are only counted
 *   log phase         (first, before the access log) the verdict, the $mcp_* variables, the
 *                     JSON line $mcp_record (mcpt_record_write) and the metrics
 * and `mcp_triage_metrics` on a location: the Prometheus text from the shared zone.
 *
 * Nothing here may break the proxied request: every ABI error is logged and the exchange passes
 * unclassified, as it would without the module.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "mcp_triage.h"

#define MCPT_MAX_HEADERS      8    /* classified headers on the stack; more come from the pool */
#define MCPT_TOOL_LABEL_MAX   128
#define MCPT_LAYERS           5    /* layer codes 1..4 */
#define MCPT_OUTCOMES         16   /* outcome codes 1..15 */
#define MCPT_BUCKETS          14
#define MCPT_RECORD_CAP       4096 /* first try of the JSON line; grown when it does not fit */

/* Upper bounds of the latency histogram in milliseconds: DURATION_BUCKETS of
 * crates/mcp-triage-proxy/src/ui/metrics.rs; the labels as Rust's `{}` prints the seconds. */
static const ngx_msec_t  mcpt_bucket_ms[MCPT_BUCKETS] = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000
};
static const char  *mcpt_bucket_label[MCPT_BUCKETS] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30",
    "60", "300"
};


/* One tool label's series in the shared zone; every counter is added to atomically. */
typedef struct {
    ngx_atomic_t        used;        /* set (with a barrier) once name is written */
    uint32_t            hash;
    size_t              name_len;
    u_char              name[MCPT_TOOL_LABEL_MAX];
    ngx_atomic_t        calls[MCPT_LAYERS][MCPT_OUTCOMES];
    ngx_atomic_t        buckets[MCPT_BUCKETS];
    ngx_atomic_t        count;
    ngx_atomic_t        sum_ms;
} mcpt_series_t;

/* The shared zone: max_tools named series plus `other` and `unknown`. */
typedef struct {
    ngx_uint_t          named;       /* names that took a place of max_tools */
    ngx_uint_t          nseries;
    mcpt_series_t       series[1];
} mcpt_shm_t;

typedef struct {
    ngx_str_t           server;      /* the `server` label */
    size_t              max_body;
    ngx_msec_t          read_timeout;
    ngx_uint_t          max_tools;
    ngx_flag_t          close_on_upstream_loss;
    ngx_str_t           limits_json; /* NUL-terminated, or empty */
    ngx_shm_zone_t     *zone;
    ngx_int_t           upstream_header_time;   /* variable indexes, read only without a head */
    ngx_int_t           upstream_connect_time;
} mcpt_main_conf_t;

typedef struct {
    ngx_flag_t          enable;
} mcpt_loc_conf_t;

/* What one exchange keeps between phases (r->pool). */
typedef struct {
    McptRequest        *req;
    McptClassifier     *c;
    McptVerdict        *v;
    ngx_str_t           protocol;    /* MCP-Protocol-Version, data NULL when absent */
    ngx_str_t           session;     /* Mcp-Session-Id, data NULL when absent */
    ngx_str_t           tool;        /* $mcp_tool, copied in the log phase */
    off_t               request_bytes;
    off_t               response_bytes;
    ngx_msec_t          last_chunk;
    ngx_uint_t          status;      /* the status the client got, 0 = none */
    int32_t             no_head_kind;
    const char         *no_head_reason;
    /* nginx refused the upstream's head as larger than proxy_buffer_size: nginx's 502 goes
     * out (the upstream did not break off; close_on_upstream_loss does not apply) */
    unsigned            head_too_big:1;
    int32_t             layer;
    int32_t             outcome;
    ngx_str_t           record;      /* the JSON line, empty until the log phase */
    ngx_str_t           jsonrpc_code;
    unsigned            body_read:1;
    unsigned            decided:1;
    unsigned            failed:1;
    unsigned            eof:1;
    unsigned            no_head:1;
    unsigned            logged:1;
} mcpt_ctx_t;


static ngx_int_t mcpt_add_variables(ngx_conf_t *cf);
static ngx_int_t mcpt_postconfiguration(ngx_conf_t *cf);
static void *mcpt_create_main_conf(ngx_conf_t *cf);
static char *mcpt_init_main_conf(ngx_conf_t *cf, void *conf);
static void *mcpt_create_loc_conf(ngx_conf_t *cf);
static char *mcpt_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static char *mcpt_metrics_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *mcpt_limits_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static ngx_int_t mcpt_init_zone(ngx_shm_zone_t *zone, void *data);


static ngx_command_t  mcpt_commands[] = {

    { ngx_string("mcp_triage"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(mcpt_loc_conf_t, enable), NULL },

    { ngx_string("mcp_triage_server"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot, NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(mcpt_main_conf_t, server), NULL },

    { ngx_string("mcp_triage_max_body_bytes"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot, NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(mcpt_main_conf_t, max_body), NULL },

    { ngx_string("mcp_triage_read_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot, NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(mcpt_main_conf_t, read_timeout), NULL },

    { ngx_string("mcp_triage_max_tools"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot, NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(mcpt_main_conf_t, max_tools), NULL },

    { ngx_string("mcp_triage_close_on_upstream_loss"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot, NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(mcpt_main_conf_t, close_on_upstream_loss), NULL },

    { ngx_string("mcp_triage_limits_json"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      mcpt_limits_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL },

    { ngx_string("mcp_triage_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      mcpt_metrics_directive, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL },

      ngx_null_command
};

static ngx_http_module_t  mcpt_module_ctx = {
    mcpt_add_variables,            /* preconfiguration */
    mcpt_postconfiguration,        /* postconfiguration */
    mcpt_create_main_conf,         /* create main configuration */
    mcpt_init_main_conf,           /* init main configuration */
    NULL, NULL,                    /* server configuration */
    mcpt_create_loc_conf,          /* create location configuration */
    mcpt_merge_loc_conf            /* merge location configuration */
};

ngx_module_t  ngx_http_mcp_triage_module = {
    NGX_MODULE_V1,
    &mcpt_module_ctx, mcpt_commands, NGX_HTTP_MODULE,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NGX_MODULE_V1_PADDING
};

static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;

/* wire names by code, read from the library once */
static ngx_str_t  mcpt_layer_names[MCPT_LAYERS];
static ngx_str_t  mcpt_outcome_names[MCPT_OUTCOMES];


/* ---- small helpers ---- */

static void
mcpt_log_abi_error(ngx_http_request_t *r, const char *what, int32_t rc)
{
    const char  *e = mcpt_last_error();

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "mcp_triage: %s failed (%D): %s", what, rc, e ? e : "(no message)");
}

/* Frees what the library gave this exchange; runs from the log phase, or from the pool
 * cleanup when a request never gets there. */
static void
mcpt_release(void *data)
{
    mcpt_ctx_t  *ctx = data;

    if (ctx->c) { mcpt_classifier_free(ctx->c); ctx->c = NULL; }
    if (ctx->v) { mcpt_verdict_free(ctx->v); ctx->v = NULL; }
    if (ctx->req) { mcpt_request_free(ctx->req); ctx->req = NULL; }
}

/* The first MCP-Protocol-Version and Mcp-Session-Id of the request, in one pass (as
 * $http_mcp_protocol_version and $http_mcp_session_id give them). */
static void
mcpt_request_headers(ngx_http_request_t *r, mcpt_ctx_t *ctx)
{
    ngx_list_part_t  *part = &r->headers_in.headers.part;
    ngx_table_elt_t  *h = part->elts;
    ngx_uint_t        i;

    for (i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                return;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }
        /* nginx keeps each request header's name lower-cased beside it (lowcase_key): a
         * plain memcmp, not a case-folding loop per byte */
        if (h[i].key.len == 20 && ctx->protocol.data == NULL
            && ngx_memcmp(h[i].lowcase_key, "mcp-protocol-version", 20) == 0)
        {
            ctx->protocol = h[i].value;
        } else if (h[i].key.len == 14 && ctx->session.data == NULL
                   && ngx_memcmp(h[i].lowcase_key, "mcp-session-id", 14) == 0)
        {
            ctx->session = h[i].value;
        }
    }
}


/* ---- precontent phase: the request ---- */

/* The request body as one contiguous piece, or NULL when it is not all in memory. */
static u_char *
mcpt_body_bytes(ngx_http_request_t *r, size_t *len)
{
    ngx_chain_t  *cl;
    ngx_buf_t    *b;
    size_t        n = 0;
    u_char       *p, *body;

    *len = 0;
    if (r->request_body == NULL || r->request_body->temp_file || r->request_body->bufs == NULL) {
        return NULL;
    }
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        if (b->in_file || !ngx_buf_in_memory(b)) {
            return NULL;
        }
        n += b->last - b->pos;
    }
    cl = r->request_body->bufs;
    if (cl->next == NULL) {
        /* the usual case: one buffer, read in place */
        *len = n;
        return cl->buf->pos;
    }
    body = ngx_pnalloc(r->pool, n ? n : 1);
    if (body == NULL) {
        return NULL;
    }
    for (p = body; cl; cl = cl->next) {
        p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }
    *len = n;
    return body;
}

/* The body is read: keep a tools/call request (with an id) for the later phases. */
static void
mcpt_parse_request(ngx_http_request_t *r, mcpt_ctx_t *ctx)
{
    mcpt_main_conf_t    *mcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_triage_module);
    ngx_pool_cleanup_t  *cln;
    u_char              *body;
    size_t               len;
    int32_t              rc;

    body = mcpt_body_bytes(r, &len);
    if (body == NULL) {
        if (r->request_body && r->request_body->temp_file) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "mcp_triage: request body spooled to a file, not classified");
        }
        return;
    }
    if (len > mcf->max_body) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "mcp_triage: request body of %uz bytes over max_body_bytes, not classified",
                      len);
        return;
    }
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return;
    }
    /* a batch, a notification or anything not a tools/call request passes (0) */
    rc = mcpt_request_parse(body, len, &ctx->req);
    if (rc != 1) {
        if (rc < 0) {
            mcpt_log_abi_error(r, "request_parse", rc);
        }
        ctx->req = NULL;
        return;
    }
    cln->handler = mcpt_release;
    cln->data = ctx;
    ctx->request_bytes = len;
    mcpt_request_headers(r, ctx);
}

static void
mcpt_body_handler(ngx_http_request_t *r)
{
    mcpt_ctx_t  *ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);

    mcpt_parse_request(r, ctx);
    r->preserve_body = 1;
    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}

/* Reads the body once (as ngx_http_mirror_module does); the proxy then sends the same bytes. */
static ngx_int_t
mcpt_precontent_handler(ngx_http_request_t *r)
{
    mcpt_loc_conf_t  *lcf = ngx_http_get_module_loc_conf(r, ngx_http_mcp_triage_module);
    mcpt_ctx_t       *ctx;
    ngx_int_t         rc;

    if (!lcf->enable || r != r->main || r->method != NGX_HTTP_POST) {
        return NGX_DECLINED;
    }
    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);
    if (ctx) {
        return NGX_DECLINED;    /* back here after the body was read */
    }
    ctx = ngx_pcalloc(r->pool, sizeof(mcpt_ctx_t));
    if (ctx == NULL) {
        return NGX_DECLINED;
    }
    ngx_http_set_ctx(r, ctx, ngx_http_mcp_triage_module);
    rc = ngx_http_read_client_request_body(r, mcpt_body_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }
    ngx_http_finalize_request(r, NGX_DONE);
    return NGX_DONE;
}


/* ---- header filter: the classifier ---- */

/* The last value of an $upstream_* list ("-, 0.002" after nginx tried two servers) is "-". */
static ngx_flag_t
mcpt_last_is_dash(ngx_http_request_t *r, ngx_int_t index)
{
    ngx_http_variable_value_t  *vv = ngx_http_get_indexed_variable(r, index);
    u_char                     *p;

    if (vv == NULL || vv->not_found || vv->len == 0) {
        return 0;
    }
    p = vv->data + vv->len;
    while (p > vv->data && (p[-1] == ' ' || p[-1] == ',')) {
        p--;
    }
    return p > vv->data && p[-1] == '-' && (p - 1 == vv->data || p[-2] == ' ' || p[-2] == ',');
}

/* The upstream's head filled nginx's header buffer (proxy_buffer_size) without ending: nginx
 * logged "upstream sent too big header" and answers 502. The buffer holds exactly
 * proxy_buffer_size bytes then, and any other failure before a head leaves it short of full. */
static ngx_flag_t
mcpt_head_too_big(ngx_http_request_t *r)
{
    ngx_http_upstream_t  *u = r->upstream;

    return u->state != NULL && u->conf != NULL && u->conf->buffer_size > 0
           && u->state->bytes_received >= (off_t) u->conf->buffer_size;
}

/* nginx answered itself because the upstream sent no response head: there is no response to
 * classify; remembers the interruption for the log phase. Returns 1 when that is the case. */
static ngx_flag_t
mcpt_no_head(ngx_http_request_t *r, mcpt_main_conf_t *mcf, mcpt_ctx_t *ctx, ngx_uint_t status)
{
    u_char  *reason;

    if (status < 500 || r->upstream == NULL
        || !mcpt_last_is_dash(r, mcf->upstream_header_time))
    {
        return 0;
    }
    ctx->no_head = 1;
    ctx->status = status;
    if (status == NGX_HTTP_GATEWAY_TIME_OUT) {
        ctx->no_head_kind = MCPT_INTERRUPT_TIMED_OUT;
        ctx->no_head_reason =
            "the upstream sent no response head within proxy_read_timeout (nginx 504)";
    } else if (mcpt_last_is_dash(r, mcf->upstream_connect_time)) {
        ctx->no_head_kind = MCPT_INTERRUPT_CONNECTION_LOST;
        reason = ngx_pnalloc(r->pool, 64);
        if (reason) {
            ngx_sprintf(reason, "nginx could not connect to the upstream (nginx %ui)%Z", status);
        }
        ctx->no_head_reason = reason ? (const char *) reason
                                     : "nginx could not connect to the upstream";
    } else if (mcpt_head_too_big(r)) {
        /* the words of mcp_triage.lua's no_upstream_head(), so both modules log one line */
        ctx->no_head_kind = MCPT_INTERRUPT_CONNECTION_LOST;
        ctx->head_too_big = 1;
        reason = ngx_pnalloc(r->pool, 160);
        if (reason) {
            ngx_sprintf(reason, "the upstream's response head is larger than proxy_buffer_size "
                        "(%uz bytes; nginx: upstream sent too big header, answered %ui)%Z",
                        r->upstream->conf->buffer_size, status);
        }
        ctx->no_head_reason = reason ? (const char *) reason
                                     : "the upstream's response head is larger than proxy_buffer_size";
    } else {
        ctx->no_head_kind = MCPT_INTERRUPT_CONNECTION_LOST;
        ctx->no_head_reason = "the upstream closed the connection before a response head";
    }
    return 1;
}

/* Whether `h` is a header the core reads (ResponseClassifier::new in
 * crates/mcp-triage-core/src/classify.rs: Retry-After, every WWW-Authenticate, every
 * Content-Encoding, which the core undoes, so that a gzip body is read as the JSON it holds;
 * Content-Type is r->headers_out.content_type): the verdict is the same as with every header.
 * Header and body filters sit at the same place in nginx's chain, so the body this module sees
 * is coded exactly as the Content-Encoding it sees says (nginx's own gzip included). */
static ngx_flag_t
mcpt_classified_header(ngx_table_elt_t *h)
{
    return h->hash != 0
           && ((h->key.len == 11
                && ngx_strncasecmp(h->key.data, (u_char *) "retry-after", 11) == 0)
               || (h->key.len == 16
                   && (ngx_strncasecmp(h->key.data, (u_char *) "www-authenticate", 16) == 0
                       || ngx_strncasecmp(h->key.data, (u_char *) "content-encoding", 16) == 0)));
}

/* Puts every response header the core reads at arr[n..], in the order nginx sends them, and
 * returns the new count; with `arr` NULL it only counts. */
static ngx_uint_t
mcpt_put_classified(ngx_http_request_t *r, McptHeader *arr, ngx_uint_t n)
{
    ngx_list_part_t  *part = &r->headers_out.headers.part;
    ngx_table_elt_t  *h = part->elts;
    ngx_uint_t        i;

    for (i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }
        if (!mcpt_classified_header(&h[i])) {
            continue;
        }
        if (arr) {
            arr[n].name = h[i].key.data;
            arr[n].name_len = h[i].key.len;
            arr[n].value = h[i].value.data;
            arr[n].value_len = h[i].value.len;
        }
        n++;
    }
    return n;
}

/* The headers the core reads, every one of them (a response may carry many WWW-Authenticate
 * lines, and the Bearer challenge a client must act on may be the last): in `stack` when they
 * fit, else in an array from the request's pool. NULL when that allocation fails. */
static McptHeader *
mcpt_response_headers(ngx_http_request_t *r, McptHeader *stack, ngx_uint_t *count)
{
    McptHeader  *arr = stack;
    ngx_uint_t   n = r->headers_out.content_type.len ? 1 : 0;

    n = mcpt_put_classified(r, NULL, n);
    if (n > MCPT_MAX_HEADERS) {
        arr = ngx_palloc(r->pool, n * sizeof(McptHeader));
        if (arr == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mcp_triage: no memory for %ui response headers", n);
            return NULL;
        }
    }
    n = 0;
    if (r->headers_out.content_type.len) {
        arr[0].name = (const uint8_t *) "content-type";
        arr[0].name_len = 12;
        arr[0].value = r->headers_out.content_type.data;
        arr[0].value_len = r->headers_out.content_type.len;
        n = 1;
    }
    *count = mcpt_put_classified(r, arr, n);
    return arr;
}

/* mcpt_classifier_new for this response; a protocol version the core does not know is
 * classified as "unknown" (with a warning) rather than not at all. */
static int32_t
mcpt_new_classifier(ngx_http_request_t *r, mcpt_main_conf_t *mcf, mcpt_ctx_t *ctx,
    ngx_uint_t status)
{
    McptHeader       stack[MCPT_MAX_HEADERS], *headers;
    McptCallOptions  o;
    ngx_uint_t       n;
    u_char           version[64];
    ngx_time_t      *tp = ngx_timeofday();
    int32_t          rc;

    headers = mcpt_response_headers(r, stack, &n);
    if (headers == NULL) {
        return MCPT_ERR_INTERNAL;
    }
    ngx_memzero(&o, sizeof(o));
    mcpt_request_expect_id(ctx->req, &o);
    o.protocol_version = NULL;
    if (ctx->protocol.data) {
        /* NUL-terminated for the ABI; a longer one is no version the core knows */
        if (ctx->protocol.len < sizeof(version)) {
            ngx_cpystrn(version, ctx->protocol.data, ctx->protocol.len + 1);
        } else {
            ngx_cpystrn(version, (u_char *) "?", 2);
        }
        o.protocol_version = (const char *) version;
    }
    o.now_unix_ms = (int64_t) tp->sec * 1000 + tp->msec;
    o.limits_json = mcf->limits_json.len ? (const char *) mcf->limits_json.data : NULL;
    rc = mcpt_classifier_new((uint16_t) status, headers, n, &o, &ctx->c);
    if (rc != MCPT_OK && o.protocol_version) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mcp_triage: MCP-Protocol-Version %V: %s; classified as version unknown",
                      &ctx->protocol, mcpt_last_error());
        o.protocol_version = NULL;
        rc = mcpt_classifier_new((uint16_t) status, headers, n, &o, &ctx->c);
    }
    return rc;
}

static ngx_int_t
mcpt_header_filter(ngx_http_request_t *r)
{
    mcpt_main_conf_t  *mcf;
    mcpt_ctx_t        *ctx;
    ngx_uint_t         status;
    int32_t            rc;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);
    if (ctx == NULL || ctx->req == NULL || ctx->c || ctx->no_head || r != r->main) {
        return ngx_http_next_header_filter(r);
    }
    mcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_triage_module);
    status = r->headers_out.status;
    if (mcpt_no_head(r, mcf, ctx, status)) {
        if (mcf->close_on_upstream_loss && ctx->no_head_kind == MCPT_INTERRUPT_CONNECTION_LOST
            && !ctx->head_too_big && !mcpt_last_is_dash(r, mcf->upstream_connect_time))
        {
            /* the upstream closed after the request: close the client's connection too, as
             * `mcp-triage proxy` does, instead of nginx's 502 */
            ctx->status = 0;
            return NGX_ERROR;
        }
        return ngx_http_next_header_filter(r);
    }
    rc = mcpt_new_classifier(r, mcf, ctx, status);
    if (rc != MCPT_OK) {
        mcpt_log_abi_error(r, "classifier_new", rc);
        ctx->c = NULL;
        ctx->failed = 1;
        return ngx_http_next_header_filter(r);
    }
    ctx->status = status;
    ctx->last_chunk = ngx_current_msec;
    return ngx_http_next_header_filter(r);
}


/* ---- body filter: feed each buffer as it passes ---- */

static ngx_int_t
mcpt_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    mcpt_ctx_t   *ctx;
    ngx_chain_t  *cl;
    ngx_buf_t    *b;
    size_t        len;
    int32_t       rc;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);
    if (ctx == NULL || ctx->c == NULL || ctx->failed || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }
    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;
        len = ngx_buf_in_memory(b) ? (size_t) (b->last - b->pos) : 0;
        if (len) {
            ctx->response_bytes += len;
            ctx->last_chunk = ngx_current_msec;
            if (!ctx->decided) {
                rc = mcpt_classifier_feed(ctx->c, b->pos, len);
                if (rc != MCPT_OK) {
                    mcpt_log_abi_error(r, "feed", rc);
                    ctx->failed = 1;
                    break;
                }
                ctx->decided = mcpt_classifier_is_decided(ctx->c) == 1;
            }
        }
        if (b->last_buf) {
            ctx->eof = 1;
        }
    }
    return ngx_http_next_body_filter(r, in);
}


/* ---- log phase: verdict, variables, JSON line, metrics ---- */

static int32_t
mcpt_verdict(ngx_http_request_t *r, mcpt_main_conf_t *mcf, mcpt_ctx_t *ctx)
{
    ngx_msec_int_t  silent;

    if (ctx->c == NULL) {
        if (!ctx->no_head) {
            /* the log phase came before any response head: the client closed first */
            return mcpt_verdict_no_response(MCPT_INTERRUPT_CONNECTION_LOST,
                       "the client closed the connection before a response head", &ctx->v);
        }
        return mcpt_verdict_no_response(ctx->no_head_kind, ctx->no_head_reason, &ctx->v);
    }
    if (ctx->eof) {
        return mcpt_classifier_finish(ctx->c, &ctx->v);
    }
    /* the body did not end: nginx closes a response after proxy_read_timeout of silence,
     * anything else (upstream reset, client gone) is a lost connection */
    silent = (ngx_msec_int_t) (ngx_current_msec - ctx->last_chunk);
    return mcpt_classifier_interrupted(ctx->c,
               silent >= (ngx_msec_int_t) mcf->read_timeout
               ? MCPT_INTERRUPT_TIMED_OUT : MCPT_INTERRUPT_CONNECTION_LOST,
               "response body ended before its end (nginx)", &ctx->v);
}

/* Record ids unique per nginx: the worker's start time and pid, and a counter (nginx's
 * $request_id would draw 16 random bytes from OpenSSL for every request). */
static ngx_str_t
mcpt_record_id(ngx_http_request_t *r)
{
    static u_char      prefix[48];
    static size_t      prefix_len;
    static ngx_uint_t  count;
    ngx_str_t          id;
    ngx_time_t        *tp;

    if (prefix_len == 0) {
        tp = ngx_timeofday();
        prefix_len = ngx_sprintf(prefix, "%xL%xP", (int64_t) tp->sec * 1000 + tp->msec,
                                 ngx_pid) - prefix;
    }
    id.data = ngx_pnalloc(r->pool, prefix_len + 8);
    if (id.data == NULL) {
        id.len = 0;
        return id;
    }
    count++;
    id.len = ngx_sprintf(ngx_cpymem(id.data, prefix, prefix_len), "%08xD",
                         (uint32_t) count) - id.data;
    return id;
}

/* The JSON line of the exchange (mcpt_record_write) into ctx->record. */
static void
mcpt_write_record(ngx_http_request_t *r, mcpt_ctx_t *ctx, ngx_msec_int_t duration_ms)
{
    McptRecordFields  f;
    ngx_str_t         rid = mcpt_record_id(r);
    size_t            cap = MCPT_RECORD_CAP, len = 0;
    u_char           *buf;
    int32_t           rc;

    ngx_memzero(&f, sizeof(f));
    f.record_id = rid.data;
    f.record_id_len = rid.len;
    f.start_unix_s = (double) r->start_sec + (double) r->start_msec / 1000.0;
    f.duration_ms = (double) duration_ms;
    f.path = r->unparsed_uri.data;
    f.path_len = r->unparsed_uri.len;
    /* an empty header is an empty member, as in the Lua module; an absent one no member */
    f.session_id = ctx->session.data;
    f.session_id_len = ctx->session.len;
    f.protocol_version = ctx->protocol.data;
    f.protocol_version_len = ctx->protocol.len;
    f.http_status = (uint16_t) ctx->status;
    f.request_bytes = ctx->request_bytes;
    f.response_bytes = ctx->response_bytes;
    /* cancelled: the client hung up before the response ended (the proxy's meaning); nginx's
     * request_complete is set when it finished the request itself, upstream cut included */
    f.cancelled = !ctx->eof && !ctx->no_head && !r->request_complete;
    buf = ngx_pnalloc(r->pool, cap);
    if (buf == NULL) {
        return;
    }
    rc = mcpt_record_write(ctx->req, ctx->v, &f, buf, cap, &len);
    if (rc == MCPT_ERR_INVALID_ARGUMENT && len > cap) {
        cap = len;
        buf = ngx_pnalloc(r->pool, cap);
        if (buf == NULL) {
            return;
        }
        rc = mcpt_record_write(ctx->req, ctx->v, &f, buf, cap, &len);
    }
    if (rc != MCPT_OK) {
        mcpt_log_abi_error(r, "record_write", rc);
        return;
    }
    ctx->record.data = buf;
    ctx->record.len = len;
}

/* The series of a label (found, or added while there is room); NULL when the zone is full. */
static mcpt_series_t *
mcpt_series(mcpt_shm_t *shm, ngx_slab_pool_t *shpool, mcpt_main_conf_t *mcf,
    u_char *name, size_t len, ngx_flag_t capped)
{
    mcpt_series_t  *s;
    uint32_t        hash = ngx_hash_key(name, len);
    ngx_uint_t      i;

    for (i = 0; i < shm->nseries; i++) {
        s = &shm->series[i];
        if (s->used && s->hash == hash && s->name_len == len
            && ngx_memcmp(s->name, name, len) == 0)
        {
            return s;
        }
    }
    ngx_shmtx_lock(&shpool->mutex);
    s = NULL;
    for (i = 0; i < shm->nseries; i++) {    /* another worker may have added it meanwhile */
        if (shm->series[i].hash == hash && shm->series[i].name_len == len
            && ngx_memcmp(shm->series[i].name, name, len) == 0)
        {
            s = &shm->series[i];
            break;
        }
    }
    if (s == NULL && (!capped || shm->named < mcf->max_tools)
        && shm->nseries < mcf->max_tools + 2)
    {
        s = &shm->series[shm->nseries];
        s->hash = hash;
        s->name_len = len;
        ngx_memcpy(s->name, name, len);
        ngx_memory_barrier();
        s->used = 1;
        ngx_memory_barrier();
        shm->nseries++;
        shm->named += capped;
    }
    ngx_shmtx_unlock(&shpool->mutex);
    return s;
}

/* Counts one call: its own series for the first max_tools names (all workers together),
 * `other` after that, `unknown` for a call without a name. */
static void
mcpt_observe(ngx_http_request_t *r, mcpt_main_conf_t *mcf, mcpt_ctx_t *ctx,
    ngx_msec_int_t duration_ms)
{
    ngx_slab_pool_t  *shpool;
    mcpt_series_t    *s = NULL;
    const uint8_t    *tool;
    size_t            len = 0;
    ngx_uint_t        i;

    if (mcf->zone == NULL || mcf->zone->data == NULL) {
        return;
    }
    shpool = (ngx_slab_pool_t *) mcf->zone->shm.addr;
    tool = mcpt_request_tool(ctx->req, &len);
    if (tool == NULL) {
        s = mcpt_series(mcf->zone->data, shpool, mcf, (u_char *) "unknown", 7, 0);
    } else {
        if (len > MCPT_TOOL_LABEL_MAX) {
            /* cut at a UTF-8 character boundary (not before a continuation byte) */
            len = MCPT_TOOL_LABEL_MAX;
            while (len > 0 && (tool[len] & 0xC0) == 0x80) {
                len--;
            }
        }
        s = mcpt_series(mcf->zone->data, shpool, mcf, (u_char *) tool, len, 1);
        if (s == NULL) {
            s = mcpt_series(mcf->zone->data, shpool, mcf, (u_char *) "other", 5, 0);
        }
    }
    if (s == NULL || ctx->layer <= 0 || ctx->layer >= MCPT_LAYERS
        || ctx->outcome <= 0 || ctx->outcome >= MCPT_OUTCOMES)
    {
        return;
    }
    (void) ngx_atomic_fetch_add(&s->calls[ctx->layer][ctx->outcome], 1);
    for (i = 0; i < MCPT_BUCKETS; i++) {
        if ((ngx_msec_t) duration_ms <= mcpt_bucket_ms[i]) {
            (void) ngx_atomic_fetch_add(&s->buckets[i], 1);
            break;
        }
    }
    (void) ngx_atomic_fetch_add(&s->sum_ms, duration_ms);
    (void) ngx_atomic_fetch_add(&s->count, 1);
}

/* $mcp_tool: a copy of the tool name, which lives in the request freed right after. */
static void
mcpt_copy_tool(ngx_http_request_t *r, mcpt_ctx_t *ctx)
{
    size_t          len = 0;
    const uint8_t  *tool = mcpt_request_tool(ctx->req, &len);

    if (tool == NULL || len == 0) {
        return;
    }
    ctx->tool.data = ngx_pnalloc(r->pool, len);
    if (ctx->tool.data) {
        ngx_memcpy(ctx->tool.data, tool, len);
        ctx->tool.len = len;
    }
}

static ngx_int_t
mcpt_log_handler(ngx_http_request_t *r)
{
    mcpt_main_conf_t  *mcf;
    mcpt_ctx_t        *ctx;
    ngx_time_t        *tp;
    ngx_msec_int_t     duration_ms;
    int64_t            code;
    int32_t            rc;

    ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);
    if (ctx == NULL || ctx->req == NULL || ctx->failed || ctx->logged) {
        if (ctx) {
            mcpt_release(ctx);
        }
        return NGX_OK;
    }
    ctx->logged = 1;
    mcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_triage_module);
    rc = mcpt_verdict(r, mcf, ctx);
    if (rc != MCPT_OK) {
        mcpt_log_abi_error(r, "verdict", rc);
        mcpt_release(ctx);
        return NGX_OK;
    }
    ctx->layer = mcpt_verdict_layer(ctx->v);
    ctx->outcome = mcpt_verdict_outcome(ctx->v);
    if (mcpt_verdict_jsonrpc_code(ctx->v, &code) == 1) {
        ctx->jsonrpc_code.data = ngx_pnalloc(r->pool, NGX_INT64_LEN);
        if (ctx->jsonrpc_code.data) {
            ctx->jsonrpc_code.len = ngx_sprintf(ctx->jsonrpc_code.data, "%L", code)
                                    - ctx->jsonrpc_code.data;
        }
    }
    tp = ngx_timeofday();
    duration_ms = (ngx_msec_int_t) ((tp->sec - r->start_sec) * 1000 + (tp->msec - r->start_msec));
    if (duration_ms < 0) {
        duration_ms = 0;
    }
    mcpt_write_record(r, ctx, duration_ms);
    mcpt_observe(r, mcf, ctx, duration_ms);
    mcpt_copy_tool(r, ctx);
    mcpt_release(ctx);
    return NGX_OK;
}


/* ---- variables ---- */

enum { MCPT_VAR_LAYER, MCPT_VAR_OUTCOME, MCPT_VAR_TOOL, MCPT_VAR_METHOD, MCPT_VAR_CODE,
       MCPT_VAR_RECORD };

static ngx_int_t
mcpt_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    mcpt_ctx_t  *ctx = ngx_http_get_module_ctx(r, ngx_http_mcp_triage_module);
    ngx_str_t    s = ngx_null_string;

    if (ctx && ctx->logged && ctx->layer > 0 && ctx->layer < MCPT_LAYERS
        && ctx->outcome > 0 && ctx->outcome < MCPT_OUTCOMES)
    {
        switch (data) {
        case MCPT_VAR_LAYER: s = mcpt_layer_names[ctx->layer]; break;
        case MCPT_VAR_OUTCOME: s = mcpt_outcome_names[ctx->outcome]; break;
        case MCPT_VAR_TOOL: s = ctx->tool; break;
        case MCPT_VAR_METHOD: ngx_str_set(&s, "tools/call"); break;
        case MCPT_VAR_CODE: s = ctx->jsonrpc_code; break;
        case MCPT_VAR_RECORD: s = ctx->record; break;
        }
    }
    v->data = s.data;
    v->len = s.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

static ngx_int_t
mcpt_add_variables(ngx_conf_t *cf)
{
    static ngx_str_t  names[] = {
        ngx_string("mcp_layer"), ngx_string("mcp_outcome"), ngx_string("mcp_tool"),
        ngx_string("mcp_method"), ngx_string("mcp_jsonrpc_code"), ngx_string("mcp_record")
    };
    ngx_http_variable_t  *var;
    ngx_uint_t            i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        var = ngx_http_add_variable(cf, &names[i], NGX_HTTP_VAR_NOCACHEABLE);
        if (var == NULL) {
            return NGX_ERROR;
        }
        var->get_handler = mcpt_variable;
        var->data = i;
    }
    return NGX_OK;
}


/* ---- /metrics ---- */

/* Appends `s` with Prometheus label escaping (backslash, quote, newline). */
static u_char *
mcpt_escape_label(u_char *p, u_char *s, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (s[i] == '\\' || s[i] == '"') {
            *p++ = '\\';
            *p++ = s[i];
        } else if (s[i] == '\n') {
            *p++ = '\\';
            *p++ = 'n';
        } else {
            *p++ = s[i];
        }
    }
    return p;
}

static int ngx_libc_cdecl
mcpt_series_cmp(const void *a, const void *b)
{
    const mcpt_series_t  *x = *(mcpt_series_t * const *) a, *y = *(mcpt_series_t * const *) b;
    size_t                n = ngx_min(x->name_len, y->name_len);
    int                   c = ngx_memcmp(x->name, y->name, n);

    return c ? c : (int) x->name_len - (int) y->name_len;
}

/* The lines of one series: its calls_total counters and its histogram. */
static u_char *
mcpt_series_lines(u_char *p, mcpt_series_t *s, ngx_str_t *server, ngx_uint_t histogram)
{
    ngx_uint_t    l, o, i;
    ngx_atomic_t  cum = 0;

    if (!histogram) {
        for (l = 1; l < MCPT_LAYERS; l++) {
            for (o = 1; o < MCPT_OUTCOMES; o++) {
                if (s->calls[l][o] == 0) {
                    continue;
                }
                p = ngx_sprintf(p, "mcp_triage_calls_total{server=\"");
                p = mcpt_escape_label(p, server->data, server->len);
                p = ngx_sprintf(p, "\",tool=\"");
                p = mcpt_escape_label(p, s->name, s->name_len);
                p = ngx_sprintf(p, "\",layer=\"%V\",outcome=\"%V\"} %uA\n",
                                &mcpt_layer_names[l], &mcpt_outcome_names[o], s->calls[l][o]);
            }
        }
        return p;
    }
    for (i = 0; i <= MCPT_BUCKETS; i++) {
        p = ngx_sprintf(p, "mcp_triage_call_duration_seconds_bucket{server=\"");
        p = mcpt_escape_label(p, server->data, server->len);
        p = ngx_sprintf(p, "\",tool=\"");
        p = mcpt_escape_label(p, s->name, s->name_len);
        if (i < MCPT_BUCKETS) {
            cum += s->buckets[i];
            p = ngx_sprintf(p, "\",le=\"%s\"} %uA\n", mcpt_bucket_label[i], cum);
        } else {
            p = ngx_sprintf(p, "\",le=\"+Inf\"} %uA\n", s->count);
        }
    }
    p = ngx_sprintf(p, "mcp_triage_call_duration_seconds_sum{server=\"");
    p = mcpt_escape_label(p, server->data, server->len);
    p = ngx_sprintf(p, "\",tool=\"");
    p = mcpt_escape_label(p, s->name, s->name_len);
    p = ngx_sprintf(p, "\"} %uA.%03uA\n", s->sum_ms / 1000, s->sum_ms % 1000);
    p = ngx_sprintf(p, "mcp_triage_call_duration_seconds_count{server=\"");
    p = mcpt_escape_label(p, server->data, server->len);
    p = ngx_sprintf(p, "\",tool=\"");
    p = mcpt_escape_label(p, s->name, s->name_len);
    return ngx_sprintf(p, "\"} %uA\n", s->count);
}

static const char  mcpt_calls_help[] =
    "# HELP mcp_triage_calls_total tools/call exchanges observed by the proxy, by tool and by "
    "the layer and outcome of their verdict.\n# TYPE mcp_triage_calls_total counter\n";
static const char  mcpt_duration_help[] =
    "# HELP mcp_triage_call_duration_seconds Time from a tools/call request's arrival at the "
    "proxy to the end of its response.\n# TYPE mcp_triage_call_duration_seconds histogram\n";

/* content handler of `mcp_triage_metrics`: the Prometheus text of the series proxy --ui
 * exports, tools in byte order. */
static ngx_int_t
mcpt_metrics_handler(ngx_http_request_t *r)
{
    mcpt_main_conf_t  *mcf = ngx_http_get_module_main_conf(r, ngx_http_mcp_triage_module);
    mcpt_shm_t        *shm;
    mcpt_series_t    **sorted;
    ngx_uint_t         i, n;
    size_t             line, size;
    ngx_buf_t         *b;
    ngx_chain_t        out;
    ngx_int_t          rc;

    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }
    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    shm = mcf->zone ? mcf->zone->data : NULL;
    n = shm ? shm->nseries : 0;
    sorted = ngx_palloc(r->pool, (n + 1) * sizeof(mcpt_series_t *));
    if (sorted == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    for (i = 0; i < n && shm->series[i].used; i++) {
        sorted[i] = &shm->series[i];
    }
    n = i;
    ngx_qsort(sorted, n, sizeof(mcpt_series_t *), mcpt_series_cmp);
    /* the longest line: names, escaped server and tool labels, a 20-digit counter */
    line = 200 + 2 * mcf->server.len + 2 * MCPT_TOOL_LABEL_MAX;
    size = sizeof(mcpt_calls_help) + sizeof(mcpt_duration_help)
           + n * line * ((MCPT_LAYERS - 1) * (MCPT_OUTCOMES - 1) + MCPT_BUCKETS + 3);
    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    b->last = ngx_cpymem(b->last, mcpt_calls_help, sizeof(mcpt_calls_help) - 1);
    for (i = 0; i < n; i++) {
        b->last = mcpt_series_lines(b->last, sorted[i], &mcf->server, 0);
    }
    b->last = ngx_cpymem(b->last, mcpt_duration_help, sizeof(mcpt_duration_help) - 1);
    for (i = 0; i < n; i++) {
        if (sorted[i]->count) {
            b->last = mcpt_series_lines(b->last, sorted[i], &mcf->server, 1);
        }
    }
    b->last_buf = 1;
    b->last_in_chain = 1;
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    out.buf = b;
    out.next = NULL;
    return ngx_http_output_filter(r, &out);
}

static char *
mcpt_metrics_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    clcf->handler = mcpt_metrics_handler;
    return NGX_CONF_OK;
}


/* ---- configuration ---- */

static char *
mcpt_limits_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    mcpt_main_conf_t  *mcf = conf;
    ngx_str_t         *value = cf->args->elts;

    /* NUL-terminated for the ABI; checked by the core at the first exchange */
    mcf->limits_json.data = ngx_pnalloc(cf->pool, value[1].len + 1);
    if (mcf->limits_json.data == NULL) {
        return NGX_CONF_ERROR;
    }
    ngx_cpystrn(mcf->limits_json.data, value[1].data, value[1].len + 1);
    mcf->limits_json.len = value[1].len;
    return NGX_CONF_OK;
}

static void *
mcpt_create_main_conf(ngx_conf_t *cf)
{
    mcpt_main_conf_t  *mcf = ngx_pcalloc(cf->pool, sizeof(mcpt_main_conf_t));

    if (mcf == NULL) {
        return NULL;
    }
    mcf->max_body = NGX_CONF_UNSET_SIZE;
    mcf->read_timeout = NGX_CONF_UNSET_MSEC;
    mcf->max_tools = NGX_CONF_UNSET_UINT;
    mcf->close_on_upstream_loss = NGX_CONF_UNSET;
    return mcf;
}

static char *
mcpt_init_main_conf(ngx_conf_t *cf, void *conf)
{
    mcpt_main_conf_t  *mcf = conf;
    ngx_str_t          name = ngx_string("mcp_triage");
    size_t             size;

    ngx_conf_init_size_value(mcf->max_body, 1048576);
    ngx_conf_init_msec_value(mcf->read_timeout, 60000);
    ngx_conf_init_uint_value(mcf->max_tools, 100);
    ngx_conf_init_value(mcf->close_on_upstream_loss, 1);
    if (mcf->server.data == NULL) {
        ngx_str_set(&mcf->server, "upstream");
    }
    /* the series of max_tools names, `other` and `unknown`, and the slab pool's own pages */
    size = sizeof(mcpt_shm_t) + (mcf->max_tools + 2) * sizeof(mcpt_series_t);
    size = ngx_align(size + 8 * ngx_pagesize, ngx_pagesize);
    mcf->zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_mcp_triage_module);
    if (mcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }
    mcf->zone->init = mcpt_init_zone;
    mcf->zone->data = mcf;    /* replaced by the zone's contents in mcpt_init_zone */
    return NGX_CONF_OK;
}

static ngx_int_t
mcpt_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_slab_pool_t   *shpool = (ngx_slab_pool_t *) zone->shm.addr;
    mcpt_main_conf_t  *mcf = zone->data;
    mcpt_shm_t        *shm;

    if (data) {
        /* a reload: keep the counters of the old zone (same size, same layout) */
        zone->data = data;
        return NGX_OK;
    }
    shm = ngx_slab_calloc(shpool, sizeof(mcpt_shm_t) + (mcf->max_tools + 2) * sizeof(mcpt_series_t));
    if (shm == NULL) {
        return NGX_ERROR;
    }
    zone->data = shm;
    return NGX_OK;
}

static void *
mcpt_create_loc_conf(ngx_conf_t *cf)
{
    mcpt_loc_conf_t  *lcf = ngx_pcalloc(cf->pool, sizeof(mcpt_loc_conf_t));

    if (lcf == NULL) {
        return NULL;
    }
    lcf->enable = NGX_CONF_UNSET;
    return lcf;
}

static char *
mcpt_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    mcpt_loc_conf_t  *prev = parent, *conf = child;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    return NGX_CONF_OK;
}

static ngx_int_t
mcpt_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_core_main_conf_t  *cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    mcpt_main_conf_t           *mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_mcp_triage_module);
    ngx_http_handler_pt        *h;
    ngx_array_t                *log;
    ngx_str_t                   header_time = ngx_string("upstream_header_time");
    ngx_str_t                   connect_time = ngx_string("upstream_connect_time");
    ngx_uint_t                  i;
    const char                 *name;

    for (i = 1; i < MCPT_LAYERS; i++) {
        name = mcpt_layer_name((int32_t) i);
        mcpt_layer_names[i].data = (u_char *) name;
        mcpt_layer_names[i].len = name ? ngx_strlen(name) : 0;
    }
    for (i = 1; i < MCPT_OUTCOMES; i++) {
        name = mcpt_outcome_name((int32_t) i);
        mcpt_outcome_names[i].data = (u_char *) name;
        mcpt_outcome_names[i].len = name ? ngx_strlen(name) : 0;
    }
    mcf->upstream_header_time = ngx_http_get_variable_index(cf, &header_time);
    mcf->upstream_connect_time = ngx_http_get_variable_index(cf, &connect_time);
    if (mcf->upstream_header_time == NGX_ERROR || mcf->upstream_connect_time == NGX_ERROR) {
        return NGX_ERROR;
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    *h = mcpt_precontent_handler;

    /* the log handler runs first in the log phase, so the access log sees $mcp_* set */
    log = &cmcf->phases[NGX_HTTP_LOG_PHASE].handlers;
    h = ngx_array_push(log);
    if (h == NULL) {
        return NGX_ERROR;
    }
    if (log->nelts > 1) {
        ngx_memmove((ngx_http_handler_pt *) log->elts + 1, log->elts,
                    (log->nelts - 1) * sizeof(ngx_http_handler_pt));
    }
    *(ngx_http_handler_pt *) log->elts = mcpt_log_handler;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = mcpt_header_filter;
    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = mcpt_body_filter;
    return NGX_OK;
}

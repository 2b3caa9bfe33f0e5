/* The gateway calls of the C ABI (mcpt_request_parse, mcpt_request_tool, mcpt_request_expect_id,
 * mcpt_record_write, mcpt_request_free) used the way the nginx module uses them: a request body
 * is parsed, its id set in the classifier's options, the response classified in chunks, and the
 * exchange's JSON line written into a buffer that is first too small. Also their misuse: NULL
 * and bad arguments return their documented codes. Prints the JSON line, then
 * "request: N checks passed" (tests/c_abi.rs compares the line, and runs this under valgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_triage.h"

static int checks, failures;

static void truth(const char *what, int ok) {
  checks++;
  if (!ok) {
    fprintf(stderr, "FAIL %s (last error: %s)\n", what, mcpt_last_error());
    failures++;
  }
}

/* mcpt_request_parse's answer for `body`, the request freed. */
static int32_t parse_only(const char *body) {
  McptRequest *r = (McptRequest *)&checks; /* must be overwritten */
  int32_t rc = mcpt_request_parse((const uint8_t *)body, strlen(body), &r);
  truth("*out is set to the request or to NULL", rc == 1 ? r != NULL : r == NULL);
  mcpt_request_free(r);
  return rc;
}

static void which_bodies_are_calls(void) {
  truth("a tools/call", parse_only("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}") == 1);
  truth("a string id", parse_only("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\"}") == 1);
  truth("tools/list", parse_only("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}") == 0);
  truth("a notification", parse_only("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}") == 0);
  truth("a batch", parse_only("[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}]") == 0);
  truth("not JSON", parse_only("{\"jsonrpc\":") == 0);
  truth("an id that is a fraction", parse_only("{\"jsonrpc\":\"2.0\",\"id\":0.5,\"method\":\"tools/call\"}") == 0);
  truth("an empty body", mcpt_request_parse(NULL, 0, &(McptRequest *){NULL}) == 0);
}

static void misuse(void) {
  McptRequest *r = NULL;
  truth("out NULL", mcpt_request_parse((const uint8_t *)"{}", 2, NULL) == MCPT_ERR_NULL_ARGUMENT);
  truth("body NULL with a length", mcpt_request_parse(NULL, 4, &r) == MCPT_ERR_NULL_ARGUMENT && r == NULL);
  size_t len = 99;
  truth("tool of NULL", mcpt_request_tool(NULL, &len) == NULL && len == 0);
  McptCallOptions o;
  memset(&o, 0, sizeof o);
  truth("expect_id of NULL", mcpt_request_expect_id(NULL, &o) == MCPT_ERR_NULL_ARGUMENT);
  const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}";
  truth("parse", mcpt_request_parse((const uint8_t *)body, strlen(body), &r) == 1);
  truth("expect_id into NULL", mcpt_request_expect_id(r, NULL) == MCPT_ERR_NULL_ARGUMENT);
  truth("no tool", mcpt_request_tool(r, NULL) == NULL);
  McptRecordFields f;
  memset(&f, 0, sizeof f);
  uint8_t buf[8];
  truth("record without verdict", mcpt_record_write(r, NULL, &f, buf, sizeof buf, &len) == MCPT_ERR_NULL_ARGUMENT && len == 0);
  truth("record without len", mcpt_record_write(r, NULL, &f, buf, sizeof buf, NULL) == MCPT_ERR_NULL_ARGUMENT);
  McptVerdict *v = NULL;
  mcpt_verdict_no_response(MCPT_INTERRUPT_CONNECTION_LOST, NULL, &v);
  truth("record without request", mcpt_record_write(NULL, v, &f, buf, sizeof buf, &len) == MCPT_ERR_NULL_ARGUMENT);
  truth("record without fields", mcpt_record_write(r, v, NULL, buf, sizeof buf, &len) == MCPT_ERR_NULL_ARGUMENT);
  truth("record into NULL with a cap", mcpt_record_write(r, v, &f, NULL, 8, &len) == MCPT_ERR_NULL_ARGUMENT);
  f.start_unix_s = -1;
  truth("a time before 1970", mcpt_record_write(r, v, &f, buf, sizeof buf, &len) == MCPT_ERR_INVALID_ARGUMENT && strstr(mcpt_last_error(), "start_unix_s") != NULL);
  f.start_unix_s = 0;
  f.path_len = 3;
  truth("path NULL with a length", mcpt_record_write(r, v, &f, buf, sizeof buf, &len) == MCPT_ERR_NULL_ARGUMENT);
  mcpt_verdict_free(v);
  mcpt_request_free(r);
}

/* One exchange as the nginx module handles it; prints its JSON line. */
static void one_exchange(void) {
  const char *body = "{\"jsonrpc\":\"2.0\",\"id\":\"req-\\u00e9/1\",\"method\":\"tools/call\","
                     "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}";
  McptRequest *r = NULL;
  truth("a tools/call request", mcpt_request_parse((const uint8_t *)body, strlen(body), &r) == 1);
  size_t len = 0;
  const uint8_t *tool = mcpt_request_tool(r, &len);
  truth("its tool", tool != NULL && len == 4 && memcmp(tool, "echo", 4) == 0);
  McptCallOptions o;
  memset(&o, 0, sizeof o);
  o.protocol_version = "2025-06-18";
  truth("expect_id", mcpt_request_expect_id(r, &o) == MCPT_OK);
  truth("a string id", o.expect_id_kind == MCPT_ID_STRING && o.expect_id_string_len == 8 &&
                           memcmp(o.expect_id_string, "req-\xc3\xa9/1", 8) == 0);
  McptHeader h = {(const uint8_t *)"content-type", 12, (const uint8_t *)"application/json", 16};
  McptClassifier *c = NULL;
  truth("classifier_new", mcpt_classifier_new(200, &h, 1, &o, &c) == MCPT_OK);
  const char *resp = "{\"jsonrpc\":\"2.0\",\"id\":\"req-\\u00e9/1\",\"result\":{\"content\":[]}}";
  for (size_t at = 0; at < strlen(resp); at += 5) {
    size_t n = strlen(resp) - at < 5 ? strlen(resp) - at : 5;
    truth("feed", mcpt_classifier_feed(c, (const uint8_t *)resp + at, n) == MCPT_OK);
  }
  McptVerdict *v = NULL;
  truth("finish", mcpt_classifier_finish(c, &v) == MCPT_OK);
  mcpt_classifier_free(c);
  McptRecordFields f;
  memset(&f, 0, sizeof f);
  f.record_id = (const uint8_t *)"rid-1";
  f.record_id_len = 5;
  f.start_unix_s = 951782400.5;
  f.duration_ms = 40.0004;
  f.path = (const uint8_t *)"/mcp?q=\"x\"";
  f.path_len = 10;
  f.session_id = (const uint8_t *)"s\xff";
  f.session_id_len = 2;
  f.protocol_version = (const uint8_t *)"2025-06-18";
  f.protocol_version_len = 10;
  f.http_status = 200;
  f.request_bytes = strlen(body);
  f.response_bytes = strlen(resp);
  uint8_t small[16];
  truth("too small", mcpt_record_write(r, v, &f, small, sizeof small, &len) == MCPT_ERR_INVALID_ARGUMENT && len > sizeof small);
  size_t need = len;
  uint8_t *line = malloc(need);
  truth("fits", line != NULL && mcpt_record_write(r, v, &f, line, need, &len) == MCPT_OK && len == need);
  if (line != NULL) printf("%.*s\n", (int)len, (const char *)line);
  free(line);
  mcpt_verdict_free(v);
  mcpt_request_free(r);
}

int main(void) {
  which_bodies_are_calls();
  misuse();
  one_exchange();
  if (failures) {
    fprintf(stderr, "request: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("request: %d checks passed\n", checks);
  return 0;
}

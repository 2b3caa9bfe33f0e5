/* Bad arguments and misuse through the C ABI: every case must return its documented code and
 * leave a non-empty mcpt_last_error() naming what was wrong, and nothing may crash or leak (the
 * Rust test tests/c_abi.rs also runs this under valgrind). Prints "misuse: N checks passed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_triage.h"

static int checks, failures;

/* rc must be `want` and, for an error, the last error must contain `needle`. */
static void expect(const char *what, int32_t rc, int32_t want, const char *needle) {
  checks++;
  const char *e = mcpt_last_error();
  if (rc != want) {
    fprintf(stderr, "FAIL %s: got %d, want %d (last error: %s)\n", what, (int)rc, (int)want, e);
    failures++;
  } else if (want != MCPT_OK && (e == NULL || e[0] == 0 || strstr(e, needle) == NULL)) {
    fprintf(stderr, "FAIL %s: last error %s does not name \"%s\"\n", what, e ? e : "(null)",
            needle);
    failures++;
  }
}

static void truth(const char *what, int ok) {
  checks++;
  if (!ok) {
    fprintf(stderr, "FAIL %s\n", what);
    failures++;
  }
}

#define BODY "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"
static const McptHeader JSON_CT[1] = {
    {(const uint8_t *)"content-type", 12, (const uint8_t *)"application/json", 16}};

static int32_t classify_with(const McptCallOptions *o, McptVerdict **v) {
  return mcpt_classify(200, JSON_CT, 1, (const uint8_t *)BODY, strlen(BODY), o, v);
}

static void bad_arguments(void) {
  McptVerdict *v = (McptVerdict *)&checks; /* must be reset to NULL on error */
  expect("headers NULL with a count", mcpt_classify(200, NULL, 1, NULL, 0, NULL, &v),
         MCPT_ERR_NULL_ARGUMENT, "headers");
  truth("*out is NULL after an error", v == NULL);
  expect("out NULL", classify_with(NULL, NULL), MCPT_ERR_NULL_ARGUMENT, "out");
  expect("body NULL with a length", mcpt_classify(200, JSON_CT, 1, NULL, 5, NULL, &v),
         MCPT_ERR_NULL_ARGUMENT, "body");
  expect("status 42", mcpt_classify(42, JSON_CT, 1, NULL, 0, NULL, &v),
         MCPT_ERR_INVALID_ARGUMENT, "42");
  expect("status 1000", mcpt_classify(1000, NULL, 0, NULL, 0, NULL, &v),
         MCPT_ERR_INVALID_ARGUMENT, "1000");
  McptHeader bad[2] = {JSON_CT[0], {(const uint8_t *)"x-a", 3, (const uint8_t *)"\xff\xfe", 2}};
  expect("invalid UTF-8 in header 1's value", mcpt_classify(200, bad, 2, NULL, 0, NULL, &v),
         MCPT_ERR_INVALID_ARGUMENT, "header 1's value");
  bad[1].name = (const uint8_t *)"\xc3";
  bad[1].name_len = 1;
  expect("invalid UTF-8 in header 1's name", mcpt_classify(200, bad, 2, NULL, 0, NULL, &v),
         MCPT_ERR_INVALID_ARGUMENT, "header 1's name");
  bad[1].name = NULL;
  expect("header name NULL with a length", mcpt_classify(200, bad, 2, NULL, 0, NULL, &v),
         MCPT_ERR_NULL_ARGUMENT, "header 1's name");

  McptCallOptions o = {MCPT_ID_NUMBER, 1, NULL, 0, "2099-01-01", 0, NULL, NULL, NULL};
  expect("unknown protocol version", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT,
         "2099-01-01");
  o.protocol_version = "2025-06-18";
  o.limits_json = "{\"maxBody\":1}";
  expect("unknown limit", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "maxBody");
  o.limits_json = "not json";
  expect("limits not JSON", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "limits_json");
  o.limits_json = "{\"maxBodyBytes\":-1}";
  expect("negative limit", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "limits_json");
  o.limits_json = NULL;
  o.output_schema_json = "{";
  expect("schema not JSON", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "output_schema_json");
  o.output_schema_json = "{\"type\":12}";
  expect("schema that does not compile", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT,
         "output_schema_json");
  o.output_schema_json = NULL;
  o.expect_id_kind = 7;
  expect("unknown id kind", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "expect_id_kind");
  o.expect_id_kind = MCPT_ID_STRING;
  expect("id string NULL with a length", (o.expect_id_string_len = 3, classify_with(&o, &v)),
         MCPT_ERR_NULL_ARGUMENT, "expect_id_string");
  o.expect_id_string = (const uint8_t *)"\x80";
  o.expect_id_string_len = 1;
  expect("id string not UTF-8", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT,
         "expect_id_string");
  o.expect_id_kind = MCPT_ID_NUMBER;
  o.now_unix_ms = -1;
  expect("now before 1970", classify_with(&o, &v), MCPT_ERR_INVALID_ARGUMENT, "now_unix_ms");
  o.now_unix_ms = 0;
  expect("valid options", classify_with(&o, &v), MCPT_OK, "");
  truth("valid options give TOOL_SUCCESS", mcpt_verdict_outcome(v) == MCPT_OUTCOME_TOOL_SUCCESS);
  truth("a success keeps the last error", strstr(mcpt_last_error(), "now_unix_ms") != NULL);
  mcpt_verdict_free(v);
}

static void finished_classifier(void) {
  McptClassifier *c = NULL;
  McptVerdict *v = NULL, *w = (McptVerdict *)&checks;
  expect("new", mcpt_classifier_new(200, JSON_CT, 1, NULL, &c), MCPT_OK, "");
  expect("feed NULL with a length", mcpt_classifier_feed(c, NULL, 4), MCPT_ERR_NULL_ARGUMENT,
         "chunk");
  expect("feed", mcpt_classifier_feed(c, (const uint8_t *)BODY, strlen(BODY)), MCPT_OK, "");
  expect("feed nothing", mcpt_classifier_feed(c, NULL, 0), MCPT_OK, "");
  /* a JSON body is decided by its end only: bytes after it could still make it malformed */
  truth("JSON waits for finish", mcpt_classifier_is_decided(c) == 0);
  expect("interrupted with an unknown kind", mcpt_classifier_interrupted(c, 9, NULL, &w),
         MCPT_ERR_INVALID_ARGUMENT, "kind");
  truth("*out is NULL after an error", w == NULL);
  expect("interrupted with a reason not UTF-8",
         mcpt_classifier_interrupted(c, MCPT_INTERRUPT_TIMED_OUT, "\xff", &w),
         MCPT_ERR_INVALID_ARGUMENT, "reason");
  expect("finish after refused calls", mcpt_classifier_finish(c, &v), MCPT_OK, "");
  truth("the verdict is TOOL_SUCCESS", mcpt_verdict_outcome(v) == MCPT_OUTCOME_TOOL_SUCCESS);
  expect("finish twice", mcpt_classifier_finish(c, &w), MCPT_ERR_FINISHED, "already");
  truth("*out is NULL after finish twice", w == NULL);
  expect("feed after finish", mcpt_classifier_feed(c, (const uint8_t *)"x", 1), MCPT_ERR_FINISHED,
         "mcpt_classifier_feed");
  expect("is_decided after finish", mcpt_classifier_is_decided(c), MCPT_ERR_FINISHED,
         "mcpt_classifier_is_decided");
  expect("interrupted after finish",
         mcpt_classifier_interrupted(c, MCPT_INTERRUPT_CONNECTION_LOST, "gone", &w),
         MCPT_ERR_FINISHED, "mcpt_classifier_interrupted");
  mcpt_classifier_free(c);
  mcpt_verdict_free(v);

  expect("new with out NULL", mcpt_classifier_new(200, NULL, 0, NULL, NULL),
         MCPT_ERR_NULL_ARGUMENT, "out");
  expect("new with status 42", mcpt_classifier_new(42, NULL, 0, NULL, &c),
         MCPT_ERR_INVALID_ARGUMENT, "42");
  truth("new's *out is NULL after an error", c == NULL);
  expect("feed NULL", mcpt_classifier_feed(NULL, NULL, 0), MCPT_ERR_NULL_ARGUMENT, "classifier");
  expect("is_decided NULL", mcpt_classifier_is_decided(NULL), MCPT_ERR_NULL_ARGUMENT,
         "classifier");
  expect("finish NULL", mcpt_classifier_finish(NULL, &v), MCPT_ERR_NULL_ARGUMENT, "classifier");
  expect("finish out NULL", mcpt_classifier_finish(c, NULL), MCPT_ERR_NULL_ARGUMENT, "out");
  expect("interrupted NULL", mcpt_classifier_interrupted(NULL, 1, NULL, &v),
         MCPT_ERR_NULL_ARGUMENT, "classifier");
  mcpt_classifier_free(NULL);
}

static void interrupted_stream(void) {
  static const McptHeader sse[1] = {
      {(const uint8_t *)"content-type", 12, (const uint8_t *)"text/event-stream", 17}};
  McptClassifier *c = NULL;
  McptVerdict *v = NULL;
  expect("new SSE", mcpt_classifier_new(200, sse, 1, NULL, &c), MCPT_OK, "");
  expect("feed a comment", mcpt_classifier_feed(c, (const uint8_t *)": hi\n\n", 6), MCPT_OK, "");
  truth("not decided without the response", mcpt_classifier_is_decided(c) == 0);
  expect("interrupted", mcpt_classifier_interrupted(c, MCPT_INTERRUPT_TIMED_OUT, "deadline", &v),
         MCPT_OK, "");
  truth("a timed-out stream is TIMEOUT", mcpt_verdict_outcome(v) == MCPT_OUTCOME_TIMEOUT);
  truth("TIMEOUT is a transport outcome", mcpt_verdict_layer(v) == MCPT_LAYER_TRANSPORT);
  mcpt_verdict_free(v);
  mcpt_classifier_free(c);
  const char *ev = "data: " BODY "\n\n";
  expect("new SSE again", mcpt_classifier_new(200, sse, 1, NULL, &c), MCPT_OK, "");
  expect("feed the response event", mcpt_classifier_feed(c, (const uint8_t *)ev, strlen(ev)),
         MCPT_OK, "");
  truth("decided by the response event", mcpt_classifier_is_decided(c) == 1);
  expect("connection lost after the response",
         mcpt_classifier_interrupted(c, MCPT_INTERRUPT_CONNECTION_LOST, NULL, &v), MCPT_OK, "");
  truth("the response event stands", mcpt_verdict_outcome(v) == MCPT_OUTCOME_TOOL_SUCCESS);
  mcpt_verdict_free(v);
  mcpt_classifier_free(c);
}

static void null_verdicts_and_strings(void) {
  int64_t code = 5;
  uint64_t wait = 6;
  size_t len = 9;
  char *out = (char *)&checks;
  truth("layer of NULL", mcpt_verdict_layer(NULL) == 0);
  truth("outcome of NULL", mcpt_verdict_outcome(NULL) == 0);
  truth("status of NULL", mcpt_verdict_status(NULL) == 0);
  truth("code of NULL", mcpt_verdict_jsonrpc_code(NULL, &code) == 0 && code == 5);
  truth("retry-after of NULL", mcpt_verdict_retry_after_ms(NULL, &wait) == 0 && wait == 6);
  truth("json of NULL", mcpt_verdict_json(NULL, &len) == NULL && len == 0);
  truth("unknown layer code", mcpt_layer_name(0) == NULL && mcpt_layer_name(5) == NULL);
  truth("unknown outcome code", mcpt_outcome_name(0) == NULL && mcpt_outcome_name(16) == NULL);
  truth("outcome name", strcmp(mcpt_outcome_name(MCPT_OUTCOME_LIMIT_EXCEEDED), "LIMIT_EXCEEDED") == 0);
  truth("version", strlen(mcpt_version()) > 0);
  mcpt_verdict_free(NULL);
  mcpt_string_free(NULL);
  expect("decide_retry input NULL", mcpt_decide_retry(NULL, &out), MCPT_ERR_NULL_ARGUMENT,
         "input_json");
  truth("*out_json is NULL after an error", out == NULL);
  expect("decide_retry out NULL", mcpt_decide_retry("{}", NULL), MCPT_ERR_NULL_ARGUMENT, "out_json");
  expect("decide_retry bad JSON", mcpt_decide_retry("{", &out), MCPT_ERR_INVALID_ARGUMENT,
         "input_json");
  expect("decide_retry without verdict", mcpt_decide_retry("{}", &out), MCPT_ERR_INVALID_ARGUMENT,
         "verdict");
  expect("decide_retry unknown member",
         mcpt_decide_retry("{\"verdict\":{\"layer\":\"transport\",\"outcome\":\"TIMEOUT\"},"
                           "\"atempt\":2}", &out),
         MCPT_ERR_INVALID_ARGUMENT, "atempt");
  expect("decide_retry", mcpt_decide_retry("{\"verdict\":{\"layer\":\"transport\",\"outcome\":"
                                           "\"HTTP_ERROR\",\"status\":503},\"jitter\":0}", &out),
         MCPT_OK, "");
  truth("a decision has an action", out != NULL && strstr(out, "\"action\"") != NULL);
  mcpt_string_free(out);
}

/* The last error is per thread: an error on another thread does not replace this one's. */
/* An absurd Retry-After saturates in the core (uint64_t); the getter and the JSON text say the
 * same number, UINT64_MAX, as the CLI prints it. */
static void saturated_retry_after(void) {
  McptHeader h = {(const uint8_t *)"Retry-After", 11, (const uint8_t *)"99999999999999999999", 20};
  McptVerdict *v = NULL;
  uint64_t wait = 0;
  expect("429 with a huge Retry-After", mcpt_classify(429, &h, 1, NULL, 0, NULL, &v), MCPT_OK, "");
  truth("retry-after present", mcpt_verdict_retry_after_ms(v, &wait) == 1);
  truth("retry-after saturates at UINT64_MAX", wait == UINT64_MAX);
  const char *json = mcpt_verdict_json(v, NULL);
  truth("the JSON says the same number",
        json != NULL && strstr(json, "\"retryAfterMs\":18446744073709551615,") != NULL);
  mcpt_verdict_free(v);
}

static void *fail_elsewhere(void *arg) {
  (void)arg;
  McptVerdict *v = NULL;
  mcpt_classify(77, NULL, 0, NULL, 0, NULL, &v);
  return strstr(mcpt_last_error(), "77") ? (void *)1 : NULL;
}

static void last_error_per_thread(void) {
  McptVerdict *v = NULL;
  expect("status 42 here", mcpt_classify(42, NULL, 0, NULL, 0, NULL, &v),
         MCPT_ERR_INVALID_ARGUMENT, "42");
  pthread_t t;
  void *seen = NULL;
  truth("thread started", pthread_create(&t, NULL, fail_elsewhere, NULL) == 0);
  pthread_join(t, &seen);
  truth("the other thread saw its own error", seen != NULL);
  truth("this thread keeps its error", strstr(mcpt_last_error(), "42") != NULL);
}

int main(void) {
  bad_arguments();
  finished_classifier();
  interrupted_stream();
  null_verdicts_and_strings();
  saturated_retry_after();
  last_error_per_thread();
  if (failures) {
    fprintf(stderr, "misuse: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("misuse: %d checks passed\n", checks);
  return 0;
}

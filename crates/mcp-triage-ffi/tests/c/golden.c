/* Classifies every case of a flattened golden stream through the C ABI and prints, per case, one
 * line: layer, outcome, status, JSON-RPC code, Retry-After ms, the retry decision's action, and
 * the verdict JSON, tab-separated. tests/c_abi.rs writes the stream (from the core's golden
 * vectors) and compares every line with the CLI's verdict.
 *
 * usage: golden FIXTURE CHUNK   (CHUNK 0: mcpt_classify; N > 0: new + feed N bytes at a time +
 * finish, checking that mcpt_classifier_is_decided never goes back from 1 to 0)
 *
 * Stream, per case: a text line
 *   case STATUS NHEADERS IDKIND IDNUMBER IDSTRLEN VERLEN NOWMS SCHEMALEN BODYLEN
 * then NHEADERS times a line "NAMELEN VALUELEN" followed by the name and value bytes, then the
 * id string, protocol version, schema and body bytes, then "\n". VERLEN/SCHEMALEN 0 = NULL. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_triage.h"

static void die(const char *what, int32_t rc) {
  fprintf(stderr, "golden: %s failed (%d): %s\n", what, (int)rc, mcpt_last_error());
  exit(2);
}

/* n bytes from f into a new NUL-terminated buffer (freed by the caller). */
static uint8_t *read_bytes(FILE *f, size_t n) {
  uint8_t *b = malloc(n + 1);
  if (b == NULL || fread(b, 1, n, f) != n) {
    fprintf(stderr, "golden: short read of %zu bytes\n", n);
    exit(2);
  }
  b[n] = 0;
  return b;
}

static void read_line(FILE *f, char *line, size_t size) {
  if (fgets(line, (int)size, f) == NULL) {
    fprintf(stderr, "golden: the stream ended inside a case\n");
    exit(2);
  }
}

static McptVerdict *incremental(uint16_t status, const McptHeader *h, size_t nh,
                                const uint8_t *body, size_t len, const McptCallOptions *o,
                                size_t chunk) {
  McptClassifier *c = NULL;
  McptVerdict *v = NULL;
  int32_t rc = mcpt_classifier_new(status, h, nh, o, &c);
  if (rc != MCPT_OK) die("mcpt_classifier_new", rc);
  int decided = 0;
  for (size_t at = 0; at < len; at += chunk) {
    size_t n = len - at < chunk ? len - at : chunk;
    if ((rc = mcpt_classifier_feed(c, body + at, n)) != MCPT_OK) die("mcpt_classifier_feed", rc);
    int32_t d = mcpt_classifier_is_decided(c);
    if (d < 0 || d > 1 || (decided && !d)) {
      fprintf(stderr, "golden: is_decided went %d -> %d\n", decided, (int)d);
      exit(2);
    }
    decided = d;
  }
  if ((rc = mcpt_classifier_finish(c, &v)) != MCPT_OK) die("mcpt_classifier_finish", rc);
  mcpt_classifier_free(c);
  return v;
}

/* The retry decision's action for this verdict (a read-only tool on a local server), to run the
 * retry entry point and its string ownership under valgrind; the JSON itself is the core's. */
static void print_retry_action(const char *json) {
  const char *fmt = "{\"verdict\":%s,\"hints\":{\"readOnlyHint\":true},\"localServer\":true,\"jitter\":0}";
  size_t n = strlen(fmt) + strlen(json) + 1;
  char *input = malloc(n);
  char *out = NULL;
  snprintf(input, n, fmt, json);
  int32_t rc = mcpt_decide_retry(input, &out);
  if (rc != MCPT_OK) die("mcpt_decide_retry", rc);
  const char *a = strstr(out, "\"action\":\"");
  if (a == NULL) {
    fprintf(stderr, "golden: no action in %s\n", out);
    exit(2);
  }
  a += strlen("\"action\":\"");
  printf("%.*s\t", (int)strcspn(a, "\""), a);
  mcpt_string_free(out);
  free(input);
}

static void print_verdict(const McptVerdict *v) {
  int64_t code = 0;
  size_t len = 0;
  const char *layer = mcpt_layer_name(mcpt_verdict_layer(v));
  const char *outcome = mcpt_outcome_name(mcpt_verdict_outcome(v));
  printf("%s\t%s\t%d\t", layer ? layer : "?", outcome ? outcome : "?", (int)mcpt_verdict_status(v));
  if (mcpt_verdict_jsonrpc_code(v, &code)) printf("%" PRId64 "\t", code); else printf("-\t");
  uint64_t wait = 0;
  if (mcpt_verdict_retry_after_ms(v, &wait)) printf("%" PRIu64 "\t", wait); else printf("-\t");
  const char *json = mcpt_verdict_json(v, &len);
  if (json == NULL || strlen(json) != len) {
    fprintf(stderr, "golden: verdict JSON missing or its length is wrong\n");
    exit(2);
  }
  print_retry_action(json);
  printf("%s\n", json);
}

static int one_case(FILE *f, size_t chunk) {
  char line[512];
  unsigned status;
  size_t nh, idlen, verlen, schemalen, methodlen, bodylen;
  int kind;
  int64_t idnum, now;
  if (fgets(line, sizeof line, f) == NULL) return 0;
  if (sscanf(line, "case %u %zu %d %" SCNd64 " %zu %zu %" SCNd64 " %zu %zu %zu", &status, &nh,
             &kind, &idnum, &idlen, &verlen, &now, &schemalen, &methodlen, &bodylen) != 10) {
    fprintf(stderr, "golden: bad case line: %s", line);
    exit(2);
  }
  McptHeader *h = calloc(nh ? nh : 1, sizeof *h);
  for (size_t i = 0; i < nh; i++) {
    read_line(f, line, sizeof line);
    if (sscanf(line, "%zu %zu", &h[i].name_len, &h[i].value_len) != 2) {
      fprintf(stderr, "golden: bad header line: %s", line);
      exit(2);
    }
    h[i].name = read_bytes(f, h[i].name_len);
    h[i].value = read_bytes(f, h[i].value_len);
  }
  uint8_t *id = read_bytes(f, idlen), *ver = read_bytes(f, verlen);
  uint8_t *schema = read_bytes(f, schemalen), *method = read_bytes(f, methodlen);
  uint8_t *body = read_bytes(f, bodylen);
  read_line(f, line, sizeof line);
  McptCallOptions o = {kind, idnum, id, idlen, verlen ? (const char *)ver : NULL, now, NULL,
                       schemalen ? (const char *)schema : NULL,
                       methodlen ? (const char *)method : NULL};
  McptVerdict *v = NULL;
  if (chunk == 0) {
    int32_t rc = mcpt_classify((uint16_t)status, h, nh, body, bodylen, &o, &v);
    if (rc != MCPT_OK) die("mcpt_classify", rc);
  } else {
    v = incremental((uint16_t)status, h, nh, body, bodylen, &o, chunk);
  }
  print_verdict(v);
  mcpt_verdict_free(v);
  for (size_t i = 0; i < nh; i++) {
    free((void *)h[i].name);
    free((void *)h[i].value);
  }
  free(h);
  free(id);
  free(ver);
  free(schema);
  free(method);
  free(body);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: golden FIXTURE CHUNK\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 2;
  }
  size_t chunk = (size_t)strtoul(argv[2], NULL, 10);
  while (one_case(f, chunk)) {
  }
  fclose(f);
  return 0;
}

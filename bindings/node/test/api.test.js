'use strict';
// The JavaScript surface: argument forms, the errors bad arguments throw, the retry policy.

const test = require('node:test');
const assert = require('node:assert/strict');
const { classify, StreamClassifier, decideRetry, OutputSchema } = require('..');

const OK = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}');
const JSON_CT = { 'content-type': 'application/json' };

test('classify returns the verdict object', () => {
  assert.deepStrictEqual(classify(200, JSON_CT, OK), { layer: 'application', outcome: 'TOOL_SUCCESS', resultType: 'complete', isError: false });
  const v = classify(503, [['Content-Type', 'application/json'], ['Retry-After', '2']], new Uint8Array(0));
  assert.deepEqual([v.outcome, v.status, v.retryAfterMs], ['HTTP_ERROR', 503, 2000]);
});

test('header forms: object with arrays, Map, fetch Headers, pairs, none', () => {
  const challenge = { 'www-authenticate': ['Bearer error="invalid_token"'] };
  assert.equal(classify(401, challenge, Buffer.alloc(0)).authChallenge.error, 'invalid_token');
  assert.equal(classify(200, new Map([['content-type', 'application/json']]), OK).outcome, 'TOOL_SUCCESS');
  assert.equal(classify(200, new Headers({ 'Content-Type': 'application/json' }), OK).outcome, 'TOOL_SUCCESS');
  assert.equal(classify(200, null, Buffer.alloc(0)).outcome, 'MISSING_RESPONSE');
  assert.equal(classify(200, { 'content-type': 'application/json', 'content-length': OK.length }, OK).outcome, 'TOOL_SUCCESS');
});

test('expectId type matters; now reads Retry-After dates', () => {
  assert.equal(classify(200, JSON_CT, OK, { expectId: '1' }).outcome, 'INVALID_ENVELOPE');
  const v = classify(429, { 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }, Buffer.alloc(0), { now: new Date('2015-10-21T07:28:00Z') });
  assert.equal(v.retryAfterMs, 5000);
});

test('outputSchema as an object or compiled once', () => {
  const body = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":"x"}}}');
  const schema = { type: 'object', properties: { n: { type: 'integer' } } };
  const a = classify(200, JSON_CT, body, { outputSchema: schema, protocolVersion: '2025-06-18' });
  const b = classify(200, JSON_CT, body, { outputSchema: new OutputSchema(schema), protocolVersion: '2025-06-18' });
  assert.deepStrictEqual(a, b);
  assert.equal(a.outcome, 'INVALID_TOOL_RESULT');
});

test('limits by name', () => {
  assert.deepStrictEqual(classify(200, JSON_CT, OK, { limits: { maxBodyBytes: 10 } }).limit, { name: 'maxBodyBytes', max: 10 });
});

const TIMEOUT = { layer: 'transport', outcome: 'TIMEOUT' };
for (const [what, call, kind, words] of [
  ['status string', () => classify('200', JSON_CT, OK), TypeError, 'status must be an integer'],
  ['status range', () => classify(42, JSON_CT, OK), RangeError, '100-999, got 42'],
  ['body string', () => classify(200, JSON_CT, OK.toString()), TypeError, 'got a string (encode it first'],
  ['body missing', () => classify(200, JSON_CT), TypeError, 'body must be a Buffer'],
  ['headers string', () => classify(200, 'application/json', OK), TypeError, 'headers must be an object'],
  ['header pair', () => classify(200, [['a']], OK), TypeError, 'headers[0] must be a [name, value] pair'],
  ['header value', () => classify(200, { a: {} }, OK), TypeError, 'headers["a"] must be a string'],
  ['unknown option', () => classify(200, JSON_CT, OK, { expectID: 1 }), TypeError, 'options has no member "expectID"'],
  ['expectId float', () => classify(200, JSON_CT, OK, { expectId: 1.5 }), RangeError, 'safe integer'],
  ['protocolVersion', () => classify(200, JSON_CT, OK, { protocolVersion: '2099-01-01' }), Error, 'not a known revision'],
  ['bad schema', () => classify(200, JSON_CT, OK, { outputSchema: { type: 7 } }), Error, 'invalid outputSchema'],
  ['schema string', () => classify(200, JSON_CT, OK, { outputSchema: '{}' }), TypeError, 'outputSchema must be an object'],
  ['now negative', () => classify(200, JSON_CT, OK, { now: -1 }), Error, 'now must be a time at or after 1970'],
  ['now string', () => classify(200, JSON_CT, OK, { now: 'today' }), TypeError, 'options.now must be a Date'],
  ['limits typo', () => classify(200, JSON_CT, OK, { limits: { maxBody: 1 } }), Error, 'unknown field `maxBody`'],
  ['verdict string', () => decideRetry('HTTP_ERROR'), TypeError, 'verdict must be a verdict object'],
  ['verdict shape', () => decideRetry({ outcome: 'NOPE' }), Error, 'verdict is not a verdict'],
  ['delivery', () => decideRetry(TIMEOUT, null, 'maybe'), Error, 'delivery must be'],
  ['attempt', () => decideRetry(TIMEOUT, null, 'sent', 0), RangeError, 'attempt counts the sends'],
  ['options typo', () => decideRetry(TIMEOUT, null, 'sent', 1, { maxRetry: 3 }), Error, 'unknown field `maxRetry`'],
  ['call typo', () => decideRetry(TIMEOUT, null, 'sent', 1, null, { localserver: true }), TypeError, 'call has no member "localserver"'],
  ['jitter', () => decideRetry(TIMEOUT, null, 'sent', 1, null, { jitter: 2 }), Error, 'jitter must be in [0, 1]'],
]) {
  test(`bad argument throws: ${what}`, () => {
    assert.throws(call, (e) => {
      assert.ok(e instanceof kind, `${e.constructor.name}: ${e.message}`);
      assert.ok(e.message.includes(words), e.message);
      return true;
    });
  });
}

test('StreamClassifier decides early and is used up once', () => {
  const s = new StreamClassifier(200, { 'content-type': 'text/event-stream' });
  s.feed(Buffer.from('data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'));
  assert.equal(s.isDecided, false);
  s.feed(Buffer.concat([Buffer.from('data: '), OK, Buffer.from('\n\n')]));
  assert.equal(s.isDecided, true);
  const v = s.finish();
  assert.equal(v.outcome, 'TOOL_SUCCESS');
  assert.equal(v.stream.notifications, 1);
  assert.throws(() => s.finish(), /already returned its verdict/);
  assert.throws(() => s.feed(Buffer.from('x')), /already returned its verdict/);
});

test('an interrupted legacy stream is resumed', () => {
  const s = new StreamClassifier(200, { 'content-type': 'text/event-stream' });
  s.feed(Buffer.from('id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'));
  const v = s.interrupted('deadline of 5 s passed', true);
  assert.equal(v.outcome, 'TIMEOUT');
  const d = decideRetry(v, null, 'maybe_executed', 1, null, { legacyStream: true, jitter: 0 });
  assert.deepEqual([d.action, d.lastEventId, d.delayMs], ['resume', '4', 200]);
});

test('decideRetry follows the core policy', () => {
  const v = classify(503, JSON_CT, Buffer.alloc(0));
  const unsafe = decideRetry(v, null, 'sent', 1);
  assert.equal(unsafe.action, 'give_up');
  assert.match(unsafe.reason, /resending could run it twice/);
  const hints = { title: 'Search', readOnlyHint: true };
  assert.deepStrictEqual(decideRetry(v, hints, 'sent', 1, null, { localServer: true, jitter: 0.5 }), {
    action: 'resend',
    delayMs: 300,
    reason: 'HTTP 503; safe to resend because the tool is annotated readOnlyHint (300 ms backoff)',
  });
  assert.equal(decideRetry(v, hints, 'sent', 3, null, { localServer: true }).action, 'give_up');
  assert.equal(decideRetry(v, hints, 'sent', 1, { trust: 'distrust' }, { localServer: true }).action, 'give_up');
  const keyed = decideRetry(v, null, 'sent', 1, { idempotencyKey: true, backoffBaseMs: 10 }, { jitter: 0 });
  assert.deepEqual([keyed.action, keyed.delayMs], ['resend', 10]);
  assert.equal(decideRetry(classify(200, JSON_CT, OK)).action, 'done');
});

test('options.method judges a tasks/get answer as a task poll', () => {
  const poll = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":60000}}');
  assert.equal(classify(200, JSON_CT, poll).outcome, 'INVALID_TOOL_RESULT');
  assert.equal(classify(200, JSON_CT, poll, { method: 'tasks/get' }).outcome, 'TASK_CREATED');
  const s = new StreamClassifier(200, JSON_CT, { method: 'tasks/get' });
  s.feed(poll);
  assert.equal(s.finish().outcome, 'TASK_CREATED');
  assert.throws(() => classify(200, JSON_CT, poll, { method: 7 }), /options\.method/);
});

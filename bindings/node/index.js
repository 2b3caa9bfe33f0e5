'use strict';
// mcp-triage for Node.js: the classifier of MCP tools/call responses and its retry policy.
//
// This file only checks argument types (a wrong type throws TypeError naming the argument) and
// converts arguments for the native addon (mcp-triage.node, built from src/lib.rs over the Rust
// core); every rule is the core's. A bad value of the right type (an unknown protocol version, a
// schema that does not compile, a misspelt option) throws an Error from the addon. Any body bytes
// give a verdict.

const native = require('./mcp-triage.node');

const CONTEXT_OPTIONS = ['expectId', 'protocolVersion', 'outputSchema', 'now', 'limits', 'method'];
const CALL_KEYS = ['tool', 'resumes', 'localServer', 'legacySession', 'legacyStream', 'reinitialized', 'relisted', 'jitter'];

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object (${value.constructor ? value.constructor.name : 'no prototype'})`;
  return `${typeof value} ${String(value).slice(0, 40)}`;
}

function typeError(what, want, got) {
  return new TypeError(`${what} must be ${want}, got ${describe(got)}`);
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function headerText(what, value) {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value); // res.getHeaders() gives content-length as a number
  throw typeError(what, 'a string', value);
}

// headers: a plain object (values may be arrays, as Node's IncomingHttpHeaders), a Map or a fetch
// Headers (anything with entries()), or an array of [name, value] pairs; null/undefined is none.
// Flattened to [name, value, name, value, ...] for the addon.
function headerList(headers) {
  const flat = [];
  if (headers === undefined || headers === null) return flat;
  const push = (name, value, at) => {
    const n = headerText(`headers${at} name`, name);
    if (Array.isArray(value)) {
      value.forEach((v, i) => flat.push(n, headerText(`headers${at}[${i}]`, v)));
    } else if (value !== undefined) {
      flat.push(n, headerText(`headers${at}`, value));
    }
  };
  if (Array.isArray(headers)) {
    headers.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) throw typeError(`headers[${i}]`, 'a [name, value] pair', pair);
      push(pair[0], pair[1], `[${i}]`);
    });
  } else if (headers !== null && typeof headers === 'object' && typeof headers.entries === 'function' && !isBytes(headers)) {
    for (const [name, value] of headers.entries()) push(name, value, `[${JSON.stringify(String(name))}]`);
  } else if (isPlainObject(headers)) {
    for (const name of Object.keys(headers)) push(name, headers[name], `[${JSON.stringify(name)}]`);
  } else {
    throw typeError('headers', 'an object, a Map, a Headers or an array of [name, value] pairs', headers);
  }
  return flat;
}

function isBytes(value) {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer;
}

// A Buffer or Uint8Array is passed as is (no copy); other views and ArrayBuffers are viewed as bytes.
function bodyBytes(what, body) {
  if (body instanceof Uint8Array) return body;
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (typeof body === 'string') {
    throw new TypeError(`${what} must be a Buffer, Uint8Array or ArrayBuffer, got a string (encode it first: Buffer.from(${what}))`);
  }
  throw typeError(what, 'a Buffer, Uint8Array or ArrayBuffer', body);
}

function statusArg(status) {
  if (typeof status !== 'number' || !Number.isInteger(status)) throw typeError('status', 'an integer', status);
  if (status < 100 || status > 999) throw new RangeError(`status must be an HTTP status 100-999, got ${status}`);
  return status;
}

/** A tool's outputSchema compiled once, to pass as `outputSchema` to many calls. */
class OutputSchema {
  constructor(schema) {
    if (typeof schema !== 'boolean' && !isPlainObject(schema)) {
      throw typeError('outputSchema', 'an object (a JSON Schema) or a boolean', schema);
    }
    this.schema = schema;
    this.native = new native.OutputSchema(JSON.stringify(schema));
  }
}

function checkKeys(what, obj, known) {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) throw new TypeError(`${what} has no member ${JSON.stringify(key)} (known: ${known.join(', ')})`);
  }
}

// The context arguments of the addon: [expectId, protocolVersion, outputSchema, nowMs, limitsJson, method].
function contextArgs(options) {
  if (options === undefined || options === null) options = {};
  if (!isPlainObject(options)) throw typeError('options', 'an object', options);
  checkKeys('options', options, CONTEXT_OPTIONS);
  const { expectId = 1, protocolVersion = 'unknown', outputSchema, now, limits, method = 'tools/call' } = options;
  if (typeof expectId === 'number') {
    if (!Number.isSafeInteger(expectId)) {
      throw new RangeError(`options.expectId must be a safe integer (a BigInt beyond 2^53) or a string, got ${expectId}`);
    }
  } else if (typeof expectId === 'bigint') {
    if (BigInt.asIntN(64, expectId) !== expectId) throw new RangeError(`options.expectId must fit in a signed 64-bit integer, got ${expectId}`);
  } else if (typeof expectId !== 'string') {
    throw typeError('options.expectId', 'an integer, a BigInt or a string', expectId);
  }
  if (typeof protocolVersion !== 'string') throw typeError('options.protocolVersion', 'a string', protocolVersion);
  if (typeof method !== 'string') throw typeError('options.method', 'a string', method);
  let schema = null;
  if (outputSchema instanceof OutputSchema) schema = outputSchema.native;
  else if (outputSchema !== undefined && outputSchema !== null) schema = new OutputSchema(outputSchema).native;
  let nowMs;
  if (now === undefined || now === null) nowMs = Date.now(); // the core reads no clock; live traffic means now
  else if (now instanceof Date) nowMs = now.getTime();
  else if (typeof now === 'number') nowMs = now;
  else throw typeError('options.now', 'a Date or milliseconds since 1970', now);
  if (Number.isNaN(nowMs)) throw new RangeError('options.now is an invalid Date');
  let limitsJson = null;
  if (limits !== undefined && limits !== null) {
    if (!isPlainObject(limits)) throw typeError('options.limits', 'an object', limits);
    limitsJson = JSON.stringify(limits);
  }
  return [expectId, protocolVersion, schema, nowMs, limitsJson, method];
}

/**
 * Classifies one complete HTTP response to a tools/call; returns its verdict (the verdict JSON
 * as an object: layer, outcome, and status, code, detail, warnings, ... when they apply).
 */
function classify(status, headers, body, options) {
  const s = statusArg(status);
  const h = headerList(headers);
  const b = bodyBytes('body', body);
  return JSON.parse(native.classifyJson(s, h, b, ...contextArgs(options)));
}

/**
 * The incremental classifier for a body read chunk by chunk: feed() each chunk, stop reading once
 * isDecided, then finish() (or interrupted() when the connection broke or a deadline passed).
 */
class StreamClassifier {
  #native;

  constructor(status, headers, options) {
    this.#native = new native.NativeStreamClassifier(statusArg(status), headerList(headers), ...contextArgs(options));
  }

  feed(chunk) {
    this.#native.feed(bodyBytes('chunk', chunk));
  }

  get isDecided() {
    return this.#native.isDecided;
  }

  finish() {
    return JSON.parse(this.#native.finish());
  }

  interrupted(reason, timedOut = false) {
    if (typeof reason !== 'string') throw typeError('reason', 'a string', reason);
    if (typeof timedOut !== 'boolean') throw typeError('timedOut', 'a boolean', timedOut);
    return JSON.parse(this.#native.interrupted(reason, timedOut));
  }
}

function optionalObject(what, value) {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) throw typeError(what, 'an object', value);
  return JSON.stringify(value);
}

/**
 * The retry policy after one attempt: { action, delayMs?, reason, lastEventId? }.
 * `attempt` counts the sends of the request so far, the one just judged included.
 */
function decideRetry(verdict, hints, delivery = 'sent', attempt = 1, options, call) {
  if (!isPlainObject(verdict)) throw typeError('verdict', 'a verdict object (from classify)', verdict);
  const hintsJson = optionalObject('hints', hints);
  if (typeof delivery !== 'string') throw typeError('delivery', "a string ('never_sent', 'sent', 'maybe_executed')", delivery);
  if (typeof attempt !== 'number' || !Number.isInteger(attempt)) throw typeError('attempt', 'an integer', attempt);
  if (attempt < 1 || attempt > 0xffffffff) throw new RangeError(`attempt counts the sends so far (1 after the first), got ${attempt}`);
  const optionsJson = optionalObject('options', options);
  let jitter = Math.random();
  let callJson = null;
  if (call !== undefined && call !== null) {
    if (!isPlainObject(call)) throw typeError('call', 'an object', call);
    checkKeys('call', call, CALL_KEYS);
    const { jitter: fixed, ...state } = call;
    if (fixed !== undefined) {
      if (typeof fixed !== 'number') throw typeError('call.jitter', 'a number in [0, 1]', fixed);
      jitter = fixed;
    }
    callJson = JSON.stringify(state);
  }
  return JSON.parse(native.decideRetryJson(JSON.stringify(verdict), hintsJson, delivery, attempt, optionsJson, callJson, jitter));
}

module.exports = { classify, StreamClassifier, decideRetry, OutputSchema };

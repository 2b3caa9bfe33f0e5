// Type definitions for mcp-triage (Node.js). The verdict shape is docs/verdict.schema.json.

export type Layer = 'transport' | 'protocol' | 'interaction' | 'application';

export type Outcome =
  | 'TOOL_SUCCESS'
  | 'TOOL_ERROR'
  | 'JSONRPC_ERROR'
  | 'INPUT_REQUIRED'
  | 'TASK_CREATED'
  | 'HTTP_ERROR'
  | 'MISSING_RESPONSE'
  | 'STREAM_INCOMPLETE'
  | 'CONNECTION_ERROR'
  | 'TIMEOUT'
  | 'LIMIT_EXCEEDED'
  | 'UNEXPECTED_CONTENT_TYPE'
  | 'MALFORMED_JSON'
  | 'INVALID_ENVELOPE'
  | 'INVALID_TOOL_RESULT';

/** A parsed WWW-Authenticate challenge. */
export interface AuthChallenge {
  scheme: string;
  resource_metadata?: string;
  scope?: string;
  error?: string;
  error_description?: string;
  realm?: string;
}

/** What an SSE response stream carried up to the verdict. */
export interface StreamStats {
  events: number;
  notifications: number;
  serverRequests: number;
  otherResponses: number;
  ignoredEvents: number;
  primingEvents: number;
  comments: number;
  bytes: number;
  lastEventId?: string;
  retryMs?: number;
  terminal: boolean;
}

/** A non-fatal deviation from the spec. */
export interface Warning {
  code: string;
  detail: string;
}

/** The classifier's answer for one response; fields that do not apply are absent. */
export interface Verdict {
  layer: Layer;
  outcome: Outcome;
  status?: number;
  code?: number;
  message?: string;
  resultType?: string;
  isError?: boolean;
  retryAfterMs?: number;
  authChallenge?: AuthChallenge;
  stream?: StreamStats;
  taskId?: string;
  limit?: { name: string; max: number };
  warnings?: Warning[];
  detail?: string;
}

/** Size, depth and count limits (each optional; the rest keep their defaults). */
export interface Limits {
  maxBodyBytes?: number;
  maxEventBytes?: number;
  maxStreamBytes?: number;
  maxStreamEvents?: number;
  maxDepth?: number;
  maxErrorBodyBytes?: number;
  /** Most bytes a body with a Content-Encoding may decode to (default: the body's own limit). */
  maxDecodedBytes?: number;
  /** Most decoded bytes per byte received, once 1 MiB is decoded (0: not checked; 1000). */
  maxDecodedRatio?: number;
}

export type ProtocolVersion = '2024-11-05' | '2025-03-26' | '2025-06-18' | '2025-11-25' | '2026-07-28' | 'unknown';

/** Response headers: a plain object (values may be arrays), a Map, a fetch Headers, or [name, value] pairs. */
export type HeadersInput =
  | Record<string, string | number | readonly string[] | undefined>
  | { entries(): Iterable<[string, string]> }
  | ReadonlyArray<readonly [string, string]>
  | null
  | undefined;

/** Body bytes; a string must be encoded first (Buffer.from(text)). */
export type BodyInput = Uint8Array | ArrayBufferView | ArrayBuffer;

/** What the classifier must know about the call besides the response. */
export interface ClassifyOptions {
  /** The request id the response must answer (default 1); 1 and "1" differ; a BigInt for ids beyond 2^53. */
  expectId?: number | bigint | string;
  /** The negotiated revision, or "unknown" (the default) to be lenient. */
  protocolVersion?: ProtocolVersion | string;
  /** The tool's outputSchema: a JSON Schema object, or an OutputSchema compiled once. */
  outputSchema?: OutputSchema | Record<string, unknown> | boolean | null;
  /** The clock Retry-After dates are read against (default: now). A number is ms since 1970. */
  now?: Date | number | null;
  limits?: Limits | null;
  /** The request's JSON-RPC method (default "tools/call"); "tasks/get" judges a task poll's answer (the task's state). */
  method?: string;
}

/** A tool's outputSchema compiled once; throws an Error when it does not compile. */
export declare class OutputSchema {
  constructor(schema: Record<string, unknown> | boolean);
  readonly schema: Record<string, unknown> | boolean;
}

/** Classifies one complete HTTP response to a tools/call. Any bytes give a verdict. */
export declare function classify(status: number, headers: HeadersInput, body: BodyInput, options?: ClassifyOptions): Verdict;

/**
 * The incremental classifier: feed() chunks as they arrive, stop reading once isDecided, then
 * finish() (end of body) or interrupted() (connection lost, or timedOut). Any split of the body
 * gives the verdict classify() gives for the whole body.
 */
export declare class StreamClassifier {
  constructor(status: number, headers: HeadersInput, options?: ClassifyOptions);
  feed(chunk: BodyInput): void;
  readonly isDecided: boolean;
  finish(): Verdict;
  interrupted(reason: string, timedOut?: boolean): Verdict;
}

/** The tool's annotations from tools/list; members other than these two are ignored. */
export interface ToolHints {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  [other: string]: unknown;
}

export type Delivery = 'never_sent' | 'sent' | 'maybe_executed';

/** Retry policy options; absent ones keep the defaults shown. */
export interface RetryOptions {
  /** 2 */ maxRetries?: number;
  /** 5 */ maxResumes?: number;
  /** 200 */ backoffBaseMs?: number;
  /** 2 */ backoffFactor?: number;
  /** 30000 */ maxWaitMs?: number;
  /** 'local_only' */ trust?: 'local_only' | 'trust' | 'distrust';
  safeTools?: string[];
  idempotencyKey?: boolean;
}

/** What is known about the call besides the verdict. */
export interface CallState {
  tool?: string;
  resumes?: number;
  /** The server is local (stdio or loopback): its annotations are trusted under 'local_only'. */
  localServer?: boolean;
  legacySession?: boolean;
  legacyStream?: boolean;
  reinitialized?: boolean;
  relisted?: boolean;
  /** Fixes the backoff jitter in [0, 1] (default Math.random()). */
  jitter?: number;
}

export interface RetryDecision {
  action: 'done' | 'resend' | 'resume' | 'reinitialize' | 'relist_tools' | 'give_up';
  delayMs?: number;
  reason: string;
  /** For 'resume': the Last-Event-ID to send. */
  lastEventId?: string;
}

/**
 * The retry policy after one attempt. `attempt` counts the sends of the request so far, the one
 * just judged included (1 after the first).
 */
export declare function decideRetry(
  verdict: Verdict,
  hints?: ToolHints | null,
  delivery?: Delivery,
  attempt?: number,
  options?: RetryOptions | null,
  call?: CallState | null,
): RetryDecision;

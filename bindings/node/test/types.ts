// Compiled with `tsc --noEmit --strict` by bindings/test.sh: the definitions in index.d.ts type a
// middleware's use of the package (a wrong use below would fail the build).
import { classify, decideRetry, StreamClassifier, OutputSchema, type Verdict, type RetryDecision } from 'mcp-triage';

const body: Uint8Array = new TextEncoder().encode('{}');
const v: Verdict = classify(200, { 'content-type': 'application/json' }, body, { expectId: 7, protocolVersion: '2025-06-18' });
const layer: 'transport' | 'protocol' | 'interaction' | 'application' = v.layer;
const s = new StreamClassifier(200, [['content-type', 'text/event-stream']], { outputSchema: new OutputSchema({ type: 'object' }) });
s.feed(body);
const decided: boolean = s.isDecided;
const w: Verdict = decided ? s.finish() : s.interrupted('reset', false);
const d: RetryDecision = decideRetry(w, { readOnlyHint: true }, 'maybe_executed', 1, { maxRetries: 3, trust: 'trust' }, { tool: 'search', jitter: 0.5 });
const wait: number | undefined = d.delayMs;
export { layer, wait };

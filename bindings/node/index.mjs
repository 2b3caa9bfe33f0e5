// ES module entry: the same functions as index.js (`import { classify } from 'mcp-triage'`).
import { createRequire } from 'node:module';

const triage = createRequire(import.meta.url)('./index.js');

export const { classify, StreamClassifier, decideRetry, OutputSchema } = triage;
export default triage;

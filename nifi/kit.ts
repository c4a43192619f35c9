// The NiFi kit's request templates (nifi/requests/<group>/<field>/), loaded once for the flow generator, the
// kit's test and the simulator: what each InvokeHTTP sends, rendered from FlowFile attributes exactly as NiFi's
// ReplaceText would, and the attributes each answer sets, read as NiFi's jsonPath() would.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { attributeReferences, jsonPathOf, parseTemplate, render, type Template } from './expression-language.js';

const REQUESTS_DIR = fileURLToPath(new URL('./requests/', import.meta.url));

/** Where the FlowFile's content goes in a template that declares `content` (ReplaceText's Surround strategy). */
export const CONTENT_PLACEHOLDER = '"$content"';

const CallFile = z.strictObject({
  /** Attributes the template reads; a missing one is a flow bug. */
  reads: z.array(z.string()),
  /** Attributes the template reads and sends as null when missing or empty. */
  readsIfPresent: z.array(z.string()).default([]),
  /** The variables path the FlowFile's content (a JSON value) is placed at. */
  content: z.string().optional(),
  /** A list in the answer that becomes one FlowFile per item; `sets` then read each item. */
  split: z.string().optional(),
  /** Attribute → JSON path in the answer (under $.data.<field>, or in each item of `split`). */
  sets: z.record(z.string(), z.string()).default({}),
  /** Named routes on the X-Error-Code of a 4xx answer; other codes take the call's error path. */
  errors: z.record(z.string(), z.array(z.string())).default({}),
});

export interface KitCall {
  /** `<group>/<field>`, the folder under nifi/requests. */
  id: string;
  processGroup: string;
  /** The one root field the document selects. */
  field: string;
  operation: 'query' | 'mutation';
  description: string;
  document: string;
  /** variables.json as written: JSON with NiFi expressions. */
  variables: string;
  reads: string[];
  readsIfPresent: string[];
  content: string | undefined;
  split: string | undefined;
  sets: Record<string, string>;
  errors: Record<string, string[]>;
  /** The request body InvokeHTTP sends, as ReplaceText's value: before and after the content when there is one. */
  body: { prefix: string; suffix: string } | { whole: string };
}

export interface AttributeEntry {
  sample: string;
  description: string;
}

function rootField(document: string, id: string): OperationDefinitionNode & { field: string } {
  const operations = parse(document).definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const selections = operations[0]?.selectionSet.selections ?? [];
  const field = selections[0];
  if (operations.length !== 1 || selections.length !== 1 || field?.kind !== Kind.FIELD || field.alias) {
    throw new Error(`${id}: request.graphql must hold one operation selecting one root field`);
  }
  return Object.assign(operations[0]!, { field: field.name.value });
}

/** The comment lines call.yaml opens with: what the call is for. */
function leadingComment(yaml: string): string {
  const lines: string[] = [];
  for (const line of yaml.split('\n')) {
    if (!line.startsWith('#')) break;
    lines.push(line.replace(/^# ?/, ''));
  }
  return lines.join(' ');
}

function loadCall(group: string, folder: string): KitCall {
  const id = `${group}/${folder}`;
  const dir = join(REQUESTS_DIR, group, folder);
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  const document = read('request.graphql');
  const variables = read('variables.json').trimEnd();
  const yaml = read('call.yaml');
  const spec = CallFile.parse(parseDocument(yaml).toJS());
  const operation = rootField(document, id);
  if (operation.field !== folder) throw new Error(`${id}: the folder must be named after the root field ${operation.field}`);
  if (operation.operation === 'subscription') throw new Error(`${id}: a subscription is not a NiFi call`);
  const whole = `{"query": ${JSON.stringify(document.trim())}, "variables": ${variables}}`;
  let body: KitCall['body'] = { whole };
  if (spec.content !== undefined) {
    const [prefix, suffix, ...more] = whole.split(CONTENT_PLACEHOLDER);
    if (suffix === undefined || more.length) throw new Error(`${id}: content needs ${CONTENT_PLACEHOLDER} exactly once in variables.json`);
    body = { prefix: prefix!, suffix };
  }
  return {
    id,
    processGroup: group,
    field: operation.field,
    operation: operation.operation,
    description: leadingComment(yaml),
    document,
    variables,
    reads: spec.reads,
    readsIfPresent: spec.readsIfPresent,
    content: spec.content,
    split: spec.split,
    sets: spec.sets,
    errors: spec.errors,
    body,
  };
}

let calls: ReadonlyMap<string, KitCall> | undefined;

/** Every call of nifi/requests, by id (`PG-20/reportChunk`). */
export function kitCalls(): ReadonlyMap<string, KitCall> {
  if (!calls) {
    const found = new Map<string, KitCall>();
    for (const group of readdirSync(REQUESTS_DIR, { withFileTypes: true })) {
      if (!group.isDirectory()) continue;
      for (const folder of readdirSync(join(REQUESTS_DIR, group.name), { withFileTypes: true })) {
        if (folder.isDirectory()) found.set(`${group.name}/${folder.name}`, loadCall(group.name, folder.name));
      }
    }
    calls = found;
  }
  return calls;
}

export function kitCall(id: string): KitCall {
  const call = kitCalls().get(id);
  if (!call) throw new Error(`no NiFi request ${id} under nifi/requests`);
  return call;
}

/** nifi/requests/attributes.yaml: every attribute the requests read or set, with a sample. */
export function attributeCatalogue(): Record<string, AttributeEntry> {
  const entry = z.strictObject({ sample: z.string(), description: z.string() });
  return z.record(z.string(), entry).parse(parseDocument(readFileSync(join(REQUESTS_DIR, 'attributes.yaml'), 'utf8')).toJS());
}

const parsed = new Map<string, Template>();
function template(text: string): Template {
  let found = parsed.get(text);
  if (!found) {
    found = parseTemplate(text);
    parsed.set(text, found);
  }
  return found;
}

/** The body's templates, as the generator puts them in ReplaceText: one value, or the two halves around the content. */
export function bodyTexts(call: KitCall): string[] {
  return 'whole' in call.body ? [call.body.whole] : [call.body.prefix, call.body.suffix];
}

/** Every attribute the call's body reads, from its expressions. */
export function bodyReferences(call: KitCall): Set<string> {
  const names = new Set<string>();
  for (const text of bodyTexts(call)) for (const name of attributeReferences(template(text))) names.add(name);
  return names;
}

export type Attributes = Readonly<Record<string, string | undefined>>;

/**
 * The body NiFi sends for these attributes (and, for a call with `content`, this FlowFile content). A read
 * attribute that is missing throws: whoever built the attributes forgot what the flow sets before the call.
 */
export function renderBody(call: KitCall, attributes: Attributes, content?: string): string {
  const missing = call.reads.filter((name) => attributes[name] === undefined);
  if (missing.length) throw new Error(`${call.id}: attributes missing: ${missing.join(', ')}`);
  const scope = { attributes };
  if ('whole' in call.body) return render(template(call.body.whole), scope);
  if (content === undefined) throw new Error(`${call.id}: the FlowFile content (${call.content}) is missing`);
  return render(template(call.body.prefix), scope) + content + render(template(call.body.suffix), scope);
}

/** The attributes a 2xx answer sets (UpdateAttribute with jsonPath() over the answer's body attribute). */
export function answerAttributes(call: KitCall, answer: string): Record<string, string> {
  if (answer === '') throw new Error(`${call.id}: jsonPath over an empty answer`);
  return readSets(call, JSON.parse(answer));
}

function readSets(call: KitCall, subject: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(call.sets).map(([name, path]) => [name, jsonPathOf(subject, path)]));
}

/** For a call with `split`: one attribute set per item of the answer's list (SplitJson, then EvaluateJsonPath). */
export function splitAnswer(call: KitCall, answer: string): Array<Record<string, string>> {
  if (!call.split) throw new Error(`${call.id} has no split`);
  const items = call.split
    .replace(/^\$\./, '')
    .split('.')
    .reduce((v, key) => (v as Record<string, unknown> | null)?.[key], JSON.parse(answer) as unknown);
  return Array.isArray(items) ? items.map((item) => readSets(call, item)) : [];
}

export const KIT_DOCUMENTS_FILE = new URL('../schema/documents/nifi.ts', import.meta.url);

/**
 * schema/documents/nifi.ts (`npm run nifi:flow` writes it, the kit's test compares): every call's request.graphql as a
 * typed document, so the clients that make the kit's calls send the kit's own text.
 */
export function kitDocumentsModule(): string {
  // one line a document: the text is nifi/requests', generated, not a second copy to keep
  const entries = [...kitCalls().values()]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((call) => `  '${call.id}': graphql(\`${call.document.trim().replace(/\s+/g, ' ')}\`),`);
  return [
    "// Written by `npm run nifi:flow` from nifi/requests/<group>/<field>/request.graphql, the kit's one source (do not",
    '// edit): what each NiFi call sends, typed for the clients that make the same calls (simulator, benchmarks, tests).',
    "import { graphql } from './graphql.js';",
    '',
    "/** The kit's calls by id (`PG-20/reportChunk`). */",
    'export const NIFI_REQUESTS = {',
    ...entries,
    '};',
    '',
  ].join('\n');
}

// The NiFi kit checked without running NiFi: the request templates against the schema and its input types, and the
// flow definition against the components NiFi declares (nifi/nifi-components.json, which test/nifi-engine.test.ts
// derives from NiFi's own artifacts), its own parameter context, and the attributes every template reads. No database: the schema's input coercion is all the templates meet here (the
// simulator sends them to a real API, test/simulator.test.ts).
import { readFileSync } from 'node:fs';
import {
  buildSchema as buildSdlSchema,
  getOperationAST,
  getVariableValues,
  Kind,
  parse,
  validate,
  type FieldNode,
  type SelectionSetNode,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  attributeReferences,
  escapeJson,
  EVALUATED_FUNCTION_NAMES,
  evaluateProperties,
  functionNames,
  jsonPathValue,
  parseTemplate,
  render,
} from '../../nifi/expression-language.js';
import { CATALOGUE, Group } from '../../nifi/flow-model.js';
import {
  attributeCatalogue,
  bodyReferences,
  bodyTexts,
  CONTENT_PLACEHOLDER,
  KIT_DOCUMENTS_FILE,
  kitCalls,
  kitDocumentsModule,
  renderBody,
  type KitCall,
} from '../../nifi/kit.js';
import { FLOW_FILE, FLOW_FILES, flowJson } from '../../nifi/load-control-flow.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { coerceBooleanStrings } from '../../src/graphql/scalars.js';
import { CORE_ATTRIBUTES, FlowGraph, present } from '../support/flow-graph.js';

const calls = [...kitCalls().values()];
const catalogue = attributeCatalogue();
const samples = Object.fromEntries(Object.entries(catalogue).map(([name, entry]) => [name, entry.sample]));
/** The partition plan query's records, as the manifest's content. */
const PLAN = JSON.stringify([
  { partitionId: '0000', lowerBound: '1', upperBound: '1001', upperInclusive: 'false', isNullPartition: 'false', expectedRowCount: '500' },
  {
    partitionId: '0001',
    lowerBound: '1001',
    upperBound: '2001',
    upperInclusive: 'true',
    isNullPartition: 'false',
    expectedRowCount: '400',
  },
  { partitionId: 'NULL', lowerBound: null, upperBound: null, upperInclusive: 'false', isNullPartition: 'true', expectedRowCount: '0' },
]);

const sdl = buildSdlSchema(readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8'));
const executable = buildSchema();

/** The variables InvokeHTTP would send, coerced as the API coerces them: the input types' own errors, if any. */
function inputErrors(call: KitCall, attributes: Record<string, string | undefined>): string[] {
  const body = JSON.parse(renderBody(call, attributes, PLAN)) as { query: string; variables: Record<string, unknown> };
  const document = parse(body.query);
  const refused = coerceBooleanStrings(executable, document, undefined, body.variables);
  if (refused) return [refused.message];
  const operation = getOperationAST(document)!;
  const coerced = getVariableValues(executable, operation.variableDefinitions ?? [], body.variables);
  return 'errors' in coerced ? coerced.errors!.map((e) => e.message) : [];
}

/** The names along a path of the document's selection under its root field. */
function selects(selection: SelectionSetNode | undefined, path: string[]): boolean {
  if (!path.length) return true;
  const field = selection?.selections.find((s): s is FieldNode => s.kind === Kind.FIELD && s.name.value === path[0]);
  if (!field) return false;
  // a JSON scalar (sourceMetrics) holds any key below it
  return field.selectionSet ? selects(field.selectionSet, path.slice(1)) : true;
}

describe("the kit's subset of NiFi's Expression Language", () => {
  const evaluate = (text: string, attributes: Record<string, string> = {}, parameters: Record<string, string> = {}) =>
    render(parseTemplate(text), { attributes, parameters });

  it('finds expressions as NiFi does: $${ is an escaped ${, quotes hide braces, expressions nest', () => {
    expect(evaluate('a ${x} b $${x} c', { x: '1' })).toBe('a 1 b ${x} c');
    expect(evaluate("${x:ifElse('}{', '{')}", { x: 'true' })).toBe('}{');
    expect(evaluate("${a:equals(${b}):ifElse('same', 'other')}", { a: '7', b: '7' })).toBe('same');
    expect(evaluate("${'odd name':append(#{P})}", { 'odd name': 'x' }, { P: 'y' })).toBe('xy');
    expect(evaluate('{"a": ${missing}}')).toBe('{"a": }');
    expect([...attributeReferences(parseTemplate("${a:equals(${b.c}):and(${'d e'})} ${UUID()}"))]).toEqual(['a', 'b.c', 'd e']);
    expect(() => parseTemplate('${unterminated')).toThrow(/unterminated/);
    expect(() => evaluate('${x:toUpper()}', { x: 'a' })).toThrow("toUpper() is not in the kit's expression subset");
  });

  it('evaluates its functions with NiFi’s handling of missing attributes', () => {
    expect(evaluate('${x:isEmpty()} ${y:isEmpty()} ${z:isEmpty()}', { y: '  ', z: 'v' })).toBe('true true false');
    expect(evaluate("${x:ifElse('a', 'b')}|${t:ifElse('a', 'b')}|${f:not()}", { t: 'true', f: 'false' })).toBe('|a|true');
    expect(evaluate("${x:prepend('<'):append('>')} ${x:equals('')}")).toBe('<> false');
    expect(evaluate("${literal('#')}")).toBe('#');
  });

  it('escapes JSON as commons-text does for escapeJson(): slashes too, and everything outside ASCII as UTF-16 units', () => {
    expect(escapeJson('"\\/\b\f\n\r\t\u0001\u007fé🚀')).toBe('\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u007F\\u00E9\\uD83D\\uDE80');
    expect(JSON.parse(`"${escapeJson('any "text" \\ é 🚀\u0000')}"`)).toBe('any "text" \\ é 🚀\u0000');
  });

  it('reads answers as jsonPath() does: scalars as text, null and missing paths empty', () => {
    const answer = JSON.stringify({ data: { f: { n: 5, b: false, s: 'x', z: null, list: ['first', 'second'], o: {} } } });
    expect(['n', 'b', 's', 'z', 'missing', 'list[1]'].map((p) => jsonPathValue(answer, `$.data.f.${p}`))).toEqual([
      '5',
      'false',
      'x',
      '',
      '',
      'second',
    ]);
    expect(() => jsonPathValue(answer, '$.data.f.o')).toThrow(/not a scalar/);
    expect(() => jsonPathValue('', '$.data')).toThrow(/empty/);
  });
});

describe('the request templates (nifi/requests)', () => {
  it('cover every call the flow makes, each a document of one root field that validates against schema/schema.graphql', () => {
    expect(calls.map((c) => c.id).sort()).toEqual(
      [
        'PG-10/createRun',
        'PG-10/registerManifest',
        'PG-10/failRun',
        'PG-20/claimPartition',
        'PG-20/reportChunk',
        'PG-20/failPartition',
        'PG-40/startValidation',
        'PG-40/recordMetrics',
        'PG-40/markStageValidated',
        'PG-50/claimPublish',
        'PG-50/reportPublishResult',
        'PG-60/recordMetrics',
        'PG-60/markSuccess',
        'PG-70/cleanupCandidates',
        'PG-70/recordCleanup',
        'PG-90/recordEvent',
        'PG-90/failRun',
        'GATE/recordObservation',
        'GATE/readiness',
        'GATE/publish',
      ].sort(),
    );
    for (const call of calls) expect(validate(sdl, parse(call.document)), call.id).toEqual([]);
  });

  it('with the sample attributes, send variables the input types accept', () => {
    for (const call of calls) expect(inputErrors(call, samples), call.id).toEqual([]);
  });

  it('send null for what they may do without, and the input types accept that too', () => {
    for (const call of calls.filter((c) => c.readsIfPresent.length)) {
      const without = { ...samples, ...Object.fromEntries(call.readsIfPresent.map((name) => [name, undefined])) };
      expect(inputErrors(call, without), call.id).toEqual([]);
      const empty = { ...samples, ...Object.fromEntries(call.readsIfPresent.map((name) => [name, ''])) };
      expect(inputErrors(call, empty), call.id).toEqual([]);
    }
  });

  it('escape every attribute with escapeJson(): values that would break JSON arrive as they were', () => {
    const hostile = (name: string) => `"}\\/${name}\n\t\u0001é—🚀'`;
    for (const call of calls) {
      const attributes = Object.fromEntries([...call.reads, ...call.readsIfPresent].map((name) => [name, hostile(name)]));
      const strings: string[] = [];
      const collect = (value: unknown): void => {
        if (typeof value === 'string') strings.push(value);
        else if (value && typeof value === 'object') Object.values(value).forEach(collect);
      };
      collect(JSON.parse(renderBody(call, attributes, PLAN)).variables);
      for (const name of Object.keys(attributes)) expect(strings, `${call.id}: ${name}`).toContain(hostile(name));
    }
  });

  it('declare what they read, the attribute catalogue describes all of it, and they use only the expressions the kit evaluates', () => {
    const used = new Set<string>();
    for (const call of calls) {
      expect([...bodyReferences(call)].sort(), call.id).toEqual([...call.reads, ...call.readsIfPresent].sort());
      for (const name of [...call.reads, ...call.readsIfPresent, ...Object.keys(call.sets)]) {
        expect(catalogue, `${call.id}: ${name}`).toHaveProperty([name]);
        used.add(name);
      }
      for (const text of bodyTexts(call)) {
        for (const fn of functionNames(parseTemplate(text))) expect(EVALUATED_FUNCTION_NAMES, `${call.id}: ${fn}()`).toContain(fn);
      }
      expect(call.content === undefined, call.id).toBe(!call.variables.includes(CONTENT_PLACEHOLDER));
    }
    expect(Object.keys(catalogue).filter((name) => !used.has(name))).toEqual([]);
  });

  it('read answers the document selects: $.data.<field>, or each item of a split list', () => {
    for (const call of calls) {
      const root = parse(call.document).definitions[0]!;
      const field = (root as { selectionSet: SelectionSetNode }).selectionSet.selections[0] as FieldNode;
      const under = call.split ? call.split.split('.').slice(1) : ['data', call.field];
      expect(under.slice(0, 2), call.id).toEqual(['data', call.field]);
      for (const [attribute, path] of Object.entries(call.sets)) {
        const steps = path
          .replace(/\[\d+\]/g, '')
          .split('.')
          .slice(1);
        const relative = call.split ? steps : steps.slice(2);
        if (!call.split) expect(steps.slice(0, 2), `${call.id}: ${attribute}`).toEqual(['data', call.field]);
        expect(selects(field.selectionSet, relative), `${call.id}: ${attribute} ← ${path}`).toBe(true);
      }
    }
  });
});

describe('the flow generator (nifi/flow-model.ts)', () => {
  const route = (dynamic: Record<string, string>) => () =>
    new Group('planted', '', 'context').processor({
      name: 'route',
      type: 'RouteOnAttribute',
      properties: { 'Routing Strategy': 'Route to Property name' },
      dynamic,
    });

  it('refuses #{…} inside a string literal of an expression, which NiFi leaves as text', () => {
    expect(route({ r: "${a:equals('/control/#{LOAD.JOB.KEY}')}" })).toThrow(
      /RouteOnAttribute: r: #\{LOAD\.JOB\.KEY\} inside a string literal of an expression is text to NiFi/,
    );
    expect(route({ r: '${a:ifElse("#{X}", \'b\')}' })).toThrow(/#\{X\} inside a string literal/);
    expect(route({ r: "${a:equals(${#{LOAD.JOB.KEY}:prepend('/control/')})}" })).not.toThrow();
    expect(route({ r: '${a:equals(#{LOAD.JOB.KEY})}' })).not.toThrow();
  });

  it("refuses a value outside a property's allowable values, and a property NiFi lacks", () => {
    const processor = (properties: Record<string, string>) => () =>
      new Group('planted', '', 'context').processor({ name: 'route', type: 'RouteOnAttribute', properties });
    expect(processor({ 'Routing Strategy': 'Route to Property Name' })).toThrow(
      /"Route to Property Name" is not one of Routing Strategy's values/,
    );
    expect(processor({ 'Routing Strategy': '#{STRATEGY}' })).not.toThrow();
    expect(processor({ 'Routing strategy': 'Route to Property name' })).toThrow(/no property "Routing strategy"/);
  });
});

describe("the kit's typed documents (schema/documents/nifi.ts)", () => {
  it('are what `npm run nifi:flow` writes from nifi/requests', () => {
    expect(
      readFileSync(KIT_DOCUMENTS_FILE, 'utf8') === kitDocumentsModule(),
      'run npm run nifi:flow and commit schema/documents/nifi.ts',
    ).toBe(true);
  });
});

describe('the flow definition (nifi/load-control-flow.json)', () => {
  const committed = readFileSync(FLOW_FILE, 'utf8');
  const flow = JSON.parse(committed);
  const graph = new FlowGraph(flow);
  const context = flow.parameterContexts[flow.flowContents.parameterContextName];
  const parameters: Record<string, string> = Object.fromEntries(
    context.parameters.map((p: { name: string; value: string | null }) => [p.name, p.value ?? 'secret']),
  );
  const processors = [...graph.nodes.values()].filter((n) => n.kind === 'PROCESSOR');
  const describe_ = (n: { group: string; name: string }) => `${n.group}/${n.name}`;

  it('is what `npm run nifi:flow` generates, as are its NiFi 2.7 and OAuth2 siblings', () => {
    for (const { nifi, apiAuth, file } of FLOW_FILES) {
      expect(readFileSync(file, 'utf8') === flowJson(nifi, apiAuth), `run npm run nifi:flow and commit ${file.pathname}`).toBe(true);
    }
  });

  it('has OAuth2 siblings whose every InvokeHTTP takes its token from one StandardOauth2AccessTokenProvider, not CONTROL.API.AUTHORIZATION', () => {
    type Component = { identifier: string; type: string; properties: Record<string, string> };
    type FlowGroup = { processors: Component[]; controllerServices: Component[]; processGroups: FlowGroup[] };
    const invokes = (g: FlowGroup): Component[] => [
      ...g.processors.filter((p) => p.type.endsWith('.InvokeHTTP')),
      ...g.processGroups.flatMap(invokes),
    ];
    const parameterNames = (definition: typeof flow) =>
      (Object.values(definition.parameterContexts)[0] as { parameters: Array<{ name: string }> }).parameters.map((p) => p.name);
    for (const [token, oauth2] of [
      [FLOW_FILES[0], FLOW_FILES[2]],
      [FLOW_FILES[1], FLOW_FILES[3]],
    ] as const) {
      const plain = JSON.parse(readFileSync(token.file, 'utf8'));
      const other = JSON.parse(readFileSync(oauth2.file, 'utf8'));
      const provider = (other.flowContents.controllerServices as Component[]).find((c) =>
        c.type.endsWith('.StandardOauth2AccessTokenProvider'),
      )!;
      expect(provider.properties).toMatchObject({
        'grant-type': 'client_credentials',
        'authorization-server-url': '#{CONTROL.API.OAUTH2.TOKEN.URL}',
        'client-id': '#{CONTROL.API.OAUTH2.CLIENT.ID}',
        'client-secret': '#{CONTROL.API.OAUTH2.CLIENT.SECRET}',
      });
      const described = provider as unknown as {
        propertyDescriptors: Record<string, { sensitive: boolean }>;
        controllerServiceApis: Array<{ type: string }>;
        bundle: { artifact: string };
      };
      expect(described.bundle.artifact).toBe('nifi-oauth2-provider-nar');
      expect(described.controllerServiceApis.map((api) => api.type)).toEqual(['org.apache.nifi.oauth2.OAuth2AccessTokenProvider']);
      expect(described.propertyDescriptors['client-secret']!.sensitive).toBe(true);
      const secret = (
        Object.values(other.parameterContexts)[0] as { parameters: Array<{ name: string; sensitive: boolean }> }
      ).parameters.find((p) => p.name === 'CONTROL.API.OAUTH2.CLIENT.SECRET');
      expect(secret?.sensitive).toBe(true);
      const calls = invokes(other.flowContents);
      expect(calls.length).toBe(invokes(plain.flowContents).length);
      for (const call of calls) {
        expect(call.properties['Request OAuth2 Access Token Provider']).toBe(provider.identifier);
        expect(call.properties.Authorization).toBeUndefined();
      }
      for (const call of invokes(plain.flowContents)) expect(call.properties.Authorization).toBe('#{CONTROL.API.AUTHORIZATION}');
      expect(parameterNames(other)).not.toContain('CONTROL.API.AUTHORIZATION');
      expect(parameterNames(other)).toEqual(
        expect.arrayContaining(['CONTROL.API.OAUTH2.TOKEN.URL', 'CONTROL.API.OAUTH2.CLIENT.ID', 'CONTROL.API.OAUTH2.CLIENT.SECRET']),
      );
    }
  });

  it("differs for NiFi 2.7.0 and later only by the Parquet writer's compression property, renamed there without a migration", () => {
    const later = JSON.parse(readFileSync(FLOW_FILES[1].file, 'utf8'));
    const parquet = (definition: typeof flow) =>
      definition.flowContents.controllerServices.find((s: { type: string }) => s.type.endsWith('.ParquetRecordSetWriter'));
    expect([parquet(flow).properties, parquet(later).properties]).toEqual([
      { 'Schema Write Strategy': 'no-schema', 'schema-access-strategy': 'inherit-record-schema', 'compression-type': 'SNAPPY' },
      { 'Schema Write Strategy': 'no-schema', 'schema-access-strategy': 'inherit-record-schema', 'Compression Type': 'SNAPPY' },
    ]);
    expect(parquet(later).propertyDescriptors['Compression Type']).toEqual({
      name: 'Compression Type',
      displayName: 'Compression Type',
      identifiesControllerService: false,
      sensitive: false,
    });
    parquet(later).properties = parquet(flow).properties;
    parquet(later).propertyDescriptors = parquet(flow).propertyDescriptors;
    expect(JSON.stringify(later)).toBe(JSON.stringify(flow));
  });

  it('holds the process groups of the README, each with the parameter context', () => {
    expect(graph.groups.map((g) => g.path.split('/').at(-1))).toEqual([
      'Load Control',
      'PG-05 Control Receiver',
      'PG-10 Run Coordinator',
      'PG-20 Extract Worker',
      'PG-40 Staging Validation',
      'PG-50 Publish',
      'PG-60 Target Validation',
      'PG-70 Cleanup',
      'GATE Business-Date Gate',
      'PG-90 Error and Event',
    ]);
    for (const group of graph.groups) expect(group.json.parameterContextName, group.path).toBe(context.name);
  });

  it('uses only the processors, services, bundles and property names of nifi/nifi-components.json', () => {
    const components = [
      ...processors.map((n) => ({ where: describe_(n), json: n.json })),
      ...[...graph.services.values()].map((s) => ({ where: s.json.name, json: s.json })),
    ];
    for (const { where, json } of components) {
      const spec = CATALOGUE.components[json.type];
      expect(spec, `${where}: ${json.type}`).toBeDefined();
      expect(json.bundle, where).toEqual({ ...spec!.bundle, version: CATALOGUE.nifiVersion });
      for (const [name, descriptor] of Object.entries(json.propertyDescriptors as Record<string, Record<string, unknown>>)) {
        expect(Object.keys(json.properties), where).toContain(name);
        const known = spec!.properties[name];
        if (known) {
          expect(descriptor, `${where}: ${name}`).toEqual({
            name,
            displayName: known.displayName,
            identifiesControllerService: !!known.service,
            sensitive: !!known.sensitive,
          });
        } else {
          expect(descriptor.dynamic && spec!.dynamicProperties, `${where}: ${name} is not a property of ${json.type}`).toBeTruthy();
          if (descriptor.sensitive) expect(spec!.sensitiveDynamicProperties, `${where}: ${name}`).toBe(true);
        }
      }
      expect(Object.keys(json.properties).sort(), where).toEqual(Object.keys(json.propertyDescriptors).sort());
    }
  });

  it('points every service property at a service of the group or above it that provides the API', () => {
    for (const node of processors) {
      for (const [name, known] of Object.entries(node.spec!.properties)) {
        const value = node.json.properties[name];
        if (!known.service || value === undefined) continue;
        const service = graph.services.get(value);
        expect(service, `${describe_(node)}: ${name}`).toBeDefined();
        expect(node.group.startsWith(service!.path), `${describe_(node)}: ${name} is out of scope`).toBe(true);
        expect(CATALOGUE.components[service!.json.type]!.provides, `${describe_(node)}: ${name}`).toContain(known.service);
      }
    }
  });

  it('routes a claim refused POOL_FULL (claimable partition, extracting run) to a penalised wait that sends the same claim again, other refusals nowhere', () => {
    const node = (name: string) => processors.find((n) => n.group.includes('PG-20') && n.name === name)!;
    const router = node('claimed?');
    const routesFor = (answer: Record<string, string>) =>
      Object.entries(evaluateProperties(router.json.properties, answer))
        .filter(([name, value]) => name !== 'Routing Strategy' && value === 'true')
        .map(([name]) => name);
    const answer = (claimed: string, runStatus: string, partitionStatus: string) => ({
      'load.partition.claimed': claimed,
      'load.run.status': runStatus,
      'load.partition.status': partitionStatus,
    });
    expect(routesFor(answer('true', 'EXTRACTING', 'RUNNING'))).toEqual(['claimed']);
    // still claimable in an extracting run, yet refused: POOL_FULL
    expect(routesFor(answer('false', 'EXTRACTING', 'PENDING'))).toEqual(['pool full']);
    expect(routesFor(answer('false', 'EXTRACTING', 'RETRY'))).toEqual(['pool full']);
    // another owner, a partition done, a run that moved on: dropped
    expect(routesFor(answer('false', 'EXTRACTING', 'RUNNING'))).toEqual([]);
    expect(routesFor(answer('false', 'EXTRACTING', 'SUCCESS'))).toEqual([]);
    expect(routesFor(answer('false', 'CANCELLED', 'PENDING'))).toEqual([]);

    const wait = node('claim: wait for a pool slot');
    const next = (from: string, relationship: string) =>
      graph.edges.filter((e) => e.from === from && e.relationships.includes(relationship)).map((e) => graph.nodes.get(e.to)!.name);
    expect(next(router.id, 'pool full')).toEqual([wait.name]);
    expect(wait.json.properties).toMatchObject({ 'penalize-retries': 'true', 'maximum-retries': '2880' });
    expect(next(wait.id, 'retry')).toEqual(['claimPartition']);
  });

  it('connects or auto-terminates every relationship of every processor, and connects every port', () => {
    const unhandled: string[] = [];
    for (const node of processors) {
      const connected = new Set(graph.edges.filter((e) => e.from === node.id).flatMap((e) => e.relationships));
      const relationships = graph.relationships(node);
      for (const relationship of relationships) {
        if (!connected.has(relationship) && !node.json.autoTerminatedRelationships.includes(relationship))
          unhandled.push(`${describe_(node)}: ${relationship}`);
      }
      for (const relationship of [...connected, ...node.json.autoTerminatedRelationships]) {
        expect(relationships, `${describe_(node)} has no relationship ${relationship}`).toContain(relationship);
      }
    }
    expect(unhandled).toEqual([]);
    for (const edge of graph.edges) {
      expect(graph.nodes.has(edge.from) && graph.nodes.has(edge.to), JSON.stringify(edge)).toBe(true);
      if (graph.nodes.get(edge.from)!.kind !== 'PROCESSOR') expect(edge.relationships).toEqual(['']);
    }
    for (const port of [...graph.nodes.values()].filter((n) => n.kind === 'OUTPUT_PORT')) {
      expect(
        graph.edges.some((e) => e.from === port.id),
        `${describe_(port)} leads nowhere`,
      ).toBe(true);
    }
    for (const port of [...graph.nodes.values()].filter((n) => n.kind === 'INPUT_PORT')) {
      expect(
        graph.edges.some((e) => e.from === port.id),
        `${describe_(port)} leads nowhere`,
      ).toBe(true);
    }
  });

  it('makes every call from its template, and sends them as the README says', () => {
    const bodies = processors.filter((n) => n.json.name.endsWith(': request body'));
    const made = new Set<string>();
    for (const node of bodies) {
      const properties = node.json.properties;
      const texts =
        properties['Replacement Strategy'] === 'Surround'
          ? [properties['Text to Prepend'], properties['Text to Append']]
          : [properties['Replacement Value']];
      const call = calls.find((c) => JSON.stringify(bodyTexts(c)) === JSON.stringify(texts));
      expect(call, `${describe_(node)} sends a body of nifi/requests`).toBeDefined();
      made.add(call!.id);
      const [http] = graph.edges
        .filter((e) => e.from === node.id && e.relationships.includes('success'))
        .map((e) => graph.nodes.get(e.to)!);
      expect(http!.json.type, describe_(node)).toBe('org.apache.nifi.processors.standard.InvokeHTTP');
      const p = http!.json.properties;
      expect([p['HTTP Method'], p['HTTP URL'], p['Request Content-Type']]).toEqual([
        'POST',
        '#{CONTROL.API.URL}/graphql',
        'application/json; charset=UTF-8',
      ]);
      expect([p['Response Header Request Attributes Enabled'], p['Response Header Request Attributes Prefix']]).toEqual([
        'true',
        'load.api.header.',
      ]);
      expect(Number(p['Response Body Attribute Size'])).toBeGreaterThanOrEqual(8192);
      expect(p.Authorization).toBe('#{CONTROL.API.AUTHORIZATION}');
      expect(graph.services.get(p['SSL Context Service'])?.json.name, describe_(http!)).toBe('Load Control API TLS');
      expect(http!.json.propertyDescriptors.Authorization.sensitive).toBe(true);
      // 5xx: retried by NiFi with penalization, then a 503 goes round again; 4xx: never retried
      expect([http!.json.retriedRelationships, http!.json.backoffMechanism]).toEqual([['Retry'], 'PENALIZE_FLOWFILE']);
      const retry = graph.edges.find((e) => e.from === http!.id && e.relationships.includes('Retry'))!;
      const unavailable = graph.nodes.get(retry.to)!;
      expect(unavailable.json.properties.unavailable).toBe("${invokehttp.status.code:equals('503')}");
      expect(graph.edges.some((e) => e.from === unavailable.id && e.to === http!.id && e.relationships.includes('unavailable'))).toBe(true);
      const noRetry = graph.edges.find((e) => e.from === http!.id && e.relationships.includes('No Retry'))!;
      expect(noRetry.to).not.toBe(http!.id);
    }
    expect([...made].sort()).toEqual(calls.map((c) => c.id).sort());
  });

  it('references only parameters of its context; a sensitive one only as the whole value of a sensitive property', () => {
    const used = new Set<string>();
    const all = [...processors.map((n) => n.json), ...[...graph.services.values()].map((s) => s.json)];
    for (const json of all) {
      for (const [name, value] of Object.entries(json.properties as Record<string, string>)) {
        const sensitiveProperty = json.propertyDescriptors[name].sensitive;
        for (const [, parameter] of value.matchAll(/#\{([^}]+)\}/g)) {
          const declared = context.parameters.find((p: { name: string }) => p.name === parameter);
          expect(declared, `${json.name}: #{${parameter}}`).toBeDefined();
          used.add(parameter!);
          expect(declared.sensitive, `${json.name}: ${name} = ${value}`).toBe(sensitiveProperty);
          if (declared.sensitive) expect(value, `${json.name}: ${name}`).toBe(`#{${parameter}}`);
        }
      }
    }
    expect(context.parameters.map((p: { name: string }) => p.name).filter((name: string) => !used.has(name))).toEqual([]);
    expect(
      context.parameters.filter((p: { sensitive: boolean }) => p.sensitive).map((p: { name: string; value: unknown }) => [p.name, p.value]),
    ).toEqual([
      ['CONTROL.API.AUTHORIZATION', null],
      ['CONTROL.RECEIVER.KEYSTORE.PASSWORD', null],
      ['CONTROL.RECEIVER.TRUSTSTORE.PASSWORD', null],
      ['ORACLE.PASSWORD', null],
    ]);
  });

  it('sets every attribute a template reads upstream of it, on every path (or on some, for what it may do without)', () => {
    const { always, sometimes } = graph.attributesArriving();
    const missing: string[] = [];
    for (const node of processors.filter((n) => n.json.name.endsWith(': request body'))) {
      const call = calls.find((c) => describe_(node).includes(c.processGroup) && node.json.name === `${c.field}: request body`)!;
      for (const name of call.reads)
        if (!present(always.get(node.id)!, name)) missing.push(`${describe_(node)}: ${name} is not set on every path`);
      for (const name of call.readsIfPresent) {
        if (!present(sometimes.get(node.id)!, name) && !CORE_ATTRIBUTES.has(name)) missing.push(`${describe_(node)}: ${name} is never set`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('parses every expression of the flow, each reading attributes set upstream of it', () => {
    const { sometimes } = graph.attributesArriving();
    const unset: string[] = [];
    for (const { node, property, template } of graph.expressions(parameters)) {
      const own = graph.writes(node);
      for (const name of attributeReferences(template)) {
        if (!present(sometimes.get(node.id)!, name) && !present(new Set(own), name) && !CORE_ATTRIBUTES.has(name)) {
          unset.push(`${describe_(node)}: ${property} reads ${name}`);
        }
      }
    }
    expect(unset).toEqual([]);
  });
});

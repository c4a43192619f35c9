// Builds a NiFi 2.x flow definition (what "Upload flow definition" takes: a RegisteredFlowSnapshot whose
// flowContents is a VersionedProcessGroup) from process groups declared in code. Components are named by their
// simple class name and may only use the properties nifi/nifi-components.json lists for them (present at every
// NiFi version the catalogue read, with one of their allowable values), so a typo in a property name or a value
// fails the generator, not the import; so does a `#{…}` inside an expression's string literal, which NiFi leaves
// as text. Identifiers are derived from each component's place and
// name, so the same declaration always gives the same file.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parametersInLiterals, parseTemplate } from './expression-language.js';

interface PropertySpec {
  displayName: string;
  sensitive?: boolean;
  /** The controller service API the property references. */
  service?: string;
  required?: boolean;
  defaultValue?: string | null;
  /** The only values NiFi accepts (null: any). */
  allowableValues?: string[] | null;
  /** NONE, ENVIRONMENT or FLOWFILE_ATTRIBUTES: whether NiFi evaluates `${…}` in the value. */
  expressionLanguage?: string;
  /** The catalogue versions the property exists in. */
  versions?: string[];
}

export interface ComponentSpec {
  kind: 'processor' | 'controller-service';
  bundle: { group: string; artifact: string };
  /** Where each catalogue version was read (the file, by reflection or from a NAR's manifest), or why it is hand-kept. */
  origin: string | Record<string, string>;
  properties: Record<string, PropertySpec>;
  /** Properties NiFi renamed without migrating them: the flow for NiFi `in` and later uses `to`. */
  renamed?: Record<string, { to: string; in: string; issue: string }>;
  /** What a dynamic (user-added) property is: an attribute set, a relationship, a request header. */
  dynamicProperties?: 'attribute' | 'relationship' | 'request-header';
  sensitiveDynamicProperties?: boolean;
  relationships?: string[];
  /** Attributes written, `*` standing for any suffix. */
  writes?: string[];
  /** Properties whose value names an attribute the component writes. */
  writesNamedBy?: string[];
  /** Properties whose value prefixes attributes the component writes. */
  writesPrefixedBy?: string[];
  /** The APIs a controller service provides. */
  provides?: string[];
}

export interface ComponentCatalogue {
  nifiVersion: string;
  /** The NiFi versions the derived components were read at. */
  versions: string[];
  source: string;
  serviceApis: Record<string, { group: string; artifact: string }>;
  components: Record<string, ComponentSpec>;
}

export const CATALOGUE: ComponentCatalogue = JSON.parse(readFileSync(new URL('./nifi-components.json', import.meta.url), 'utf8'));

/** The catalogue's class whose simple name this is. */
function componentType(simpleName: string): string {
  const found = Object.keys(CATALOGUE.components).filter((type) => type.endsWith(`.${simpleName}`));
  if (found.length !== 1) throw new Error(`${simpleName}: not one component of nifi/nifi-components.json`);
  return found[0]!;
}

/** A UUID (version 5 layout) from a text: the component's path in the flow. */
function stableId(text: string): string {
  const hex = createHash('sha1').update(text).digest('hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export interface Ref {
  id: string;
  groupId: string;
  name: string;
  type: 'PROCESSOR' | 'INPUT_PORT' | 'OUTPUT_PORT';
}

export interface ProcessorOptions {
  name: string;
  /** Simple class name: InvokeHTTP, UpdateAttribute… */
  type: string;
  comments?: string;
  properties?: Record<string, string>;
  dynamic?: Record<string, string>;
  sensitiveDynamic?: Record<string, string>;
  autoTerminate?: string[];
  /** A Quartz cron expression (CRON_DRIVEN) instead of running whenever there is work. */
  cron?: string;
  primaryNodeOnly?: boolean;
  concurrency?: number;
  penalty?: string;
  /** NiFi's own retry of a relationship, penalizing the FlowFile between attempts. */
  retry?: { count: number; relationships: string[] };
}

export interface ServiceOptions {
  name: string;
  type: string;
  comments?: string;
  properties: Record<string, string>;
}

type Json = Record<string, unknown>;

const bundleOf = (spec: { bundle: { group: string; artifact: string } }) => ({ ...spec.bundle, version: CATALOGUE.nifiVersion });

function descriptors(type: string, spec: ComponentSpec, properties: Record<string, string>, dynamic: Record<string, boolean>): Json {
  const out: Json = {};
  for (const name of Object.keys(properties)) {
    const known = spec.properties[name];
    if ((known?.expressionLanguage ?? 'FLOWFILE_ATTRIBUTES') !== 'NONE') refuseParametersInLiterals(type, name, properties[name]!);
    if (known) {
      checkAgainstNifi(type, spec, name, known, properties[name]!);
      out[name] = { name, displayName: known.displayName, identifiesControllerService: !!known.service, sensitive: !!known.sensitive };
    } else if (name in dynamic && spec.dynamicProperties) {
      if (dynamic[name] && !spec.sensitiveDynamicProperties) throw new Error(`${type}: no sensitive dynamic properties (${name})`);
      out[name] = { name, displayName: name, identifiesControllerService: false, sensitive: dynamic[name], dynamic: true };
    } else {
      throw new Error(`${type}: no property ${JSON.stringify(name)} in nifi/nifi-components.json`);
    }
  }
  return out;
}

/** NiFi substitutes a parameter only outside `${…}`: inside an expression's string literal `#{…}` stays text. */
function refuseParametersInLiterals(type: string, name: string, value: string): void {
  const inLiterals = parametersInLiterals(parseTemplate(value));
  if (inLiterals.length) {
    throw new Error(
      `${type}: ${name}: ${inLiterals.join(', ')} inside a string literal of an expression is text to NiFi; reference it as \${#{…}} or as an argument: ${value}`,
    );
  }
}

/** A property NiFi lacks at a checked version, or a value outside its allowable values, fails the generator. */
function checkAgainstNifi(type: string, spec: ComponentSpec, name: string, known: PropertySpec, value: string): void {
  if (known.versions && typeof spec.origin === 'object') {
    const missing = Object.keys(spec.origin).filter((version) => !known.versions!.includes(version));
    if (missing.length) throw new Error(`${type}: NiFi ${missing.join(', ')} has no property ${JSON.stringify(name)}`);
  }
  const literal = !value.includes('#{') && !value.includes('${');
  if (known.allowableValues && literal && !known.allowableValues.includes(value)) {
    throw new Error(`${type}: ${JSON.stringify(value)} is not one of ${name}'s values (${known.allowableValues.join(', ')})`);
  }
}

const GRID = { columns: 5, width: 420, height: 240 };
const position = (index: number, column = index % GRID.columns, row = Math.floor(index / GRID.columns)) => ({
  x: column * GRID.width,
  y: row * GRID.height,
});

export class Group {
  readonly id: string;
  private readonly processors: Json[] = [];
  private readonly inputPorts: Json[] = [];
  private readonly outputPorts: Json[] = [];
  private readonly connections: Json[] = [];
  private readonly services: Json[] = [];
  private readonly groups: Group[] = [];
  private readonly names = new Set<string>();

  constructor(
    readonly name: string,
    private readonly comments: string,
    private readonly parameterContext: string,
    private readonly path: string = name,
    private readonly parent: Group | undefined = undefined,
  ) {
    this.id = stableId(`group:${path}`);
  }

  private claimName(kind: string, name: string): string {
    if (this.names.has(`${kind}:${name}`)) throw new Error(`${this.path}: two ${kind}s named ${name}`);
    this.names.add(`${kind}:${name}`);
    return stableId(`${this.path}/${kind}:${name}`);
  }

  child(name: string, comments: string): Group {
    const group = new Group(name, comments, this.parameterContext, `${this.path}/${name}`, this);
    this.claimName('group', name);
    this.groups.push(group);
    return group;
  }

  processor(o: ProcessorOptions): Ref {
    const type = componentType(o.type);
    const spec = CATALOGUE.components[type]!;
    if (spec.kind !== 'processor') throw new Error(`${o.type} is not a processor`);
    const id = this.claimName('processor', o.name);
    const properties = { ...o.properties, ...o.dynamic, ...o.sensitiveDynamic };
    const dynamic = {
      ...Object.fromEntries(Object.keys(o.dynamic ?? {}).map((k) => [k, false])),
      ...Object.fromEntries(Object.keys(o.sensitiveDynamic ?? {}).map((k) => [k, true])),
    };
    this.processors.push({
      identifier: id,
      name: o.name,
      comments: o.comments ?? '',
      position: position(this.processors.length),
      type,
      bundle: bundleOf(spec),
      properties,
      propertyDescriptors: descriptors(type, spec, properties, dynamic),
      style: {},
      schedulingPeriod: o.cron ?? '0 sec',
      schedulingStrategy: o.cron ? 'CRON_DRIVEN' : 'TIMER_DRIVEN',
      executionNode: o.primaryNodeOnly ? 'PRIMARY' : 'ALL',
      penaltyDuration: o.penalty ?? '30 sec',
      yieldDuration: '1 sec',
      bulletinLevel: 'WARN',
      runDurationMillis: 0,
      concurrentlySchedulableTaskCount: o.concurrency ?? 1,
      autoTerminatedRelationships: o.autoTerminate ?? [],
      scheduledState: 'ENABLED',
      retryCount: o.retry?.count ?? 10,
      retriedRelationships: o.retry?.relationships ?? [],
      backoffMechanism: 'PENALIZE_FLOWFILE',
      maxBackoffPeriod: '10 mins',
      componentType: 'PROCESSOR',
      groupIdentifier: this.id,
    });
    return { id, groupId: this.id, name: o.name, type: 'PROCESSOR' };
  }

  /** Auto-terminates relationships of one of this group's processors: an answer nothing follows. */
  terminate(ref: Ref, relationships: string[]): void {
    const processor = this.processors.find((p) => p.identifier === ref.id);
    if (!processor) throw new Error(`${this.path}: no processor ${ref.name}`);
    (processor.autoTerminatedRelationships as string[]).push(...relationships);
  }

  private port(kind: 'INPUT_PORT' | 'OUTPUT_PORT', name: string, comments: string): Ref {
    const id = this.claimName(kind, name);
    const ports = kind === 'INPUT_PORT' ? this.inputPorts : this.outputPorts;
    ports.push({
      identifier: id,
      name,
      comments,
      position: { x: kind === 'INPUT_PORT' ? -GRID.width : GRID.columns * GRID.width, y: ports.length * GRID.height },
      type: kind,
      concurrentlySchedulableTaskCount: 1,
      scheduledState: 'ENABLED',
      allowRemoteAccess: false,
      componentType: kind,
      groupIdentifier: this.id,
    });
    return { id, groupId: this.id, name, type: kind };
  }

  /** A port FlowFiles enter the group by; `comments` says which attributes they must carry. */
  input(name: string, comments: string): Ref {
    return this.port('INPUT_PORT', name, comments);
  }

  output(name: string, comments = ''): Ref {
    return this.port('OUTPUT_PORT', name, comments);
  }

  connect(from: Ref, relationships: string[], to: Ref, options: { roundRobin?: boolean } = {}): void {
    const end = (ref: Ref) => ({ id: ref.id, groupId: ref.groupId, name: ref.name, type: ref.type, comments: '' });
    const label = `${from.groupId}/${from.name}:${relationships.join(',')}->${to.groupId}/${to.name}`;
    this.connections.push({
      identifier: stableId(`${this.path}/connection:${label}`),
      name: '',
      source: end(from),
      destination: end(to),
      // a port has no relationships: its connections select the empty one
      selectedRelationships: from.type === 'PROCESSOR' ? relationships : [''],
      backPressureObjectThreshold: 10000,
      backPressureDataSizeThreshold: '1 GB',
      flowFileExpiration: '0 sec',
      prioritizers: [],
      bends: [],
      loadBalanceStrategy: options.roundRobin ? 'ROUND_ROBIN' : 'DO_NOT_LOAD_BALANCE',
      partitioningAttribute: '',
      loadBalanceCompression: 'DO_NOT_COMPRESS',
      labelIndex: 1,
      zIndex: 0,
      componentType: 'CONNECTION',
      groupIdentifier: this.id,
    });
  }

  /** A controller service of this group (and so of every group inside it); returns its id for properties. */
  service(o: ServiceOptions): string {
    const type = componentType(o.type);
    const spec = CATALOGUE.components[type]!;
    if (spec.kind !== 'controller-service') throw new Error(`${o.type} is not a controller service`);
    const id = this.claimName('service', o.name);
    this.services.push({
      identifier: id,
      name: o.name,
      comments: o.comments ?? '',
      type,
      bundle: bundleOf(spec),
      controllerServiceApis: (spec.provides ?? []).map((api) => ({
        type: api,
        bundle: { ...CATALOGUE.serviceApis[api]!, version: CATALOGUE.nifiVersion },
      })),
      properties: o.properties,
      propertyDescriptors: descriptors(type, spec, o.properties, {}),
      scheduledState: 'DISABLED',
      bulletinLevel: 'WARN',
      componentType: 'CONTROLLER_SERVICE',
      groupIdentifier: this.id,
    });
    return id;
  }

  /** The id of the controller service of this name in this group or the nearest one above it (NiFi's scope). */
  serviceInScope(name: string): string {
    const found = this.services.find((service) => service.name === name);
    if (found) return found.identifier as string;
    if (!this.parent) throw new Error(`${this.path}: no controller service ${name} in scope`);
    return this.parent.serviceInScope(name);
  }

  toJSON(): Json {
    return {
      identifier: this.id,
      name: this.name,
      comments: this.comments,
      position: { x: 0, y: 0 },
      processGroups: this.groups.map((group, i) => ({ ...group.toJSON(), position: position(i, i % 3, Math.floor(i / 3)) })),
      remoteProcessGroups: [],
      processors: this.processors,
      inputPorts: this.inputPorts,
      outputPorts: this.outputPorts,
      connections: this.connections,
      labels: [],
      funnels: [],
      controllerServices: this.services,
      parameterContextName: this.parameterContext,
      defaultFlowFileExpiration: '0 sec',
      defaultBackPressureObjectThreshold: 10000,
      defaultBackPressureDataSizeThreshold: '1 GB',
      flowFileConcurrency: 'UNBOUNDED',
      flowFileOutboundPolicy: 'STREAM_WHEN_AVAILABLE',
      componentType: 'PROCESS_GROUP',
      ...(this.parent ? { groupIdentifier: this.parent.id } : {}),
    };
  }
}

const versionOrder = (v: string) => v.split('.').map(Number);
function atLeast(version: string, than: string): boolean {
  const [a, b] = [versionOrder(version), versionOrder(than)];
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/**
 * The flow definition for NiFi `nifiVersion` and later: the properties NiFi renamed by then without migrating
 * them (the catalogue's `renamed`) under their new names.
 */
export function renamedFor(definition: Json, nifiVersion: string): Json {
  const rename = (component: Json) => {
    const renames = Object.entries(CATALOGUE.components[component.type as string]?.renamed ?? {}).filter(([, r]) =>
      atLeast(nifiVersion, r.in),
    );
    if (!renames.length) return component;
    const key = (name: string) => renames.find(([from]) => from === name)?.[1].to ?? name;
    const descriptors = component.propertyDescriptors as Record<string, Json>;
    return {
      ...component,
      properties: Object.fromEntries(Object.entries(component.properties as Record<string, string>).map(([n, v]) => [key(n), v])),
      propertyDescriptors: Object.fromEntries(
        Object.entries(descriptors).map(([n, d]) => [key(n), n === key(n) ? d : { ...d, name: key(n), displayName: key(n) }]),
      ),
    };
  };
  const group = (g: Json): Json => ({
    ...g,
    processors: (g.processors as Json[]).map(rename),
    controllerServices: (g.controllerServices as Json[]).map(rename),
    processGroups: (g.processGroups as Json[]).map(group),
  });
  return { ...definition, flowContents: group(definition.flowContents as Json) };
}

export interface Parameter {
  name: string;
  description: string;
  sensitive?: boolean;
  /** Not exported for a sensitive parameter: the operator enters it after the import. */
  value?: string;
}

/** The whole flow definition: the group and its parameter context. */
export function flowDefinition(root: Group, context: { name: string; description: string; parameters: Parameter[] }): Json {
  return {
    flowContents: root.toJSON(),
    externalControllerServices: {},
    parameterContexts: {
      [context.name]: {
        name: context.name,
        description: context.description,
        parameters: context.parameters.map((p) => ({
          name: p.name,
          description: p.description,
          sensitive: !!p.sensitive,
          provided: false,
          value: p.sensitive ? null : (p.value ?? ''),
        })),
        inheritedParameterContexts: [],
        componentType: 'PARAMETER_CONTEXT',
      },
    },
    parameterProviders: {},
    flowEncodingVersion: '1.0',
  };
}

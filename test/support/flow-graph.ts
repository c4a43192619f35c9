// A NiFi flow definition read as a graph, for the kit's test: every processor and port of every group, every
// connection, and which FlowFile attributes are present where — on every path into a component ("always") or on
// at least one ("sometimes") — from what each component writes (nifi/nifi-components.json, its dynamic
// properties) and what UpdateAttribute deletes.
import { parseTemplate, substituteParameters, type Template } from '../../nifi/expression-language.js';
import { CATALOGUE, type ComponentSpec } from '../../nifi/flow-model.js';

type Json = Record<string, any>;

export interface FlowNode {
  id: string;
  name: string;
  kind: 'PROCESSOR' | 'INPUT_PORT' | 'OUTPUT_PORT';
  /** The group path, for messages: `Load Control/PG-20 Extract Worker`. */
  group: string;
  json: Json;
  spec: ComponentSpec | undefined;
}

export interface FlowEdge {
  from: string;
  to: string;
  relationships: string[];
}

/** Attributes every FlowFile has (CoreAttributes), and the FlowFile properties expressions read like attributes. */
export const CORE_ATTRIBUTES = new Set([
  'uuid',
  'filename',
  'path',
  'absolute.path',
  'mime.type',
  'priority',
  'discard.reason',
  'alternate.identifier',
  'fileSize',
  'entryDate',
  'lineageStartDate',
]);

export class FlowGraph {
  readonly nodes = new Map<string, FlowNode>();
  readonly edges: FlowEdge[] = [];
  readonly groups: Array<{ path: string; json: Json }> = [];
  /** Controller services by id, with the paths of the groups that may use them (theirs and those inside it). */
  readonly services = new Map<string, { json: Json; path: string }>();

  constructor(readonly flow: Json) {
    this.walk(flow.flowContents, flow.flowContents.name);
  }

  private walk(group: Json, path: string): void {
    this.groups.push({ path, json: group });
    for (const service of group.controllerServices) this.services.set(service.identifier, { json: service, path });
    for (const p of group.processors) {
      this.nodes.set(p.identifier, {
        id: p.identifier,
        name: p.name,
        kind: 'PROCESSOR',
        group: path,
        json: p,
        spec: CATALOGUE.components[p.type],
      });
    }
    for (const kind of ['inputPorts', 'outputPorts'] as const) {
      for (const port of group[kind]) {
        this.nodes.set(port.identifier, {
          id: port.identifier,
          name: port.name,
          kind: port.type,
          group: path,
          json: port,
          spec: undefined,
        });
      }
    }
    for (const c of group.connections) this.edges.push({ from: c.source.id, to: c.destination.id, relationships: c.selectedRelationships });
    for (const child of group.processGroups) this.walk(child, `${path}/${child.name}`);
  }

  incoming(id: string): FlowEdge[] {
    return this.edges.filter((e) => e.to === id);
  }

  /** A processor's relationships: its component's, and for RouteOnAttribute one per dynamic property. */
  relationships(node: FlowNode): string[] {
    const spec = node.spec!;
    const routes = spec.dynamicProperties === 'relationship' ? this.dynamicProperties(node) : [];
    return [...(spec.relationships ?? []), ...routes];
  }

  dynamicProperties(node: FlowNode): string[] {
    return Object.values(node.json.propertyDescriptors as Record<string, Json>)
      .filter((d) => d.dynamic)
      .map((d) => d.name as string);
  }

  /** What a component adds to its FlowFiles' attributes; `prefix*` stands for every name with that prefix. */
  writes(node: FlowNode): string[] {
    if (node.kind !== 'PROCESSOR') return [];
    const spec = node.spec!;
    const properties = node.json.properties as Record<string, string>;
    const written = [...(spec.writes ?? [])];
    for (const name of spec.writesNamedBy ?? []) if (properties[name]) written.push(properties[name], `${properties[name]}.uuid`);
    for (const name of spec.writesPrefixedBy ?? []) if (properties[name]) written.push(`${properties[name]}*`);
    if (spec.dynamicProperties === 'attribute') written.push(...this.dynamicProperties(node));
    return written;
  }

  /** The attribute names UpdateAttribute's Delete Attributes Expression removes. */
  deletes(node: FlowNode): RegExp | null {
    const expression = node.json.properties?.['Delete Attributes Expression'];
    return expression ? new RegExp(`^(?:${expression})$`) : null;
  }

  /**
   * The attributes present when a FlowFile reaches each component: on every path (`always`) and on at least one
   * (`sometimes`). A component nothing leads to (a trigger, a listener, an input port callers outside the flow
   * feed) starts with the core attributes, and an input port with no connection also with those its comments
   * name: its callers' contract.
   */
  attributesArriving(): { always: Map<string, Set<string>>; sometimes: Map<string, Set<string>> } {
    const sources = new Map<string, Set<string>>();
    for (const node of this.nodes.values()) {
      if (this.incoming(node.id).length) continue;
      const contract = node.kind === 'INPUT_PORT' ? (String(node.json.comments).match(/\b[a-z]+(?:\.[a-z*]+)+/g) ?? []) : [];
      sources.set(node.id, new Set([...CORE_ATTRIBUTES, ...contract]));
    }
    const leaving = (node: FlowNode, arriving: Set<string>) => {
      const deleted = this.deletes(node);
      const out = new Set([...arriving].filter((name) => !deleted?.test(name.replace(/\*$/, 'x'))));
      for (const name of this.writes(node)) out.add(name);
      return out;
    };
    const solve = (meet: 'always' | 'sometimes') => {
      const arriving = new Map<string, Set<string> | 'everything'>();
      for (const node of this.nodes.values()) arriving.set(node.id, sources.get(node.id) ?? (meet === 'always' ? 'everything' : new Set()));
      for (let changed = true; changed; ) {
        changed = false;
        for (const node of this.nodes.values()) {
          if (sources.has(node.id)) continue;
          let next: Set<string> | 'everything' = meet === 'always' ? 'everything' : new Set();
          for (const edge of this.incoming(node.id)) {
            const before = arriving.get(edge.from)!;
            if (before === 'everything') continue;
            const out = leaving(this.nodes.get(edge.from)!, before);
            if (meet === 'sometimes') for (const name of out) (next as Set<string>).add(name);
            else next = next === 'everything' ? out : new Set([...next].filter((name) => out.has(name)));
          }
          const current = arriving.get(node.id)!;
          const size = (s: Set<string> | 'everything') => (s === 'everything' ? Number.POSITIVE_INFINITY : s.size);
          if (size(next) !== size(current)) {
            arriving.set(node.id, next);
            changed = true;
          }
        }
      }
      return new Map([...arriving].map(([id, set]) => [id, set === 'everything' ? new Set<string>() : set]));
    };
    return { always: solve('always'), sometimes: solve('sometimes') };
  }

  /** Whether NiFi evaluates `${…}` in this property of the processor (a dynamic property: as its component does). */
  supportsExpressionLanguage(node: FlowNode, property: string): boolean {
    const known = node.spec!.properties[property];
    return known ? (known.expressionLanguage ?? 'NONE') !== 'NONE' : node.spec!.dynamicProperties !== undefined;
  }

  /**
   * Every property value of every processor that NiFi evaluates as an expression, parsed as NiFi does: the
   * parameter references outside `${…}` substituted first, those inside left for the expression to read.
   */
  expressions(parameters: Record<string, string>): Array<{ node: FlowNode; property: string; value: string; template: Template }> {
    const found: Array<{ node: FlowNode; property: string; value: string; template: Template }> = [];
    for (const node of this.nodes.values()) {
      if (node.kind !== 'PROCESSOR') continue;
      for (const [property, value] of Object.entries(node.json.properties as Record<string, string>)) {
        if (!this.supportsExpressionLanguage(node, property)) continue;
        const substituted = substituteParameters(value, parameters, { expressionLanguage: true });
        found.push({ node, property, value, template: parseTemplate(substituted) });
      }
    }
    return found;
  }
}

/** Whether an attribute is among those present, `prefix*` entries included. */
export function present(available: Set<string>, attribute: string): boolean {
  return available.has(attribute) || [...available].some((name) => name.endsWith('*') && attribute.startsWith(name.slice(0, -1)));
}

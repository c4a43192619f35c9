// nifi/nifi-components.json, derived from Apache NiFi itself (`npm run nifi:components` writes it; the kit's
// engine test writes it again from the cache and compares): for every component the flow uses, its property
// descriptors (name, display name, required, sensitive, default, allowable values, the service API it references,
// its Expression Language scope), relationships, declared attributes and service APIs, at each NiFi version Maven
// Central serves the component's artifact for. Components whose artifacts it does not serve (the Hadoop and Parquet
// NARs, the Kerberos user service) are carried over from the file as they are, marked hand-kept.
import { readFileSync } from 'node:fs';
import { type Artifact, type DescribedComponent, describeWithNifi } from './nifi-engine.js';

export const CATALOGUE_FILE = new URL('./nifi-components.json', import.meta.url);

/** The versions the catalogue is derived at: the oldest the flow supports and the newest whose processors are served. */
const CATALOGUE_VERSIONS = ['2.3.0', '2.6.0'];

/** Where each derived component comes from: a jar read by reflection, or a NAR's extension manifest. */
interface Derived {
  kind: 'processor' | 'controller-service';
  /** The NAR a flow definition names as the component's bundle. */
  bundle: string;
  jar?: string;
  nar?: string;
  /** The versions Maven Central serves `jar` or `nar` at (default: every catalogue version). */
  served?: string[];
  /** The kit's reading of the dynamic properties NiFi declares. */
  dynamicProperties?: 'attribute' | 'relationship' | 'request-header';
  sensitiveDynamicProperties?: boolean;
  /** Attributes written but not declared by @WritesAttribute (the record writer's own, mime.type). */
  alsoWrites?: string[];
  writesNamedBy?: string[];
  writesPrefixedBy?: string[];
}

const STANDARD = 'nifi-standard-processors';
const standard = (o: Partial<Derived> = {}): Derived => ({ kind: 'processor', bundle: 'nifi-standard-nar', jar: STANDARD, ...o });

const DERIVED: Record<string, Derived> = {
  'org.apache.nifi.processors.standard.InvokeHTTP': standard({
    dynamicProperties: 'request-header',
    sensitiveDynamicProperties: true,
    writesNamedBy: ['Response Body Attribute Name'],
    writesPrefixedBy: ['Response Header Request Attributes Prefix'],
  }),
  'org.apache.nifi.processors.standard.ReplaceText': standard(),
  'org.apache.nifi.processors.standard.RouteOnAttribute': standard({ dynamicProperties: 'relationship' }),
  'org.apache.nifi.processors.standard.EvaluateJsonPath': standard({ dynamicProperties: 'attribute' }),
  'org.apache.nifi.processors.standard.SplitJson': standard(),
  'org.apache.nifi.processors.standard.HandleHttpRequest': standard(),
  'org.apache.nifi.processors.standard.HandleHttpResponse': standard(),
  'org.apache.nifi.processors.standard.ExecuteSQLRecord': standard({ alsoWrites: ['mime.type', 'record.count'] }),
  'org.apache.nifi.processors.standard.ExecuteSQL': standard(),
  'org.apache.nifi.processors.standard.GenerateFlowFile': standard({ dynamicProperties: 'attribute', alsoWrites: ['mime.type'] }),
  'org.apache.nifi.processors.standard.LogAttribute': standard(),
  'org.apache.nifi.processors.standard.RetryFlowFile': standard({ writesNamedBy: ['retry-attribute'] }),
  'org.apache.nifi.processors.attributes.UpdateAttribute': {
    kind: 'processor',
    bundle: 'nifi-update-attribute-nar',
    jar: 'nifi-update-attribute-processor',
    served: ['2.3.0'],
    dynamicProperties: 'attribute',
  },
  'org.apache.nifi.json.JsonRecordSetWriter': {
    kind: 'controller-service',
    bundle: 'nifi-record-serialization-services-nar',
    jar: 'nifi-record-serialization-services',
  },
  'org.apache.nifi.dbcp.DBCPConnectionPool': {
    kind: 'controller-service',
    bundle: 'nifi-dbcp-service-nar',
    nar: 'nifi-dbcp-service-nar',
    served: ['2.3.0'],
  },
  'org.apache.nifi.http.StandardHttpContextMap': {
    kind: 'controller-service',
    bundle: 'nifi-http-context-map-nar',
    nar: 'nifi-http-context-map-nar',
    served: ['2.3.0'],
  },
  'org.apache.nifi.ssl.PEMEncodedSSLContextProvider': {
    kind: 'controller-service',
    bundle: 'nifi-ssl-context-service-nar',
    nar: 'nifi-ssl-context-service-nar',
    served: ['2.3.0'],
  },
  'org.apache.nifi.oauth2.StandardOauth2AccessTokenProvider': {
    kind: 'controller-service',
    bundle: 'nifi-oauth2-provider-nar',
    nar: 'nifi-oauth2-provider-nar',
    served: ['2.3.0'],
  },
  'org.apache.nifi.ssl.StandardRestrictedSSLContextService': {
    kind: 'controller-service',
    bundle: 'nifi-ssl-context-service-nar',
    nar: 'nifi-ssl-context-service-nar',
    served: ['2.3.0'],
  },
};

/** The service APIs' jars: provided by the services NAR at run time, needed on the classpath to load the processors. */
const SERVICE_API_JARS = [
  'nifi-oauth2-provider-api',
  'nifi-proxy-configuration-api',
  'nifi-http-context-map-api',
  'nifi-dbcp-service-api',
  'nifi-lookup-service-api',
  'nifi-record-sink-api',
  'nifi-database-dialect-service-api',
  'nifi-kerberos-user-service-api',
  'nifi-web-client-provider-api',
];

interface CataloguedProperty {
  displayName: string;
  required: boolean;
  sensitive: boolean;
  defaultValue: string | null;
  allowableValues: string[] | null;
  /** The controller service API the property references. */
  service?: string;
  expressionLanguage: string;
  /** The catalogue versions the property exists in (all of the component's `origin` versions unless added or removed). */
  versions: string[];
  /** What an older version declared differently. */
  differsIn?: Record<string, Record<string, unknown>>;
}

const servedAt = (d: Derived, version: string) => (d.served ?? CATALOGUE_VERSIONS).includes(version);

function describeVersion(version: string): ReturnType<typeof describeWithNifi> {
  const types = Object.entries(DERIVED).filter(([, d]) => servedAt(d, version));
  const jars = [...new Set(types.flatMap(([, d]) => (d.jar ? [d.jar] : [])))];
  const nars = [...new Set(types.flatMap(([, d]) => (d.nar ? [d.nar] : [])))];
  const artifacts: Artifact[] = [
    ...jars.map((artifact) => ({ artifact, version })),
    ...SERVICE_API_JARS.map((artifact) => ({ artifact, version })),
    // HandleHttpRequest's servlet API, which NiFi's Jetty NAR provides
    { group: 'jakarta.servlet', artifact: 'jakarta.servlet-api', version: '6.1.0' },
    ...nars.map((artifact) => ({ artifact, version, type: 'nar' as const })),
  ];
  return describeWithNifi(
    `nifi-components-${version}`,
    artifacts,
    types.filter(([, d]) => d.jar).map(([type]) => type),
    Object.fromEntries(nars.map((nar) => [nar, types.filter(([, d]) => d.nar === nar).map(([type]) => type)])),
  );
}

function propertyEntry(p: DescribedComponent['properties'][number]): Omit<CataloguedProperty, 'versions' | 'differsIn'> {
  return {
    displayName: p.displayName,
    required: p.required,
    sensitive: p.sensitive,
    defaultValue: p.defaultValue,
    // sorted: some components declare theirs from a hash set, in no fixed order
    allowableValues: p.allowableValues && [...p.allowableValues].sort(),
    ...(p.service ? { service: p.service } : {}),
    expressionLanguage: p.expressionLanguage,
  };
}

/**
 * An @WritesAttribute name as the flow's attribute analysis reads it: `XXX` standing for any suffix becomes `*`;
 * prose ("See additional details", "Retry Attribute") is dropped — writesNamedBy says what those write.
 */
function attributeWritten(declared: string): string[] {
  const name = declared.trim().replace(/XXX$/, '*');
  return /\s/.test(name) || name === 'user-defined' ? [] : [name];
}

/** The file's text, derived from the NiFi artifacts in the cache (fetched into it when missing). */
export function componentCatalogueJson(): string {
  const previous = JSON.parse(readFileSync(CATALOGUE_FILE, 'utf8'));
  const described = CATALOGUE_VERSIONS.map((version) => ({ version, ...describeVersion(version) }));
  const components: Record<string, unknown> = {};
  for (const [type, d] of Object.entries(DERIVED)) {
    const seen = described.filter((v) => v.components[type]);
    const newest = seen.at(-1)!;
    const properties: Record<string, CataloguedProperty> = {};
    for (const { version, components: byType } of [...seen].reverse()) {
      for (const p of byType[type]!.properties) {
        const entry = propertyEntry(p);
        const known = properties[p.name];
        if (!known) {
          properties[p.name] = { ...entry, versions: [version] };
          continue;
        }
        known.versions.unshift(version);
        const differs = Object.fromEntries(
          Object.entries(entry).filter(([field, value]) => JSON.stringify(value) !== JSON.stringify(known[field as keyof typeof entry])),
        );
        if (Object.keys(differs).length) known.differsIn = { ...known.differsIn, [version]: differs };
      }
    }
    const component = newest.components[type]!;
    components[type] = {
      kind: d.kind,
      bundle: { group: 'org.apache.nifi', artifact: d.bundle },
      origin: Object.fromEntries(seen.map((v) => [v.version, `${v.files[type]} (${d.jar ? 'reflection' : 'extension manifest'})`])),
      properties,
      ...(d.kind === 'processor'
        ? {
            relationships: component.relationships,
            ...(d.dynamicProperties ? { dynamicProperties: d.dynamicProperties } : {}),
            ...(d.sensitiveDynamicProperties ? { sensitiveDynamicProperties: true } : {}),
            writes: [...new Set([...component.writes.flatMap(attributeWritten), ...(d.alsoWrites ?? [])])].sort(),
            ...(d.writesNamedBy ? { writesNamedBy: d.writesNamedBy } : {}),
            ...(d.writesPrefixedBy ? { writesPrefixedBy: d.writesPrefixedBy } : {}),
          }
        : { provides: component.provides }),
    };
  }
  for (const [type, spec] of Object.entries(previous.components as Record<string, { origin?: unknown }>)) {
    if (!(type in DERIVED)) {
      if (typeof spec.origin !== 'string' || !spec.origin.startsWith('hand-kept')) {
        throw new Error(`${type}: neither derived (nifi/component-catalogue.ts) nor marked hand-kept in nifi/nifi-components.json`);
      }
      components[type] = spec;
    }
  }
  const sorted = Object.fromEntries(
    Object.keys(components)
      .sort()
      .map((type) => [type, components[type]]),
  );
  return `${JSON.stringify(
    {
      nifiVersion: previous.nifiVersion,
      versions: CATALOGUE_VERSIONS,
      source:
        'Derived by `npm run nifi:components` (nifi/component-catalogue.ts) from the Apache NiFi artifacts on Maven Central, at each version in "versions" the artifact is served for ("origin"): jars by reflection over the components\' PropertyDescriptors, Relationships and annotations, NARs from their extension manifests. Components whose "origin" starts with "hand-kept" are not served there and are kept by hand from NiFi\'s source.',
      serviceApis: previous.serviceApis,
      components: sorted,
    },
    null,
    2,
  )}\n`;
}

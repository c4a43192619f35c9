// The flow of nifi/load-control-flow.json (`npm run nifi:flow` writes it): one process group per step of the
// load (README "Connecting NiFi"), every call to Load Control made from its template under nifi/requests, and
// Oracle, HDFS and Hive reached through controller services marked SITE-SPECIFIC.
import { bodyTexts, kitCall, type KitCall } from './kit.js';
import { flowDefinition, Group, type Parameter, type Ref, renamedFor } from './flow-model.js';

const PARAMETER_CONTEXT = 'Load Control';

/** The OAUTH2 flows' own parameters, instead of CONTROL.API.AUTHORIZATION. */
const OAUTH2_PARAMETERS: Parameter[] = [
  {
    name: 'CONTROL.API.OAUTH2.TOKEN.URL',
    description: "The provider's token endpoint (Keycloak: https://idp/realms/<realm>/protocol/openid-connect/token)",
    value: 'https://idp.example.com/realms/data/protocol/openid-connect/token',
  },
  {
    name: 'CONTROL.API.OAUTH2.CLIENT.ID',
    description: "The kit's client at the provider (client credentials grant)",
    value: 'load-control-nifi',
  },
  { name: 'CONTROL.API.OAUTH2.CLIENT.SECRET', description: "The client's secret", sensitive: true },
  {
    name: 'CONTROL.API.OAUTH2.SCOPE',
    description: 'The scope to ask for, if the provider needs one (Entra ID: api://<Load Control app id>/.default); empty otherwise',
    value: '',
  },
];

const PARAMETERS: Parameter[] = [
  {
    name: 'CONTROL.API.URL',
    description: 'Load Control, without /graphql (https:// with server.tls)',
    value: 'https://load-control.example.com:8080',
  },
  {
    name: 'CONTROL.API.AUTHORIZATION',
    description: 'The whole Authorization header: "Bearer " and a token with the nifi role (load-control token <name> nifi)',
    sensitive: true,
  },
  {
    name: 'CONTROL.API.CA.SOURCE',
    description:
      "Which CAs the InvokeHTTP processors trust for an https CONTROL.API.URL: SYSTEM (the JVM's) or PROPERTIES (only CONTROL.API.CA.CERTIFICATES: the API's private CA)",
    value: 'SYSTEM',
  },
  {
    name: 'CONTROL.API.CA.CERTIFICATES',
    description:
      "With CONTROL.API.CA.SOURCE PROPERTIES: the CA certificate(s) of the API's server.tls certificate, PEM (-----BEGIN CERTIFICATE----- …)",
    value: '',
  },
  {
    name: 'CONTROL.API.CLIENT.KEY.SOURCE',
    description:
      'UNDEFINED: no client certificate; FILES: present CONTROL.API.CLIENT.CERTIFICATE.FILE to an API that requires one (server.tls.clientCaFile, mTLS)',
    value: 'UNDEFINED',
  },
  {
    name: 'CONTROL.API.CLIENT.KEY.FILE',
    description: "With CONTROL.API.CLIENT.KEY.SOURCE FILES: the client certificate's private key, PEM file",
    value: '',
  },
  {
    name: 'CONTROL.API.CLIENT.CERTIFICATE.FILE',
    description: 'With CONTROL.API.CLIENT.KEY.SOURCE FILES: the client certificate (chain), PEM file',
    value: '',
  },
  { name: 'CONTROL.RECEIVER.PORT', description: "PG-05's port: the worker's nifi.receiverUrl points at it (…/control/)", value: '9443' },
  {
    name: 'CONTROL.RECEIVER.CLIENT.AUTHENTICATION',
    description:
      "PG-05 over https: Need Authentication to require the worker's client certificate (its nifi.tls.certFile, mTLS); No Authentication otherwise",
    value: 'No Authentication',
  },
  { name: 'CONTROL.RECEIVER.KEYSTORE', description: "PG-05 over https: the receiver's certificate and key, a PKCS12 file", value: '' },
  { name: 'CONTROL.RECEIVER.KEYSTORE.PASSWORD', description: 'The password of CONTROL.RECEIVER.KEYSTORE', sensitive: true },
  {
    name: 'CONTROL.RECEIVER.TRUSTSTORE',
    description: "PG-05 with mTLS: the CA of the worker's client certificates, a PKCS12 file",
    value: '',
  },
  { name: 'CONTROL.RECEIVER.TRUSTSTORE.PASSWORD', description: 'The password of CONTROL.RECEIVER.TRUSTSTORE', sensitive: true },
  { name: 'LOAD.JOB.KEY', description: 'The Load Control job this flow loads, ^[A-Z0-9_]{1,200}$', value: 'ORACLE_INSP_DTL_DAILY' },
  { name: 'LOAD.HDFS.ROOT', description: "The runs' HDFS root: a run writes under <root>/<job>/run_id=<run>", value: '/data/nifi/stage' },
  { name: 'LOAD.STAGE.TABLE.PREFIX', description: "The Hive staging tables' prefix", value: 'TMP_INSP_DTL_' },
  { name: 'LOAD.ALLOW.EMPTY.SOURCE', description: 'true when an empty source may succeed', value: 'false' },
  {
    name: 'LOAD.TAGS',
    description: "The runs' tags, key=value[,key=value…] (at most 10; key ^[a-z][a-z0-9_.-]{0,39}$): to find them by",
    value: '',
  },
  { name: 'FLOW.REGISTRY', description: 'The registry client this flow is versioned in, recorded on each run (empty: none)', value: '' },
  { name: 'FLOW.BUCKET', description: "The flow's bucket in that registry", value: '' },
  { name: 'FLOW.ID', description: "The flow's id in that bucket", value: '' },
  { name: 'FLOW.VERSION', description: "The flow's version: set it with each version you deploy", value: '' },
  { name: 'LOAD.PARTITIONS', description: 'How many ranges the partition plan splits the source into', value: '8' },
  { name: 'SOURCE.TABLE', description: 'The Oracle source table', value: 'INSP.INSP_DTL' },
  { name: 'SOURCE.SPLIT.COLUMN', description: 'The numeric column the ranges split (its NULLs get the NULL partition)', value: 'INSP_ID' },
  { name: 'SOURCE.COLUMNS', description: 'The columns extracted', value: '*' },
  { name: 'SOURCE.CHECKSUM.EXPRESSION', description: 'An aggregate compared at the source, staging and target', value: 'SUM(AMOUNT)' },
  { name: 'EXTRACT.ROWS.PER.CHUNK', description: 'Rows per Parquet file (one chunk report each)', value: '500000' },
  {
    name: 'EXTRACT.QUERY.TIMEOUT',
    description: "The longest a partition's Oracle query may run; keep it below Load Control's recovery.extractQueryTimeout",
    value: '60 mins',
  },
  { name: 'HIVE.STAGE.DATABASE', description: 'The Hive database of the staging tables', value: 'stage' },
  {
    name: 'STAGE.COLUMNS.DDL',
    description: "The staging table's columns, as the Parquet files hold them",
    value: 'INSP_ID BIGINT, AMOUNT DECIMAL(18,2)',
  },
  { name: 'TARGET.TABLE', description: 'The Hive target table', value: 'dw.insp_dtl' },
  { name: 'TARGET.PARTITION.COLUMN', description: "The target's partition column, set to the business key", value: 'dt' },
  { name: 'TARGET.COLUMNS', description: 'The columns the INSERT OVERWRITE selects from staging', value: 'INSP_ID, AMOUNT' },
  {
    name: 'GATE.CONSUMER',
    description: 'The downstream consumer whose publications the gate group writes',
    value: 'DAILY_INSPECTION_REPORT',
  },
  { name: 'ORACLE.JDBC.URL', description: 'SITE-SPECIFIC: the Oracle JDBC URL', value: 'jdbc:oracle:thin:@//oracle.example.com:1521/ORCL' },
  { name: 'ORACLE.USER', description: 'SITE-SPECIFIC: the Oracle user', value: 'nifi_reader' },
  { name: 'ORACLE.PASSWORD', description: "SITE-SPECIFIC: the Oracle user's password", sensitive: true },
  { name: 'ORACLE.DRIVER.LOCATION', description: 'SITE-SPECIFIC: the Oracle JDBC driver jar', value: '/opt/nifi/drivers/ojdbc11.jar' },
  {
    name: 'HIVE.JDBC.URL',
    description: 'SITE-SPECIFIC: the HiveServer2 JDBC URL',
    value: 'jdbc:hive2://hive.example.com:10000/default;principal=hive/_HOST@EXAMPLE.COM',
  },
  {
    name: 'HIVE.DRIVER.LOCATION',
    description: 'SITE-SPECIFIC: the Hive JDBC driver jar(s)',
    value: '/opt/nifi/drivers/hive-jdbc-standalone.jar',
  },
  {
    name: 'HADOOP.CONFIGURATION.RESOURCES',
    description: 'SITE-SPECIFIC: core-site.xml,hdfs-site.xml',
    value: '/etc/hadoop/conf/core-site.xml,/etc/hadoop/conf/hdfs-site.xml',
  },
  { name: 'KERBEROS.PRINCIPAL', description: "SITE-SPECIFIC: NiFi's Kerberos principal for HDFS and Hive", value: 'nifi@EXAMPLE.COM' },
  { name: 'KERBEROS.KEYTAB', description: "SITE-SPECIFIC: that principal's keytab", value: '/etc/security/keytabs/nifi.keytab' },
];

/** Where an answer or a failure leaves a processor: connected by whoever uses it. */
interface Outlet {
  from: Ref;
  relationships: string[];
}

function link(g: Group, outlets: Outlet | Outlet[], to: Ref): void {
  for (const o of [outlets].flat()) g.connect(o.from, o.relationships, to);
}

/** The attributes PG-90 reads of a failure. */
export function failure(
  group: string,
  f: { code: string; message: string; stage: string; kind: string; step: string },
): Record<string, string> {
  return {
    'load.error.code': f.code,
    'load.error.message': f.message,
    'load.error.stage': f.stage,
    'load.error.class': f.kind,
    'load.error.group': group,
    'load.error.step': f.step,
  };
}

/** load.error.stage of a failed call, by the group that made it. */
const STAGES: Record<string, string> = {
  'PG-10': 'MANIFEST',
  'PG-20': 'EXTRACT',
  'PG-40': 'STAGING_VALIDATION',
  'PG-50': 'PUBLISH',
  'PG-60': 'TARGET_VALIDATION',
  'PG-70': 'CLEANUP',
  'PG-90': 'EVENT',
  GATE: 'GATE',
};

/** A run failure for PG-90's failRun: the transition, with the failure. */
const runFailure = (expected: string, failed: string) => ({ 'load.fail.expected.status': expected, 'load.fail.status': failed });

const API_ANSWER = 'load.api.response';
const API_HEADER = 'load.api.header.';
const ERROR_CODE = `\${${API_HEADER}X-Error-Code}`;

/** `${X-Error-Code:equals('A'):or(${X-Error-Code:equals('B')})}` */
function anyOf(codes: string[]): string {
  const is = (code: string) => `\${${API_HEADER}X-Error-Code:equals('${code}')`;
  return `${is(codes[0]!)}${codes
    .slice(1)
    .map((code) => `:or(${is(code)}})`)
    .join('')}}`;
}

/** The SSL context every InvokeHTTP shares (README "Connecting NiFi", TLS). */
const API_TLS = 'Load Control API TLS';
/** The OAuth2 access-token provider of the OAUTH2 flows. */
const API_OAUTH2 = 'Load Control API OAuth2';
/** PG-05's https listener, when the operator gives it one (NiFi takes no parameter for a service reference). */
const RECEIVER_TLS = 'PG-05 receiver TLS';

/** InvokeHTTP as the README's routing table has it. */
const INVOKE_HTTP = {
  'HTTP Method': 'POST',
  'HTTP URL': '#{CONTROL.API.URL}/graphql',
  'Request Content-Type': 'application/json; charset=UTF-8',
  'Connection Timeout': '5 secs',
  // Load Control answers within 10 s whatever its database does (README "When the database stalls")
  'Socket Read Timeout': '15 secs',
  'Socket Write Timeout': '15 secs',
  'Response Redirects Enabled': 'False',
  // the answer, 2xx or not, in an attribute large enough for any error (the default keeps 256 bytes)
  'Response Body Attribute Name': API_ANSWER,
  'Response Body Attribute Size': '65536',
  'Response Header Request Attributes Enabled': 'true',
  'Response Header Request Attributes Prefix': API_HEADER,
  'Request Failure Penalization Enabled': 'false',
};

/**
 * What a failed call leaves for PG-90 (its `: failed` UpdateAttribute): the X-Error-Code, or HTTP_<status> when
 * the answer has none. The simulator evaluates the same expressions over its answers.
 */
export function apiFailure(call: KitCall): Record<string, string> {
  return failure(call.processGroup, {
    code: `\${${API_HEADER}X-Error-Code:isEmpty():ifElse(\${invokehttp.status.code:prepend('HTTP_')}, ${ERROR_CODE})}`,
    message: `${call.field} answered \${invokehttp.status.code} ${ERROR_CODE}`,
    stage: STAGES[call.processGroup]!,
    kind: 'API',
    step: call.field,
  });
}

interface CallBlock {
  /** Where a FlowFile with the call's attributes enters (the request body is made from them). */
  entry: Ref;
  /** The InvokeHTTP itself, to send the same body again. */
  http: Ref;
  /** A 2xx answer, read into the attributes of `sets` (one FlowFile per item for a `split` call). */
  answered: Outlet;
  /** Any other answer (load.error.* set), or a body that could not be made. */
  failed: Outlet[];
  /** The call's named routes on X-Error-Code. */
  routes: Record<string, Outlet>;
}

/**
 * One call made from nifi/requests/<id>: ReplaceText makes the body, InvokeHTTP sends it — a connection failure is
 * sent again (penalized), a 5xx retried three times by NiFi and then, if it is 503, sent again; a 4xx is not
 * retried — and the answer's attributes are read with jsonPath(). `errorAttributes: false` leaves load.error.* as
 * the FlowFile brought them (PG-90's own calls).
 */
function call(g: Group, s: Services, id: string, options: { errorAttributes?: boolean } = {}): CallBlock {
  const kit = kitCall(id);
  const field = kit.field;
  const [whole, suffix] = bodyTexts(kit);
  const body = g.processor({
    name: `${field}: request body`,
    type: 'ReplaceText',
    comments: `nifi/requests/${id}: ${kit.description}`,
    properties:
      suffix === undefined
        ? { 'Replacement Strategy': 'Always Replace', 'Replacement Value': whole!, 'Evaluation Mode': 'Entire text' }
        : {
            'Replacement Strategy': 'Surround',
            'Text to Prepend': whole!,
            'Text to Append': suffix,
            'Evaluation Mode': 'Entire text',
          },
  });
  const http = g.processor({
    name: field,
    type: 'InvokeHTTP',
    comments: `${kit.operation} ${field}; X-Request-Id is the FlowFile's uuid (the API logs it with the call)`,
    properties: {
      ...INVOKE_HTTP,
      'SSL Context Service': g.serviceInScope(API_TLS),
      ...(s.apiAuth === 'oauth2' ? { 'Request OAuth2 Access Token Provider': g.serviceInScope(API_OAUTH2) } : {}),
    },
    sensitiveDynamic: s.apiAuth === 'oauth2' ? {} : { Authorization: '#{CONTROL.API.AUTHORIZATION}' },
    dynamic: { 'X-Request-Id': '${uuid}' },
    autoTerminate: ['Response'],
    retry: { count: 3, relationships: ['Retry'] },
    penalty: '5 sec',
  });
  g.connect(body, ['success'], http);
  g.connect(http, ['Failure'], http);
  const unavailable = g.processor({
    name: `${field}: 503?`,
    type: 'RouteOnAttribute',
    comments: 'Database unreachable or contention (503, Retry-After): sent again, penalized, for as long as it lasts. Other 5xx: PG-90.',
    properties: { 'Routing Strategy': 'Route to Property name' },
    dynamic: { unavailable: "${invokehttp.status.code:equals('503')}" },
  });
  g.connect(http, ['Retry'], unavailable);
  g.connect(unavailable, ['unavailable'], http);

  let answered: Outlet;
  const readSets = (name: string, from: Ref, relationships: string[]) => {
    const read = g.processor({
      name,
      type: 'UpdateAttribute',
      properties: { 'Delete Attributes Expression': 'load\\.api\\..*' },
      dynamic: Object.fromEntries(
        Object.entries(kit.sets).map(([attribute, path]) => [attribute, `\${${API_ANSWER}:jsonPath('${path}')}`]),
      ),
    });
    g.connect(from, relationships, read);
    return read;
  };
  const errorSources: Outlet[] = [
    { from: body, relationships: ['failure'] },
    { from: http, relationships: ['No Retry'] },
    { from: unavailable, relationships: ['unmatched'] },
  ];
  if (kit.split) {
    const asContent = g.processor({
      name: `${field}: answer as content`,
      type: 'ReplaceText',
      properties: { 'Replacement Strategy': 'Always Replace', 'Replacement Value': `\${${API_ANSWER}}`, 'Evaluation Mode': 'Entire text' },
    });
    g.connect(http, ['Original'], asContent);
    const drop = g.processor({
      name: `${field}: drop the answer attributes`,
      type: 'UpdateAttribute',
      properties: { 'Delete Attributes Expression': 'load\\.api\\..*' },
    });
    g.connect(asContent, ['success'], drop);
    const split = g.processor({
      name: `${field}: one FlowFile per item`,
      type: 'SplitJson',
      properties: { 'JsonPath Expression': kit.split },
      autoTerminate: ['original'],
    });
    g.connect(drop, ['success'], split);
    const item = g.processor({
      name: `${field}: read item`,
      type: 'EvaluateJsonPath',
      properties: { Destination: 'flowfile-attribute', 'Return Type': 'scalar', 'Path Not Found Behavior': 'ignore' },
      dynamic: kit.sets,
      autoTerminate: ['unmatched'],
    });
    g.connect(split, ['split'], item);
    errorSources.push(
      { from: asContent, relationships: ['failure'] },
      { from: split, relationships: ['failure'] },
      { from: item, relationships: ['failure'] },
    );
    answered = { from: item, relationships: ['matched'] };
  } else {
    answered = { from: readSets(`${field}: read answer`, http, ['Original']), relationships: ['success'] };
  }

  if (options.errorAttributes === false) return { entry: body, http, answered, failed: errorSources, routes: {} };
  const failed = g.processor({
    name: `${field}: failed`,
    type: 'UpdateAttribute',
    comments: "The call's failure as PG-90 reads it: X-Error-Code (or HTTP_<status> without one).",
    properties: { 'Delete Attributes Expression': 'load\\.api\\.response' },
    dynamic: apiFailure(kit),
  });
  link(g, errorSources, failed);
  const routeNames = Object.keys(kit.errors);
  if (!routeNames.length) return { entry: body, http, answered, failed: [{ from: failed, relationships: ['success'] }], routes: {} };
  const byCode = g.processor({
    name: `${field}: by X-Error-Code`,
    type: 'RouteOnAttribute',
    properties: { 'Routing Strategy': 'Route to Property name' },
    dynamic: Object.fromEntries(Object.entries(kit.errors).map(([name, codes]) => [name, anyOf(codes)])),
  });
  g.connect(failed, ['success'], byCode);
  return {
    entry: body,
    http,
    answered,
    failed: [{ from: byCode, relationships: ['unmatched'] }],
    routes: Object.fromEntries(routeNames.map((route) => [route, { from: byCode, relationships: [route] }])),
  };
}

/** RouteOnAttribute with one route per condition; `unmatched` is auto-terminated unless `keepUnmatched`. */
function route(g: Group, name: string, routes: Record<string, string>, options: { comments?: string; keepUnmatched?: boolean } = {}): Ref {
  return g.processor({
    name,
    type: 'RouteOnAttribute',
    comments: options.comments,
    properties: { 'Routing Strategy': 'Route to Property name' },
    dynamic: routes,
    autoTerminate: options.keepUnmatched ? [] : ['unmatched'],
  });
}

function setAttributes(g: Group, name: string, attributes: Record<string, string>, comments?: string): Ref {
  return g.processor({ name, type: 'UpdateAttribute', comments, dynamic: attributes });
}

/**
 * How the InvokeHTTPs prove who they are to Load Control: TOKEN, a static token in CONTROL.API.AUTHORIZATION;
 * OAUTH2, an access token the provider issues to the kit's client (client credentials), fetched and renewed by
 * the 'Load Control API OAuth2' service (README "Connecting NiFi", OAuth2).
 */
type ApiAuth = 'token' | 'oauth2';

interface Services {
  apiAuth: ApiAuth;
  oracle: string;
  hive: string;
  kerberos: string;
  json: string;
  parquet: string;
  httpContext: string;
}

function services(root: Group, apiAuth: ApiAuth): Services {
  const kerberos = root.service({
    name: 'SITE-SPECIFIC Kerberos (HDFS, Hive)',
    type: 'KerberosKeytabUserService',
    comments: "Replace with your site's Kerberos identity service, or remove it where HDFS and Hive need none.",
    properties: { 'Kerberos Principal': '#{KERBEROS.PRINCIPAL}', 'Kerberos Keytab': '#{KERBEROS.KEYTAB}' },
  });
  root.service({
    name: API_TLS,
    type: 'PEMEncodedSSLContextProvider',
    comments:
      "Shared by every InvokeHTTP. Valid as it comes (the JVM's CAs, no client certificate), so plain http and public CAs need nothing; CONTROL.API.CA.* for the API's private CA, CONTROL.API.CLIENT.* for mTLS to the API.",
    properties: {
      'TLS Protocol': 'TLS',
      'Private Key Source': '#{CONTROL.API.CLIENT.KEY.SOURCE}',
      'Private Key Location': '#{CONTROL.API.CLIENT.KEY.FILE}',
      'Certificate Chain Location': '#{CONTROL.API.CLIENT.CERTIFICATE.FILE}',
      'Certificate Authorities Source': '#{CONTROL.API.CA.SOURCE}',
      'Certificate Authorities': '#{CONTROL.API.CA.CERTIFICATES}',
    },
  });
  if (apiAuth === 'oauth2') {
    root.service({
      name: API_OAUTH2,
      type: 'StandardOauth2AccessTokenProvider',
      comments:
        "Every InvokeHTTP's access token: the client credentials grant at CONTROL.API.OAUTH2.TOKEN.URL, renewed before it expires. Register the client at the provider with a role Load Control maps to nifi (README, OAuth2).",
      properties: {
        'authorization-server-url': '#{CONTROL.API.OAUTH2.TOKEN.URL}',
        'grant-type': 'client_credentials',
        'client-authentication-strategy': 'REQUEST_BODY',
        'client-id': '#{CONTROL.API.OAUTH2.CLIENT.ID}',
        'client-secret': '#{CONTROL.API.OAUTH2.CLIENT.SECRET}',
        scope: '#{CONTROL.API.OAUTH2.SCOPE}',
        // a token about to expire is renewed first, so none expires between NiFi's check and Load Control's
        'refresh-window': '60 s',
        'ssl-context-service': root.serviceInScope(API_TLS),
      },
    });
  }
  root.service({
    name: RECEIVER_TLS,
    type: 'StandardRestrictedSSLContextService',
    comments:
      "For an https nifi.receiverUrl: set it as the SSL Context Service of PG-05's 'receive worker call' (and CONTROL.RECEIVER.CLIENT.AUTHENTICATION to Need Authentication for mTLS). Unused, and so disabled, for plain http.",
    properties: {
      'Keystore Filename': '#{CONTROL.RECEIVER.KEYSTORE}',
      'Keystore Password': '#{CONTROL.RECEIVER.KEYSTORE.PASSWORD}',
      'Keystore Type': 'PKCS12',
      'Truststore Filename': '#{CONTROL.RECEIVER.TRUSTSTORE}',
      'Truststore Password': '#{CONTROL.RECEIVER.TRUSTSTORE.PASSWORD}',
      'Truststore Type': 'PKCS12',
      'SSL Protocol': 'TLS',
    },
  });
  return {
    apiAuth,
    kerberos,
    oracle: root.service({
      name: 'SITE-SPECIFIC Oracle DBCP',
      type: 'DBCPConnectionPool',
      comments: 'The Oracle source: the JDBC driver and its location are your site’s.',
      properties: {
        'Database Connection URL': '#{ORACLE.JDBC.URL}',
        'Database Driver Class Name': 'oracle.jdbc.OracleDriver',
        'database-driver-locations': '#{ORACLE.DRIVER.LOCATION}',
        'Database User': '#{ORACLE.USER}',
        Password: '#{ORACLE.PASSWORD}',
        'Validation-query': 'SELECT 1 FROM DUAL',
      },
    }),
    hive: root.service({
      name: 'SITE-SPECIFIC Hive DBCP',
      type: 'DBCPConnectionPool',
      comments:
        'HiveServer2 over its JDBC driver (Apache NiFi 2 has no Hive processors). On Cloudera Flow Management, PutClouderaHiveQL may take the ExecuteSQL steps.',
      properties: {
        'Database Connection URL': '#{HIVE.JDBC.URL}',
        'Database Driver Class Name': 'org.apache.hive.jdbc.HiveDriver',
        'database-driver-locations': '#{HIVE.DRIVER.LOCATION}',
        'kerberos-user-service': kerberos,
      },
    }),
    json: root.service({
      name: 'JSON records',
      type: 'JsonRecordSetWriter',
      properties: {
        'Schema Write Strategy': 'no-schema',
        'schema-access-strategy': 'inherit-record-schema',
        'Pretty Print JSON': 'false',
        'suppress-nulls': 'never-suppress',
        'output-grouping': 'output-array',
      },
    }),
    parquet: root.service({
      name: 'Parquet chunks',
      type: 'ParquetRecordSetWriter',
      properties: { 'Schema Write Strategy': 'no-schema', 'schema-access-strategy': 'inherit-record-schema', 'compression-type': 'SNAPPY' },
    }),
    httpContext: root.service({
      name: 'PG-05 HTTP context map',
      type: 'StandardHttpContextMap',
      properties: { 'Maximum Outstanding Requests': '5000', 'Request Expiration': '1 min' },
    }),
  };
}

/** A query whose JSON records become attributes: `columns` maps an attribute to its column. */
function queryIntoAttributes(g: Group, name: string, dbcp: string, json: string, sql: string, columns: Record<string, string>) {
  const query = g.processor({
    name,
    type: 'ExecuteSQLRecord',
    properties: { 'Database Connection Pooling Service': dbcp, 'SQL Query': sql, 'esqlrecord-record-writer': json },
  });
  const read = g.processor({
    name: `${name}: read`,
    type: 'EvaluateJsonPath',
    properties: { Destination: 'flowfile-attribute', 'Return Type': 'scalar', 'Path Not Found Behavior': 'ignore' },
    dynamic: Object.fromEntries(Object.entries(columns).map(([attribute, column]) => [attribute, `$[0].${column}`])),
    autoTerminate: ['unmatched'],
  });
  g.connect(query, ['success'], read);
  return { query, read };
}

// ---- PG-05 Control Receiver ----

/** What PG-05 reads of the worker's calls: attribute → JSON path in the call's body. */
export const RECEIVER_CALL_ATTRIBUTES = {
  validate: { 'load.run.id': '$.runId', 'load.dispatch.id': '$.dispatchId' },
  reissue: {
    'load.run.id': '$.runId',
    'load.dispatch.id': '$.dispatchId',
    'load.partition.id': '$.partitionId',
    'load.business.key': '$.businessKey',
    'load.snapshot.scn': '$.snapshotScn',
    'load.hdfs.run.path': '$.hdfsRunPath',
    'load.partition.lower': '$.lowerBound',
    'load.partition.upper': '$.upperBound',
    'load.partition.upper.inclusive': '$.upperInclusive',
    'load.partition.null': '$.isNullPartition',
    'load.partition.expected.rows': '$.expectedRowCount',
  },
  // a backfill's date: PG-10 opens its run, carrying the backfill id (the createRun is the call's ACK)
  start: { 'load.dispatch.id': '$.dispatchId', 'load.backfill.id': '$.backfillId', 'load.business.key': '$.businessKey' },
};

/** The paths HandleHttpRequest takes (a regular expression; any other path is answered 404 by NiFi). */
export const RECEIVER_ALLOWED_PATHS = '/control/(validate|reissue|start)/[A-Z0-9_]+';

/**
 * PG-05's routes: the call's path for this flow's job. The job key is read inside the expression (`${#{…}}`):
 * in a string literal NiFi would compare with the text `#{LOAD.JOB.KEY}`.
 */
export const RECEIVER_ROUTES = {
  validate: "${http.request.uri:equals(${#{LOAD.JOB.KEY}:prepend('/control/validate/')})}",
  reissue: "${http.request.uri:equals(${#{LOAD.JOB.KEY}:prepend('/control/reissue/')})}",
  start: "${http.request.uri:equals(${#{LOAD.JOB.KEY}:prepend('/control/start/')})}",
};

function controlReceiver(root: Group, s: Services): { validate: Ref; reissue: Ref; start: Ref } {
  const g = root.child(
    'PG-05 Control Receiver',
    "Takes the worker's calls (POST …/control/validate/{jobKey}, …/control/reissue/{jobKey} and a backfill's …/control/start/{jobKey}, X-Dispatch-Id, X-Run-Id but for start, and a JSON body) and answers 202 at once: a receipt, not the ACK — PG-40's startValidation, the reissued partition's claim, or PG-10's createRun for the backfill's date, is the ACK. For an https receiverUrl set 'receive worker call''s SSL Context Service to 'PG-05 receiver TLS'.",
  );
  const receive = g.processor({
    name: 'receive worker call',
    type: 'HandleHttpRequest',
    properties: {
      'Listening Port': '#{CONTROL.RECEIVER.PORT}',
      'HTTP Context Map': s.httpContext,
      'Allowed Paths': RECEIVER_ALLOWED_PATHS,
      'Allow GET': 'false',
      'Allow POST': 'true',
      'Allow PUT': 'false',
      'Allow DELETE': 'false',
      'Allow HEAD': 'false',
      'Allow OPTIONS': 'false',
      'Client Authentication': '#{CONTROL.RECEIVER.CLIENT.AUTHENTICATION}',
    },
  });
  const respond = (name: string, status: string, autoTerminate: string[] = []) =>
    g.processor({
      name,
      type: 'HandleHttpResponse',
      properties: { 'HTTP Status Code': status, 'HTTP Context Map': s.httpContext },
      autoTerminate,
    });
  const byPath = route(g, 'which call', RECEIVER_ROUTES, {
    comments: 'Calls for another job key are not this flow’s: 404, which the worker makes DEAD (an alert).',
    keepUnmatched: true,
  });
  g.connect(receive, ['success'], byPath);
  g.connect(byPath, ['unmatched'], respond('404 not this job', '404', ['success', 'failure']));
  const malformed = respond('400 malformed call', '400', ['success', 'failure']);
  const ports: Record<string, Ref> = {};
  for (const kind of ['validate', 'reissue', 'start'] as const) {
    const read = g.processor({
      name: `read ${kind} call`,
      type: 'EvaluateJsonPath',
      properties: { Destination: 'flowfile-attribute', 'Return Type': 'scalar', 'Path Not Found Behavior': 'ignore' },
      dynamic: RECEIVER_CALL_ATTRIBUTES[kind],
      autoTerminate: ['unmatched'],
    });
    g.connect(byPath, [kind], read);
    g.connect(read, ['failure'], malformed);
    const accepted = respond(`202 ${kind}`, '202');
    g.connect(read, ['matched'], accepted);
    ports[kind] = g.output(`${kind} calls`);
    // the worker may have given up waiting (then it sends the call again): the flow goes on either way
    g.connect(accepted, ['success', 'failure'], ports[kind]!);
  }
  return { validate: ports.validate!, reissue: ports.reissue!, start: ports.start! };
}

/** An Oracle or Hive error as a message: at most 2,000 characters (the API's limit), whatever the driver said. */
const SQL_ERROR = "${executesql.error.message:replaceAll('(?s)^(.{0,1900}).*$', '$1')}";

/** Waits for an operator to resume a paused job (JOB_PAUSED): penalized retries, for 7 days at most. */
function waitForResume(g: Group, name: string, then: Ref, failures: Ref): Ref {
  const wait = g.processor({
    name,
    type: 'RetryFlowFile',
    comments: 'JOB_PAUSED: an operator paused the job (load-control pause). Asked again every 5 minutes, for 7 days.',
    properties: { 'retry-attribute': 'load.pause.retries', 'maximum-retries': '2016', 'penalize-retries': 'true' },
    penalty: '5 mins',
  });
  g.connect(wait, ['retry'], then);
  const gaveUp = setAttributes(
    g,
    `${name}: gave up`,
    failure('PG-10', { code: 'JOB_PAUSED', message: 'the job stayed paused for 7 days', stage: 'MANIFEST', kind: 'PAUSE', step: name }),
  );
  g.connect(wait, ['retries_exceeded', 'failure'], gaveUp);
  g.connect(gaveUp, ['success'], failures);
  return wait;
}

/** Waits for a business-date gate: penalized retries, for 12 hours at most. */
function waitForGate(g: Group, name: string, retryAttribute: string, then: Ref, failures: Ref, group: string, stage: string): Ref {
  const wait = g.processor({
    name,
    type: 'RetryFlowFile',
    comments: 'DEPENDENCIES_NOT_READY: an upstream job is not done for the business date. Asked again every 5 minutes, for 12 hours.',
    properties: { 'retry-attribute': retryAttribute, 'maximum-retries': '144', 'penalize-retries': 'true' },
    penalty: '5 mins',
  });
  g.connect(wait, ['retry'], then);
  const gaveUp = setAttributes(
    g,
    `${name}: gave up`,
    failure(group, {
      code: 'DEPENDENCIES_NOT_READY',
      message: 'the upstream jobs were not ready within 12 hours',
      stage,
      kind: 'GATE',
      step: name,
    }),
  );
  g.connect(wait, ['retries_exceeded', 'failure'], gaveUp);
  g.connect(gaveUp, ['success'], failures);
  return wait;
}

// ---- PG-10 Run Coordinator ----

const SNAPSHOT_SCN_SQL = 'SELECT TO_CHAR(CURRENT_SCN) AS "scn" FROM V$DATABASE';
const SOURCE_STATISTICS_SQL = [
  'SELECT TO_CHAR(COUNT(*)) AS "sourceCount",',
  '       TO_CHAR(COUNT(CASE WHEN #{SOURCE.SPLIT.COLUMN} IS NULL THEN 1 END)) AS "nullCount",',
  '       TO_CHAR(#{SOURCE.CHECKSUM.EXPRESSION}) AS "checksum"',
  '  FROM #{SOURCE.TABLE} AS OF SCN ${load.snapshot.scn}',
].join('\n');
// #{LOAD.PARTITIONS} ranges of about equal size by NTILE, the bounds made distinct so that no key value straddles two
// ranges, each range's rows counted at the same SCN; and the NULL partition when the split column has NULLs. The
// columns are named as ManifestPartitionInput's fields: the records are the manifest's partitions as they are.
const PARTITION_PLAN_SQL = [
  'WITH src AS (SELECT #{SOURCE.SPLIT.COLUMN} AS k FROM #{SOURCE.TABLE} AS OF SCN ${load.snapshot.scn} WHERE #{SOURCE.SPLIT.COLUMN} IS NOT NULL),',
  '     lows AS (SELECT DISTINCT MIN(k) OVER (PARTITION BY t) AS lo FROM (SELECT k, NTILE(#{LOAD.PARTITIONS}) OVER (ORDER BY k) AS t FROM src)),',
  '     ranges AS (SELECT lo, LEAD(lo) OVER (ORDER BY lo) AS hi, ROW_NUMBER() OVER (ORDER BY lo) - 1 AS i FROM lows)',
  'SELECT LPAD(TO_CHAR(r.i), 4, \'0\') AS "partitionId", TO_CHAR(r.lo) AS "lowerBound",',
  '       TO_CHAR(COALESCE(r.hi, (SELECT MAX(k) FROM src))) AS "upperBound",',
  "       CASE WHEN r.hi IS NULL THEN 'true' ELSE 'false' END AS \"upperInclusive\", 'false' AS \"isNullPartition\",",
  '       TO_CHAR((SELECT COUNT(*) FROM src s WHERE s.k >= r.lo AND (r.hi IS NULL OR s.k < r.hi))) AS "expectedRowCount"',
  '  FROM ranges r',
  'UNION ALL',
  "SELECT 'NULL', NULL, NULL, 'false', 'true', TO_CHAR(COUNT(*))",
  '  FROM #{SOURCE.TABLE} AS OF SCN ${load.snapshot.scn} WHERE #{SOURCE.SPLIT.COLUMN} IS NULL HAVING COUNT(*) > 0',
  'ORDER BY 1',
].join('\n');

/** What PG-10 reads of each partition of the plan: attribute → JSON path in the partition's record. */
export const PARTITION_ATTRIBUTES = {
  'load.partition.id': '$.partitionId',
  'load.partition.lower': '$.lowerBound',
  'load.partition.upper': '$.upperBound',
  'load.partition.upper.inclusive': '$.upperInclusive',
  'load.partition.null': '$.isNullPartition',
  'load.partition.expected.rows': '$.expectedRowCount',
};

function runCoordinator(root: Group, s: Services): { trigger: Ref; partitions: Ref; failures: Ref } {
  const g = root.child(
    'PG-10 Run Coordinator',
    'Opens a run for the business key, reads the snapshot SCN, the source statistics and the partition plan at that SCN, registers the manifest and sends one FlowFile per non-empty partition to PG-20.',
  );
  const daily = g.processor({
    name: 'daily trigger',
    type: 'GenerateFlowFile',
    comments: "Yesterday's date as the business key, at 02:00 on the primary node. Feed the 'trigger' port for other keys.",
    cron: '0 0 2 * * ?',
    primaryNodeOnly: true,
    properties: { 'File Size': '0B', 'Batch Size': '1' },
    dynamic: { 'load.business.key': "${now():toNumber():minus(86400000):format('yyyy-MM-dd')}" },
  });
  const trigger = g.input(
    'trigger',
    'load.business.key: a run for this key (a rerun after a failed run; PG-05 feeds a backfill’s dates here with load.backfill.id)',
  );
  const job = setAttributes(g, 'job parameters', {
    'load.job.key': '#{LOAD.JOB.KEY}',
    'load.hdfs.root': '#{LOAD.HDFS.ROOT}',
    'load.stage.table.prefix': '#{LOAD.STAGE.TABLE.PREFIX}',
    'load.allow.empty.source': '#{LOAD.ALLOW.EMPTY.SOURCE}',
    'load.source.table': '#{SOURCE.TABLE}',
    'load.tags': '#{LOAD.TAGS}',
    'load.flow.registry': '#{FLOW.REGISTRY}',
    'load.flow.bucket': '#{FLOW.BUCKET}',
    'load.flow.id': '#{FLOW.ID}',
    'load.flow.version': '#{FLOW.VERSION}',
  });
  g.connect(daily, ['success'], job);
  g.connect(trigger, [''], job);
  const failures = g.output('failures');

  const create = call(g, s, 'PG-10/createRun');
  g.connect(job, ['success'], create.entry);
  link(g, create.failed, failures);
  link(
    g,
    create.routes['gate-not-ready']!,
    waitForGate(g, 'createRun: wait for the gate', 'load.gate.retries', create.http, failures, 'PG-10', 'MANIFEST'),
  );
  link(g, create.routes['job-paused']!, waitForResume(g, 'createRun: wait while the job is paused', create.http, failures));
  const fresh = route(
    g,
    'a new run?',
    { created: "${load.run.status:equals('CREATED')}" },
    { comments: 'A replayed createRun whose run has moved on: the flow that created it carries it.' },
  );
  link(g, create.answered, fresh);

  const scn = queryIntoAttributes(g, 'snapshot SCN', s.oracle, s.json, SNAPSHOT_SCN_SQL, { 'load.snapshot.scn': 'scn' });
  g.connect(fresh, ['created'], scn.query);
  const stats = queryIntoAttributes(g, 'source statistics at the SCN', s.oracle, s.json, SOURCE_STATISTICS_SQL, {
    'load.source.count': 'sourceCount',
    'load.source.null.count': 'nullCount',
    'load.source.checksum': 'checksum',
  });
  g.connect(scn.read, ['matched'], stats.query);
  const plan = g.processor({
    name: 'partition plan at the SCN',
    type: 'ExecuteSQLRecord',
    comments: 'SITE-SPECIFIC SQL: adjust to your source. The API checks the plan (MANIFEST_INVALID names what is wrong).',
    properties: { 'Database Connection Pooling Service': s.oracle, 'SQL Query': PARTITION_PLAN_SQL, 'esqlrecord-record-writer': s.json },
  });
  g.connect(stats.read, ['matched'], plan);
  const size = setAttributes(g, 'plan size', { 'load.partition.count': '${executesql.row.count}' });
  g.connect(plan, ['success'], size);

  const sourceFailed = setAttributes(
    g,
    'source query failed',
    failure('PG-10', { code: 'SOURCE_QUERY_FAILED', message: SQL_ERROR, stage: 'MANIFEST', kind: 'SQL', step: 'source queries' }),
  );
  for (const failed of [scn.query, stats.query, plan]) g.connect(failed, ['failure'], sourceFailed);
  for (const failed of [scn.read, stats.read]) g.connect(failed, ['failure'], sourceFailed);
  const failRun = call(g, s, 'PG-10/failRun');
  g.connect(sourceFailed, ['success'], failRun.entry);
  link(g, failRun.answered, failures);
  link(g, failRun.failed, failures);

  const manifest = call(g, s, 'PG-10/registerManifest');
  g.connect(size, ['success'], manifest.entry);
  link(g, manifest.failed, failures);
  // the request's content is the manifest: its partitions become PG-20's FlowFiles
  const split = g.processor({
    name: 'one FlowFile per partition',
    type: 'SplitJson',
    properties: { 'JsonPath Expression': '$.variables.input.partitions' },
    autoTerminate: ['original'],
  });
  link(g, manifest.answered, split);
  const partition = g.processor({
    name: 'read partition',
    type: 'EvaluateJsonPath',
    properties: { Destination: 'flowfile-attribute', 'Return Type': 'scalar', 'Path Not Found Behavior': 'ignore' },
    dynamic: PARTITION_ATTRIBUTES,
    autoTerminate: ['unmatched'],
  });
  g.connect(split, ['split'], partition);
  const fanOutFailed = setAttributes(
    g,
    'fan-out failed',
    failure('PG-10', {
      code: 'FAN_OUT_FAILED',
      message: 'the manifest could not be split into partitions',
      stage: 'MANIFEST',
      kind: 'FLOW',
      step: 'fan-out',
    }),
  );
  g.connect(split, ['failure'], fanOutFailed);
  g.connect(partition, ['failure'], fanOutFailed);
  g.connect(fanOutFailed, ['success'], failures);
  const rows = route(
    g,
    'rows to extract?',
    { rows: "${load.partition.expected.rows:equals('0'):not()}" },
    { comments: 'An empty partition is SUCCESS from the start: nothing to extract.' },
  );
  g.connect(partition, ['matched'], rows);
  const partitions = g.output('partitions');
  g.connect(rows, ['rows'], partitions);
  return { trigger, partitions, failures };
}

// ---- PG-20 Extract Worker ----

/** The name of a chunk's Parquet file, made unique by the claim token (a reissued partition's files are its own). */
const CHUNK_FILE = "part-${load.partition.id}-${load.claim.token:substring(0, 8)}-${fragment.index:padLeft(5, '0')}.parquet";
/** What PG-20 sets of each Parquet file before PutHDFS writes it. */
export const CHUNK_ATTRIBUTES = {
  filename: CHUNK_FILE,
  'load.chunk.hdfs.path': `\${load.hdfs.run.path}/${CHUNK_FILE}`,
  'load.chunk.bytes': '${fileSize}',
};

/**
 * The partition's range as a WHERE condition on the split column, or IS NULL. The column is a parameter read
 * inside the expressions (`${#{SOURCE.SPLIT.COLUMN}}`, or as an argument): NiFi leaves `#{…}` in a string literal as text.
 */
const PARTITION_PREDICATE = [
  "${load.partition.null:equals('true'):ifElse(${#{SOURCE.SPLIT.COLUMN}:append(' IS NULL')},",
  " ${#{SOURCE.SPLIT.COLUMN}:append(' >= '):append(${load.partition.lower}):append(' AND '):append(#{SOURCE.SPLIT.COLUMN})",
  ":append(${load.partition.upper.inclusive:equals('true'):ifElse(' <= ', ' < ')}):append(${load.partition.upper})})}",
].join('');

/**
 * A claim refused although its partition is still claimable (PENDING or RETRY) in an extracting run: the one such
 * refusal is POOL_FULL (prisma/functions/02_claim_partition.sql). Read from the fields every release answers, not
 * from the answer's reason, so that the kit's claim is answered by a previous release during a rolling upgrade.
 */
export const POOL_FULL =
  "${load.partition.claimed:equals('false'):and(${load.run.status:equals('EXTRACTING')}):and(${load.partition.status:equals('PENDING'):or(${load.partition.status:equals('RETRY')})})}";

function extractWorker(root: Group, s: Services): { partitions: Ref; failures: Ref } {
  const g = root.child(
    'PG-20 Extract Worker',
    "Claims each partition (a claim token per FlowFile), reads its range at the run's SCN into Parquet files of #{EXTRACT.ROWS.PER.CHUNK} rows, writes them under the run path and reports each file. Only the claim's owner reports; a failure gives the partition up (failPartition).",
  );
  const partitions = g.input(
    'partitions',
    'load.run.id, load.partition.*, load.snapshot.scn, load.hdfs.run.path: from PG-10 (round robin over the nodes), or a reissue through PG-05',
  );
  const failures = g.output('failures');
  const token = setAttributes(
    g,
    'claim token',
    { 'load.claim.token': '${UUID()}', 'load.worker.node': '${hostname(true)}', 'load.partition.predicate': PARTITION_PREDICATE },
    "Made once per FlowFile: a retried claim (a lost answer) is the same claim. The predicate is the partition's range, or IS NULL.",
  );
  g.connect(partitions, [''], token);
  const claim = call(g, s, 'PG-20/claimPartition');
  g.connect(token, ['success'], claim.entry);
  link(g, claim.failed, failures);
  const owned = route(
    g,
    'claimed?',
    { claimed: "${load.partition.claimed:equals('true')}", 'pool full': POOL_FULL },
    {
      comments:
        "claimed: false — another node owns the partition, or the run moved on: the FlowFile is dropped before Oracle is queried. Refused while the partition is still claimable in an extracting run (POOL_FULL): the job's source pool has no free slot; the claim waits and asks again.",
    },
  );
  link(g, claim.answered, owned);
  const waitForSlot = g.processor({
    name: 'claim: wait for a pool slot',
    type: 'RetryFlowFile',
    comments:
      'POOL_FULL: the source pool\'s RUNNING partitions are at its limit (README "Source pools"). The same claim (same token) is asked again every 30 seconds (the pool\'s retryAfter is in load.partition.retry.after), for 24 hours.',
    properties: { 'retry-attribute': 'load.pool.retries', 'maximum-retries': '2880', 'penalize-retries': 'true' },
    penalty: '30 sec',
  });
  g.connect(owned, ['pool full'], waitForSlot);
  g.connect(waitForSlot, ['retry'], claim.http);
  const gaveUpWaiting = setAttributes(
    g,
    'claim: wait for a pool slot: gave up',
    failure('PG-20', {
      code: 'POOL_FULL',
      message: 'the source pool had no free slot within 24 hours',
      stage: 'EXTRACT',
      kind: 'POOL',
      step: 'claim: wait for a pool slot',
    }),
  );
  g.connect(waitForSlot, ['retries_exceeded', 'failure'], gaveUpWaiting);
  g.connect(gaveUpWaiting, ['success'], failures);
  const extract = g.processor({
    name: 'extract at the SCN',
    type: 'ExecuteSQLRecord',
    concurrency: 4,
    properties: {
      'Database Connection Pooling Service': s.oracle,
      'SQL Query': 'SELECT #{SOURCE.COLUMNS} FROM #{SOURCE.TABLE} AS OF SCN ${load.snapshot.scn} WHERE ${load.partition.predicate}',
      'Max Wait Time': '#{EXTRACT.QUERY.TIMEOUT}',
      'esqlrecord-record-writer': s.parquet,
      'esql-max-rows': '#{EXTRACT.ROWS.PER.CHUNK}',
      'esql-fetch-size': '10000',
    },
  });
  g.connect(owned, ['claimed'], extract);
  const chunk = setAttributes(g, 'chunk file', CHUNK_ATTRIBUTES);
  g.connect(extract, ['success'], chunk);
  const write = g.processor({
    name: 'write Parquet to HDFS',
    type: 'PutHDFS',
    comments: 'SITE-SPECIFIC: Hadoop configuration files and the Kerberos service.',
    properties: {
      'Hadoop Configuration Resources': '#{HADOOP.CONFIGURATION.RESOURCES}',
      'kerberos-user-service': s.kerberos,
      Directory: '${load.hdfs.run.path}',
      'Conflict Resolution Strategy': 'replace',
      'writing-strategy': 'writeAndRename',
    },
  });
  g.connect(chunk, ['success'], write);
  const report = call(g, s, 'PG-20/reportChunk');
  g.connect(write, ['success'], report.entry);
  g.terminate(report.answered.from, report.answered.relationships);
  // the partition was reissued: the new owner reports it; a WARN event, and the partition is not given up
  link(g, report.routes['not-owner']!, failures);

  const giveUp = call(g, s, 'PG-20/failPartition');
  const extractFailed = setAttributes(
    g,
    'extract failed',
    failure('PG-20', { code: 'EXTRACT_QUERY_FAILED', message: SQL_ERROR, stage: 'EXTRACT', kind: 'SQL', step: 'extract at the SCN' }),
  );
  g.connect(extract, ['failure'], extractFailed);
  const writeFailed = setAttributes(
    g,
    'HDFS write failed',
    failure('PG-20', {
      code: 'HDFS_WRITE_FAILED',
      message: 'PutHDFS could not write ${filename}',
      stage: 'EXTRACT',
      kind: 'HDFS',
      step: 'write Parquet to HDFS',
    }),
  );
  g.connect(write, ['failure'], writeFailed);
  for (const failed of [extractFailed, writeFailed]) g.connect(failed, ['success'], giveUp.entry);
  link(g, report.failed, giveUp.entry);
  link(g, giveUp.answered, failures);
  link(g, giveUp.failed, failures);
  return { partitions, failures };
}

// ---- PG-40 Staging Validation ----

const STAGE_TABLE = '#{HIVE.STAGE.DATABASE}.${load.stage.table}';

/** What PG-40 sets when the API refuses the staging table: the failure, and the transition PG-90's failRun makes. */
export const STAGING_REFUSED = {
  ...failure('PG-40', {
    code: 'STAGE_VALIDATION_FAILED',
    message: '${load.validation.reason}',
    stage: 'STAGING_VALIDATION',
    kind: 'VALIDATION',
    step: 'markStageValidated',
  }),
  ...runFailure('STAGE_VALIDATING', 'FAILED_STAGE_VALIDATION'),
};

function stagingValidation(root: Group, s: Services): { calls: Ref; publish: Ref; failures: Ref; runFailures: Ref } {
  const g = root.child(
    'PG-40 Staging Validation',
    "Started by the worker's VALIDATE_RUN call: startValidation (the ACK; only one delivery wins), a Hive external table over the run path, its count and checksum as STAGING metrics, then the API's own verdict (markStageValidated).",
  );
  const calls = g.input('validate calls', "load.run.id, load.dispatch.id: PG-05's validate calls");
  const failures = g.output('failures');
  const runFailures = g.output('run failures');
  const publish = g.output('publish');
  const node = setAttributes(g, 'node', { 'load.worker.node': '${hostname(true)}' });
  g.connect(calls, [''], node);
  const start = call(g, s, 'PG-40/startValidation');
  g.connect(node, ['success'], start.entry);
  link(g, start.failed, failures);
  const started = route(
    g,
    'started?',
    { started: "${load.validation.started:equals('true')}" },
    { comments: 'started: false — another delivery of the call is validating: this FlowFile is dropped.' },
  );
  link(g, start.answered, started);
  const table = g.processor({
    name: 'staging table over the run path',
    type: 'ExecuteSQL',
    comments: 'SITE-SPECIFIC: Hive through its JDBC driver.',
    properties: {
      'Database Connection Pooling Service': s.hive,
      'SQL Query': `CREATE EXTERNAL TABLE IF NOT EXISTS ${STAGE_TABLE} (#{STAGE.COLUMNS.DDL}) STORED AS PARQUET LOCATION '\${load.hdfs.run.path}'`,
    },
  });
  g.connect(started, ['started'], table);
  const count = queryIntoAttributes(
    g,
    'count staging',
    s.hive,
    s.json,
    `SELECT CAST(COUNT(*) AS STRING) AS stage_count, CAST(#{SOURCE.CHECKSUM.EXPRESSION} AS STRING) AS stage_checksum FROM ${STAGE_TABLE}`,
    { 'load.stage.count': 'stage_count', 'load.stage.checksum': 'stage_checksum' },
  );
  g.connect(table, ['success'], count.query);
  const hiveFailed = setAttributes(g, 'Hive query failed', {
    ...failure('PG-40', {
      code: 'HIVE_QUERY_FAILED',
      message: SQL_ERROR,
      stage: 'STAGING_VALIDATION',
      kind: 'SQL',
      step: 'staging queries',
    }),
    ...runFailure('STAGE_VALIDATING', 'FAILED_STAGE_VALIDATION'),
  });
  g.connect(table, ['failure'], hiveFailed);
  g.connect(count.query, ['failure'], hiveFailed);
  g.connect(count.read, ['failure'], hiveFailed);
  g.connect(hiveFailed, ['success'], runFailures);
  const metrics = call(g, s, 'PG-40/recordMetrics');
  g.connect(count.read, ['matched'], metrics.entry);
  link(g, metrics.failed, failures);
  const judge = call(g, s, 'PG-40/markStageValidated');
  link(g, metrics.answered, judge.entry);
  link(g, judge.failed, failures);
  const verdict = route(g, 'validated?', {
    validated: "${load.stage.validated:equals('true')}",
    refused: "${load.stage.validated:equals('false'):and(${load.run.status:equals('STAGE_VALIDATING')})}",
  });
  link(g, judge.answered, verdict);
  g.connect(verdict, ['validated'], publish);
  const refused = setAttributes(g, 'staging refused', STAGING_REFUSED);
  g.connect(verdict, ['refused'], refused);
  g.connect(refused, ['success'], runFailures);
  return { calls, publish, failures, runFailures };
}

// ---- PG-50 Publish ----

function publishGroup(root: Group, s: Services): { publish: Ref; published: Ref; failures: Ref } {
  const g = root.child(
    'PG-50 Publish',
    'One publisher per run (claimPublish and its publish token); only it runs the INSERT OVERWRITE, never retried automatically. Anything but a confirmed success is PUBLISH_UNKNOWN: an operator resolves it (resolveUnknown).',
  );
  const publish = g.input('publish', 'a STAGING_VALIDATED run from PG-40');
  const failures = g.output('failures');
  const published = g.output('published');
  const token = setAttributes(
    g,
    'publish token',
    { 'load.publish.token': '${UUID()}' },
    'Made once per FlowFile: a retried claim is the same claim.',
  );
  g.connect(publish, [''], token);
  const claim = call(g, s, 'PG-50/claimPublish');
  g.connect(token, ['success'], claim.entry);
  link(g, claim.failed, failures);
  link(
    g,
    claim.routes['gate-not-ready']!,
    waitForGate(g, 'claimPublish: wait for the gate', 'load.gate.retries', claim.http, failures, 'PG-50', 'PUBLISH'),
  );
  const owner = route(
    g,
    'claimed?',
    { claimed: "${load.publish.claimed:equals('true')}" },
    { comments: 'claimed: false — another publisher owns it.' },
  );
  link(g, claim.answered, owner);
  const insert = g.processor({
    name: 'INSERT OVERWRITE the target',
    type: 'ExecuteSQL',
    comments: 'SITE-SPECIFIC: Hive through its JDBC driver. A failure is never retried: Hive may have changed the target.',
    properties: {
      'Database Connection Pooling Service': s.hive,
      'SQL Query':
        "INSERT OVERWRITE TABLE #{TARGET.TABLE} PARTITION (#{TARGET.PARTITION.COLUMN}='${load.business.key}') SELECT #{TARGET.COLUMNS} FROM " +
        STAGE_TABLE,
    },
  });
  g.connect(owner, ['claimed'], insert);
  const confirmed = setAttributes(g, 'published', {
    'load.publish.outcome': 'PUBLISHED',
    'load.publish.error': '',
    'load.publish.message': '',
  });
  g.connect(insert, ['success'], confirmed);
  const unknown = setAttributes(
    g,
    'publish unknown',
    { 'load.publish.outcome': 'PUBLISH_UNKNOWN', 'load.publish.error': 'HIVE_PUBLISH_FAILED', 'load.publish.message': SQL_ERROR },
    'Hive did not confirm: the target may have changed.',
  );
  g.connect(insert, ['failure'], unknown);
  const result = call(g, s, 'PG-50/reportPublishResult');
  g.connect(confirmed, ['success'], result.entry);
  g.connect(unknown, ['success'], result.entry);
  link(g, result.failed, failures);
  const done = route(g, 'published?', { published: "${load.run.status:equals('PUBLISHED')}" });
  link(g, result.answered, done);
  g.connect(done, ['published'], published);
  return { publish, published, failures };
}

// ---- PG-60 Target Validation ----

/** What PG-60 sets when the API refuses the target: the failure, and the transition PG-90's failRun makes. */
export const TARGET_REFUSED = {
  ...failure('PG-60', {
    code: 'TARGET_VALIDATION_FAILED',
    message: '${load.validation.reason}',
    stage: 'TARGET_VALIDATION',
    kind: 'VALIDATION',
    step: 'markSuccess',
  }),
  ...runFailure('PUBLISHED', 'FAILED_TARGET_VALIDATION'),
};

function targetValidation(root: Group, s: Services): { published: Ref; failures: Ref; runFailures: Ref } {
  const g = root.child(
    'PG-60 Target Validation',
    'Counts and checksums the published partition as TARGET metrics; markSuccess judges them and compares the target count with staging. After an operator resolves PUBLISH_UNKNOWN as PUBLISHED, feed the run here by hand.',
  );
  const published = g.input('published', 'load.run.id, load.business.key, load.staging.count, load.source.checksum: a PUBLISHED run');
  const failures = g.output('failures');
  const runFailures = g.output('run failures');
  const count = queryIntoAttributes(
    g,
    'count target',
    s.hive,
    s.json,
    "SELECT CAST(COUNT(*) AS STRING) AS target_count, CAST(#{SOURCE.CHECKSUM.EXPRESSION} AS STRING) AS target_checksum FROM #{TARGET.TABLE} WHERE #{TARGET.PARTITION.COLUMN} = '${load.business.key}'",
    { 'load.target.count': 'target_count', 'load.target.checksum': 'target_checksum' },
  );
  g.connect(published, [''], count.query);
  const hiveFailed = setAttributes(g, 'Hive query failed', {
    ...failure('PG-60', { code: 'HIVE_QUERY_FAILED', message: SQL_ERROR, stage: 'TARGET_VALIDATION', kind: 'SQL', step: 'count target' }),
    ...runFailure('PUBLISHED', 'FAILED_TARGET_VALIDATION'),
  });
  g.connect(count.query, ['failure'], hiveFailed);
  g.connect(count.read, ['failure'], hiveFailed);
  g.connect(hiveFailed, ['success'], runFailures);
  const metrics = call(g, s, 'PG-60/recordMetrics');
  g.connect(count.read, ['matched'], metrics.entry);
  link(g, metrics.failed, failures);
  const success = call(g, s, 'PG-60/markSuccess');
  link(g, metrics.answered, success.entry);
  link(g, success.failed, failures);
  const verdict = route(g, 'succeeded?', {
    refused: "${load.run.success:equals('false'):and(${load.run.status:equals('PUBLISHED')})}",
  });
  link(g, success.answered, verdict);
  const refused = setAttributes(g, 'target refused', TARGET_REFUSED);
  g.connect(verdict, ['refused'], refused);
  g.connect(refused, ['success'], runFailures);
  return { published, failures, runFailures };
}

// ---- PG-70 Cleanup ----

function cleanup(root: Group, s: Services): { failures: Ref } {
  const g = root.child(
    'PG-70 Cleanup',
    "Once a day: the job's ended runs past retention (cleanup.successRetention, cleanup.failedRetention) lose their staging table and HDFS run path, and the cleanup is recorded. A failure is a CLEANUP_FAILED event (the monitor's alert).",
  );
  const failures = g.output('failures');
  const daily = g.processor({
    name: 'daily cleanup',
    type: 'GenerateFlowFile',
    cron: '0 0 4 * * ?',
    primaryNodeOnly: true,
    properties: { 'File Size': '0B', 'Batch Size': '1' },
  });
  const job = setAttributes(g, 'job', { 'load.job.key': '#{LOAD.JOB.KEY}' });
  g.connect(daily, ['success'], job);
  const candidates = call(g, s, 'PG-70/cleanupCandidates');
  g.connect(job, ['success'], candidates.entry);
  link(g, candidates.failed, failures);
  const drop = g.processor({
    name: 'drop staging table',
    type: 'ExecuteSQL',
    comments: 'SITE-SPECIFIC: Hive through its JDBC driver.',
    properties: { 'Database Connection Pooling Service': s.hive, 'SQL Query': `DROP TABLE IF EXISTS ${STAGE_TABLE}` },
  });
  link(g, candidates.answered, drop);
  const remove = g.processor({
    name: 'delete run path',
    type: 'DeleteHDFS',
    comments: 'SITE-SPECIFIC: Hadoop configuration files and the Kerberos service.',
    properties: {
      'Hadoop Configuration Resources': '#{HADOOP.CONFIGURATION.RESOURCES}',
      'kerberos-user-service': s.kerberos,
      file_or_directory: '${load.hdfs.run.path}',
      recursive: 'true',
    },
  });
  g.connect(drop, ['success'], remove);
  const record = call(g, s, 'PG-70/recordCleanup');
  g.connect(remove, ['success'], record.entry);
  g.terminate(record.answered.from, record.answered.relationships);
  link(g, record.failed, failures);
  const failed = setAttributes(
    g,
    'cleanup failed',
    failure('PG-70', {
      code: 'CLEANUP_FAILED',
      message: 'the staging table or the run path of ${load.run.id} could not be removed',
      stage: 'CLEANUP',
      kind: 'CLEANUP',
      step: 'cleanup',
    }),
  );
  g.connect(drop, ['failure'], failed);
  g.connect(remove, ['failure'], failed);
  g.connect(failed, ['success'], failures);
  return { failures };
}

// ---- the business-date gate ----

function businessDateGate(root: Group, s: Services): { failures: Ref } {
  const g = root.child(
    'GATE Business-Date Gate',
    "For the flows around Load Control: an upstream job's flow reports its attempts for a business date ('upstream attempts'), and a downstream consumer's flow publishes for a date once every required job succeeded ('publications'), the exact upstream runs stored as evidence.",
  );
  const failures = g.output('failures');
  const attempts = g.input(
    'upstream attempts',
    'gate.job.id, gate.business.date, gate.attempt, gate.run.id, gate.state (RUNNING, SUCCEEDED, FAILED), gate.started.at (ISO-8601 with offset)',
  );
  const observe = call(g, s, 'GATE/recordObservation');
  g.connect(attempts, [''], observe.entry);
  g.terminate(observe.answered.from, observe.answered.relationships);
  link(g, observe.failed, failures);

  const publications = g.input(
    'publications',
    "gate.business.date, gate.output.name, gate.output.rows: the consumer's output for the date",
  );
  const consumer = setAttributes(g, 'consumer', { 'gate.consumer': '#{GATE.CONSUMER}' });
  g.connect(publications, [''], consumer);
  const readiness = call(g, s, 'GATE/readiness');
  g.connect(consumer, ['success'], readiness.entry);
  link(g, readiness.failed, failures);
  const ready = route(g, 'ready?', { ready: "${gate.ready:equals('true')}" }, { keepUnmatched: true });
  link(g, readiness.answered, ready);
  g.connect(
    ready,
    ['unmatched'],
    waitForGate(g, 'readiness: wait for the upstream jobs', 'gate.readiness.retries', readiness.http, failures, 'GATE', 'GATE'),
  );
  const publish = call(g, s, 'GATE/publish');
  g.connect(ready, ['ready'], publish.entry);
  g.terminate(publish.answered.from, publish.answered.relationships);
  link(g, publish.failed, failures);
  link(
    g,
    publish.routes['gate-not-ready']!,
    waitForGate(g, 'publish: wait for the upstream jobs', 'gate.publish.retries', publish.http, failures, 'GATE', 'GATE'),
  );
  return { failures };
}

// ---- PG-90 Error and Event ----

/** DUPLICATE_ACTIVE_RUN and CLAIM_MISMATCH are the normal races: WARN, everything else ERROR. */
export const EVENT_LEVEL =
  "${load.error.code:equals('DUPLICATE_ACTIVE_RUN'):or(${load.error.code:equals('CLAIM_MISMATCH')}):ifElse('WARN', 'ERROR')}";

function errorAndEvent(root: Group, s: Services): { failures: Ref; runFailures: Ref } {
  const g = root.child(
    'PG-90 Error and Event',
    "Every failure of the flow as an event of its run (recordEvent); a failure that ends the run is reported first (failRun, with the transition the failing group named). DUPLICATE_ACTIVE_RUN and CLAIM_MISMATCH are the normal races: WARN. PG-90's own failures are logged.",
  );
  const failures = g.input(
    'failures',
    'load.error.code, load.error.message, load.error.stage, load.error.group, load.error.step; load.run.id and load.partition.id when known',
  );
  const runFailures = g.input('run failures', "the same, and load.fail.expected.status, load.fail.status: the run's failing transition");
  const failRun = call(g, s, 'PG-90/failRun', { errorAttributes: false });
  g.connect(runFailures, [''], failRun.entry);
  const event = setAttributes(g, 'event', { 'load.event.level': EVENT_LEVEL, 'load.event.node': '${hostname(true)}' });
  g.connect(failures, [''], event);
  link(g, failRun.answered, event);
  // a refused failRun (the run moved on) still leaves the original failure's event
  link(g, failRun.failed, event);
  const record = call(g, s, 'PG-90/recordEvent', { errorAttributes: false });
  g.connect(event, ['success'], record.entry);
  g.terminate(record.answered.from, record.answered.relationships);
  const unrecorded = g.processor({
    name: 'event not recorded',
    type: 'LogAttribute',
    properties: { 'Log Level': 'error', 'Log Payload': 'false', 'Log prefix': 'load-control event not recorded' },
    autoTerminate: ['success'],
  });
  link(g, record.failed, unrecorded);
  return { failures, runFailures };
}

/** The whole flow definition, as nifi/load-control-flow.json holds it. */
function loadControlFlow(apiAuth: ApiAuth): Record<string, unknown> {
  const root = new Group(
    'Load Control',
    'Load Control NiFi kit (nifi/ in the Load Control repository): every call to Load Control is made from nifi/requests. Set the parameter context, enable the controller services marked SITE-SPECIFIC, then start the groups.',
    PARAMETER_CONTEXT,
  );
  const s = services(root, apiAuth);
  const pg05 = controlReceiver(root, s);
  const pg10 = runCoordinator(root, s);
  const pg20 = extractWorker(root, s);
  const pg40 = stagingValidation(root, s);
  const pg50 = publishGroup(root, s);
  const pg60 = targetValidation(root, s);
  const pg70 = cleanup(root, s);
  const gate = businessDateGate(root, s);
  const pg90 = errorAndEvent(root, s);
  root.connect(pg05.validate, [''], pg40.calls);
  root.connect(pg05.reissue, [''], pg20.partitions);
  root.connect(pg05.start, [''], pg10.trigger);
  // the partitions are spread over the cluster's nodes
  root.connect(pg10.partitions, [''], pg20.partitions, { roundRobin: true });
  root.connect(pg40.publish, [''], pg50.publish);
  root.connect(pg50.published, [''], pg60.published);
  for (const failures of [pg10.failures, pg20.failures, pg40.failures, pg50.failures, pg60.failures, pg70.failures, gate.failures]) {
    root.connect(failures, [''], pg90.failures);
  }
  for (const runFailures of [pg40.runFailures, pg60.runFailures]) root.connect(runFailures, [''], pg90.runFailures);
  return flowDefinition(root, {
    name: PARAMETER_CONTEXT,
    description: 'Load Control NiFi kit: the API, the receiver port, the job and its SITE-SPECIFIC connections',
    parameters:
      apiAuth === 'oauth2' ? [...PARAMETERS.filter((p) => p.name !== 'CONTROL.API.AUTHORIZATION'), ...OAUTH2_PARAMETERS] : PARAMETERS,
  });
}

/**
 * The flow files, by the oldest NiFi each is for: NiFi 2.7.0 renamed the Parquet writer's compression-type to
 * Compression Type without migrating it (NIFI-15107), so a flow has the one name or the other.
 */
export const FLOW_FILES = [
  { nifi: '2.3.0', apiAuth: 'token', file: new URL('./load-control-flow.json', import.meta.url), range: 'NiFi 2.3.0 to 2.6.x' },
  { nifi: '2.7.0', apiAuth: 'token', file: new URL('./load-control-flow-2.7.json', import.meta.url), range: 'NiFi 2.7.0 and later' },
  {
    nifi: '2.3.0',
    apiAuth: 'oauth2',
    file: new URL('./load-control-flow-oauth2.json', import.meta.url),
    range: 'NiFi 2.3.0 to 2.6.x, OAuth2 client credentials',
  },
  {
    nifi: '2.7.0',
    apiAuth: 'oauth2',
    file: new URL('./load-control-flow-2.7-oauth2.json', import.meta.url),
    range: 'NiFi 2.7.0 and later, OAuth2 client credentials',
  },
] as const;
export const FLOW_FILE = FLOW_FILES[0].file;

/** A file's text: what `npm run nifi:flow` writes and the kit's test compares. */
export function flowJson(nifi: string = FLOW_FILES[0].nifi, apiAuth: ApiAuth = 'token'): string {
  return `${JSON.stringify(renamedFor(loadControlFlow(apiAuth), nifi), null, 2)}\n`;
}

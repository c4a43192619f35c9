// Apache NiFi's own code, run from the kit's tests and scripts: artifacts fetched from Maven Central by Maven
// itself (checksums verified, -C) into a cache outside the repository, and the two Java helpers of nifi/engine —
// NifiExpressions (the Expression Language and parameter parser, as a processor's context evaluates a property)
// and NifiComponents (the components' property descriptors and relationships) — compiled with javac and run in
// one JVM per batch. The cache is reused whenever every file of a resolution is still present.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The oldest NiFi the flow supports (README "Connecting NiFi" says why) and the newest release Maven Central serves. */
export const OLDEST_NIFI = '2.3.0';
const NEWEST_NIFI = '2.8.0';

/** The NiFi version a run checks: NIFI_VERSION, else the newest. */
export function nifiVersionUnderTest(): string {
  return process.env.NIFI_VERSION ?? NEWEST_NIFI;
}

const CACHE = process.env.LOAD_CONTROL_CACHE ?? join(homedir(), '.cache', 'load-control');
const JAVA_HOME = process.env.NIFI_JAVA_HOME ?? '/usr/lib/jvm/temurin-25-jdk-amd64';
const ENGINE_DIR = fileURLToPath(new URL('./engine/', import.meta.url));

export interface Artifact {
  /** org.apache.nifi unless given. */
  group?: string;
  artifact: string;
  version: string;
  /** A NAR is fetched alone (its extension manifest is read); a jar with everything it needs at run time. */
  type?: 'jar' | 'nar';
}

const coordinates = (a: Artifact) => `${a.group ?? 'org.apache.nifi'}:${a.artifact}:${a.type ?? 'jar'}:${a.version}`;

function pom(name: string, artifacts: Artifact[]): string {
  const dependency = (a: Artifact) =>
    `<dependency><groupId>${a.group ?? 'org.apache.nifi'}</groupId><artifactId>${a.artifact}</artifactId><version>${a.version}</version>` +
    (a.type === 'nar'
      ? '<type>nar</type><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>'
      : '') +
    '</dependency>';
  return `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>load-control</groupId><artifactId>${name}</artifactId><version>1</version>
<dependencies>${artifacts.map(dependency).join('')}</dependencies></project>\n`;
}

/**
 * The files of these artifacts and of everything they need at run time, from the cache, or fetched by Maven into it.
 * Throws naming the artifacts Maven Central did not serve.
 */
export function resolveArtifacts(name: string, artifacts: Artifact[]): string[] {
  const dir = join(CACHE, 'resolutions', `${name}-${createHash('sha256').update(JSON.stringify(artifacts)).digest('hex').slice(0, 12)}`);
  const listing = join(dir, 'classpath.txt');
  if (existsSync(listing)) {
    const files = readFileSync(listing, 'utf8').trim().split(delimiter);
    if (files.every((file) => existsSync(file))) return files;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pom.xml'), pom(name, artifacts));
  const maven = spawnSync(
    'mvn',
    [
      '-B',
      '-C',
      `-Dmaven.repo.local=${join(CACHE, 'maven')}`,
      'org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath',
      `-Dmdep.outputFile=${listing}.partial`,
    ],
    { cwd: dir, encoding: 'utf8', env: { ...process.env, JAVA_HOME } },
  );
  if (maven.status !== 0) {
    const why = maven.stdout
      .split('\n')
      .filter((line) => /ERROR/.test(line) && /resolve|transfer|checksum|Could not|absent|not found/i.test(line))
      .slice(0, 3)
      .join('\n');
    throw new Error(
      `Maven Central did not serve what ${name} needs (${artifacts.map(coordinates).join(', ')}):\n${why || maven.stdout.slice(-2000)}`,
    );
  }
  writeFileSync(listing, readFileSync(`${listing}.partial`, 'utf8'));
  return readFileSync(listing, 'utf8').trim().split(delimiter);
}

/** A Java helper (one source file, its class named after it) compiled against this classpath (once per source and classpath). */
function compiled(source: string, classpath: string[]): string {
  const helper = basename(source, '.java');
  const key = createHash('sha256').update(readFileSync(source)).update(classpath.join(delimiter)).digest('hex').slice(0, 16);
  const out = join(CACHE, 'classes', `${helper}-${key}`);
  if (!existsSync(join(out, `${helper}.class`))) {
    mkdirSync(out, { recursive: true });
    const javac = spawnSync(join(JAVA_HOME, 'bin', 'javac'), ['-nowarn', '-d', out, '-cp', classpath.join(delimiter), source], {
      encoding: 'utf8',
    });
    if (javac.status !== 0) throw new Error(`javac ${helper}.java failed: ${javac.stderr}`);
  }
  return out;
}

/**
 * Runs a Java helper — nifi/engine's, or another single-file one such as the tests' OpenLineage validator — on a
 * resolved classpath: the request as JSON on its standard input, its answer as JSON on its standard output.
 */
export function runJava(source: string, classpath: string[], request: unknown): unknown {
  const helper = basename(source, '.java');
  const jars = classpath.filter((file) => file.endsWith('.jar'));
  const classes = compiled(source, jars);
  const answer = spawnSync(join(JAVA_HOME, 'bin', 'java'), ['-cp', [classes, ...jars].join(delimiter), helper], {
    input: JSON.stringify(request),
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
  });
  if (answer.status !== 0) throw new Error(`${helper} failed (${answer.status}): ${answer.stderr.slice(-4000)}`);
  return JSON.parse(answer.stdout);
}

export interface EvaluationCase {
  value: string;
  parameters: Record<string, string>;
  attributes: Record<string, string>;
}

export type Evaluation = { value: string } | { error: string };

/** Each property value as NiFi `version` evaluates it in a processor (one JVM for the whole batch). */
export function evaluateWithNifi(version: string, cases: EvaluationCase[]): { nifiVersion: string; results: Evaluation[] } {
  const classpath = resolveArtifacts(`nifi-expressions-${version}`, [
    { artifact: 'nifi-expression-language', version },
    { artifact: 'nifi-parameter', version },
  ]);
  return runJava(join(ENGINE_DIR, 'NifiExpressions.java'), classpath, { cases }) as { nifiVersion: string; results: Evaluation[] };
}

/** What NifiComponents reports of a component: its property descriptors and relationships as NiFi declares them. */
export interface DescribedComponent {
  properties: Array<{
    name: string;
    displayName: string;
    required: boolean;
    sensitive: boolean;
    defaultValue: string | null;
    allowableValues: string[] | null;
    service: string | null;
    expressionLanguage: string;
  }>;
  relationships: string[];
  dynamicRelationships: boolean;
  dynamicProperties: boolean;
  writes: string[];
  provides: string[];
}

/** Components described by reflection over these jars (`classes`) and from these NARs' extension manifests. */
export function describeWithNifi(
  name: string,
  artifacts: Artifact[],
  classes: string[],
  narTypes: Record<string, string[]>,
): { components: Record<string, DescribedComponent>; files: Record<string, string> } {
  const classpath = resolveArtifacts(name, artifacts);
  const nars = Object.fromEntries(
    Object.entries(narTypes).map(([artifact, types]) => {
      const file = classpath.find((path) => path.endsWith('.nar') && path.includes(`/${artifact}/`));
      if (!file) throw new Error(`${artifact}: not among the files Maven resolved for ${name}`);
      return [file, types];
    }),
  );
  return runJava(join(ENGINE_DIR, 'NifiComponents.java'), classpath, { classes, nars }) as {
    components: Record<string, DescribedComponent>;
    files: Record<string, string>;
  };
}

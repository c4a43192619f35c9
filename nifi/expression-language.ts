// The part of NiFi's Expression Language the kit relies on, written once for the kit's test, the flow generator
// and the simulator. Parsing follows NiFi 2.x (Query.extractExpressionRanges and AttributeExpressionLexer.g):
// `${…}` expressions in a property value, `$${` as an escaped `${`, attribute names bare or quoted, `#{…}`
// parameter references, and chains of `:function(args)` whose arguments are literals or embedded expressions.
// Any function parses (the flow's own properties use more of them); only EVALUATED_FUNCTIONS evaluate, with
// NiFi's semantics: a missing attribute is null and renders as the empty string.

type Value = string | boolean | number | null;

type Node =
  | { kind: 'attribute'; name: string }
  | { kind: 'parameter'; name: string }
  | { kind: 'literal'; value: Value }
  | { kind: 'call'; name: string; subject: Node | null; args: Node[] };

/** A property value: literal text and expressions, in order. */
export type Template = ReadonlyArray<string | Node>;

class ExpressionError extends Error {}

/** Where each `${…}` starts and ends (inclusive), as NiFi finds them; quotes inside an expression hide braces. */
function expressionRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let lastChar = '';
  let depth = 0;
  let start = -1;
  let dollars = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (start > -1 && (c === "'" || c === '"')) {
      const end = closingQuote(text, i);
      if (end < 0) throw new ExpressionError(`unterminated string literal in ${JSON.stringify(text)}`);
      i = end;
      lastChar = c;
      continue;
    }
    if (c === '{') {
      // an odd run of dollars opens an expression; `$${` is an escaped `${`
      if (lastChar === '$' && dollars % 2 === 1 && depth === 0) start = i - 1;
      if (start > -1) depth++;
    } else if (c === '}') {
      if (depth > 0 && --depth === 0) {
        ranges.push([start, i]);
        start = -1;
      }
    }
    dollars = c === '$' ? dollars + 1 : 0;
    lastChar = c;
  }
  if (start > -1) throw new ExpressionError(`unterminated expression in ${JSON.stringify(text)}`);
  return ranges;
}

function closingQuote(text: string, open: number): number {
  const quote = text[open];
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/** `$$` before a `{…}` is one literal `$` (NiFi's Query.unescape). */
const unescapeDollars = (literal: string) => literal.replace(/\$\$(?=\$*\{)/g, '$');

export function parseTemplate(text: string): Template {
  const parts: Array<string | Node> = [];
  let at = 0;
  for (const [start, end] of expressionRanges(text)) {
    if (start > at) parts.push(unescapeDollars(text.slice(at, start)));
    parts.push(new Parser(text.slice(start + 2, end)).expression());
    at = end + 1;
  }
  if (at < text.length) parts.push(unescapeDollars(text.slice(at)));
  return parts;
}

const ATTRIBUTE_NAME = /^[^${}()[\],:;/*'\s0-9][^${}()[\],:;/*'\s]*/;
const FUNCTION_NAME = /^[A-Za-z][A-Za-z0-9]*(?=\s*\()/;
const NUMBER = /^-?[0-9]+(\.[0-9]+)?/;

class Parser {
  private at = 0;

  constructor(private readonly text: string) {}

  /** The inside of `${…}`: a subject, then `:function(args)` calls. */
  expression(): Node {
    let node = this.subject();
    for (this.space(); this.peek(':'); this.space()) {
      this.at++;
      this.space();
      const name = this.match(FUNCTION_NAME);
      if (!name) this.fail('a function name after ":"');
      node = { kind: 'call', name, subject: node, args: this.args() };
    }
    if (this.at !== this.text.length) this.fail('the end of the expression');
    return node;
  }

  private subject(): Node {
    this.space();
    const quoted = this.string();
    if (quoted !== null) return { kind: 'attribute', name: quoted };
    const parameter = this.parameter();
    if (parameter) return parameter;
    const name = this.match(FUNCTION_NAME);
    if (name) return { kind: 'call', name, subject: null, args: this.args() };
    const attribute = this.match(ATTRIBUTE_NAME);
    if (!attribute) this.fail('an attribute name');
    return { kind: 'attribute', name: attribute.trimEnd() };
  }

  private args(): Node[] {
    this.space();
    this.expect('(');
    const args: Node[] = [];
    this.space();
    if (this.peek(')')) {
      this.at++;
      return args;
    }
    for (;;) {
      this.space();
      args.push(this.arg());
      this.space();
      if (this.peek(')')) {
        this.at++;
        return args;
      }
      this.expect(',');
    }
  }

  private arg(): Node {
    const quoted = this.string();
    if (quoted !== null) return { kind: 'literal', value: quoted };
    const parameter = this.parameter();
    if (parameter) return parameter;
    if (this.text.startsWith('${', this.at)) {
      const end = this.closingBrace(this.at + 1);
      const inner = new Parser(this.text.slice(this.at + 2, end)).expression();
      this.at = end + 1;
      return inner;
    }
    const number = this.match(NUMBER);
    if (number) return { kind: 'literal', value: Number(number) };
    for (const word of ['true', 'false'] as const) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return { kind: 'literal', value: word === 'true' };
      }
    }
    return this.fail('an argument');
  }

  private parameter(): Node | null {
    if (!this.text.startsWith('#{', this.at)) return null;
    const end = this.text.indexOf('}', this.at);
    if (end < 0) this.fail('"}" closing the parameter reference');
    const name = this.text.slice(this.at + 2, end).replace(/^(['"])(.*)\1$/, '$2');
    this.at = end + 1;
    return { kind: 'parameter', name };
  }

  /** A quoted string with NiFi's escapes (\' \" \n \r \t \\), or null when none starts here. */
  private string(): string | null {
    const quote = this.text[this.at];
    if (quote !== "'" && quote !== '"') return null;
    let value = '';
    for (let i = this.at + 1; i < this.text.length; i++) {
      const c = this.text[i]!;
      if (c === quote) {
        this.at = i + 1;
        return value;
      }
      if (c === '\\') {
        const next = this.text[++i];
        const escaped: Record<string, string> = { '"': '"', "'": "'", n: '\n', r: '\r', t: '\t', '\\': '\\\\' };
        value += next !== undefined && next in escaped ? escaped[next] : `\\${next ?? ''}`;
      } else if (c === '\n' || c === '\r' || c === '\t') {
        this.fail('no raw line break or tab inside a string literal');
      } else {
        value += c;
      }
    }
    return this.fail(`a closing ${quote}`);
  }

  private closingBrace(open: number): number {
    let depth = 0;
    for (let i = open; i < this.text.length; i++) {
      const c = this.text[i];
      if (c === "'" || c === '"') {
        i = closingQuote(this.text, i);
        if (i < 0) break;
      } else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) return i;
    }
    return this.fail('"}" closing the embedded expression');
  }

  private match(pattern: RegExp): string | null {
    const found = pattern.exec(this.text.slice(this.at));
    if (!found) return null;
    this.at += found[0].length;
    return found[0];
  }

  private peek(c: string): boolean {
    return this.text[this.at] === c;
  }

  private expect(c: string): void {
    if (!this.peek(c)) this.fail(`"${c}"`);
    this.at++;
  }

  private space(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }

  private fail(expected: string): never {
    throw new ExpressionError(`expected ${expected} at ${this.at} in \${${this.text}}`);
  }
}

/** Every FlowFile attribute an expression reads (embedded expressions included). */
export function attributeReferences(template: Template): Set<string> {
  const names = new Set<string>();
  const visit = (node: Node) => {
    if (node.kind === 'attribute') names.add(node.name);
    else if (node.kind === 'call') {
      if (node.subject) visit(node.subject);
      node.args.forEach(visit);
    }
  };
  for (const part of template) if (typeof part !== 'string') visit(part);
  return names;
}

/** Every function a template calls, for checking it stays within what evaluates here. */
export function functionNames(template: Template): Set<string> {
  const names = new Set<string>();
  const visit = (node: Node) => {
    if (node.kind !== 'call') return;
    names.add(node.name);
    if (node.subject) visit(node.subject);
    node.args.forEach(visit);
  };
  for (const part of template) if (typeof part !== 'string') visit(part);
  return names;
}

/**
 * StringEscapeUtils.ESCAPE_JSON of commons-text, which NiFi's escapeJson() is: `"`, `\` and `/` escaped, the
 * Java control escapes \b \t \n \f \r, and every other character outside 0x20–0x7E as \uXXXX (upper-case hex,
 * UTF-16 units — a character beyond the BMP becomes its surrogate pair).
 */
const JSON_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '/': '\\/',
  '\b': '\\b',
  '\t': '\\t',
  '\n': '\\n',
  '\f': '\\f',
  '\r': '\\r',
};

export function escapeJson(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const code = text.charCodeAt(i);
    const named = JSON_ESCAPES[c];
    if (named !== undefined) out += named;
    else if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += c;
  }
  return out;
}

const text = (value: Value): string | null => (value === null ? null : String(value));

function truth(value: Value, name: string): boolean | null {
  if (value === null) return null;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new ExpressionError(`${name}: ${JSON.stringify(value)} is not a boolean`);
}

type Evaluated = (subject: Value, args: Value[]) => Value;

/** The functions the kit's templates may use, as NiFi 2.x evaluates them. */
const EVALUATED_FUNCTIONS: Record<string, Evaluated> = {
  escapeJson: (s) => escapeJson(text(s) ?? ''),
  isEmpty: (s) => s === null || String(s).trim() === '',
  ifElse: (s, [yes, no]) => {
    const condition = truth(s, 'ifElse');
    return condition === null ? null : text(condition ? yes! : no!);
  },
  prepend: (s, [p]) => (text(p) ?? '') + (text(s) ?? ''),
  append: (s, [a]) => (text(s) ?? '') + (text(a) ?? ''),
  equals: (s, [other]) => s !== null && other !== null && String(s) === String(other),
  not: (s) => {
    const condition = truth(s, 'not');
    return condition === null ? null : !condition;
  },
  and: (s, [other]) => {
    const condition = truth(s, 'and');
    return condition === null ? null : condition && truth(other!, 'and') === true;
  },
  or: (s, [other]) => {
    const condition = truth(s, 'or');
    return condition === null ? null : condition || truth(other!, 'or') === true;
  },
  // Java's substring, whose IndexOutOfBoundsException NiFi turns into the empty string
  substring: (s, [start, end]) => {
    const value = text(s);
    if (value === null) return '';
    const from = Number(start);
    const to = end === undefined ? value.length : Number(end);
    return from < 0 || to > value.length || from > to ? '' : value.slice(from, to);
  },
  // commons-lang leftPad; NiFi's default padding is "_"
  padLeft: (s, [length, pad]) => {
    const value = text(s);
    if (value === null) return null;
    return Number(length) > 0 ? value.padStart(Number(length), text(pad ?? '_') || '_') : value;
  },
  literal: (_, [value]) => text(value!),
  jsonPath: (s, [path]) => jsonPathValue(text(s) ?? '', String(path)),
};

export const EVALUATED_FUNCTION_NAMES: ReadonlySet<string> = new Set(Object.keys(EVALUATED_FUNCTIONS));

/** What an expression reads: FlowFile attributes and the parameter context (absent means null). */
export interface Scope {
  attributes: Readonly<Record<string, string | undefined>>;
  parameters?: Readonly<Record<string, string | undefined>>;
}

function evaluate(node: Node, scope: Scope): Value {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'attribute':
      return scope.attributes[node.name] ?? null;
    case 'parameter':
      return scope.parameters?.[node.name] ?? null;
    case 'call': {
      const fn = EVALUATED_FUNCTIONS[node.name];
      if (!fn) throw new ExpressionError(`${node.name}() is not in the kit's expression subset`);
      return fn(
        node.subject ? evaluate(node.subject, scope) : null,
        node.args.map((arg) => evaluate(arg, scope)),
      );
    }
  }
}

/** The property value NiFi would compute: literal text as is, each expression's value as text (null: empty). */
export function render(template: Template, scope: Scope): string {
  let out = '';
  for (const part of template) out += typeof part === 'string' ? part : (text(evaluate(part, scope)) ?? '');
  return out;
}

/**
 * NiFi's jsonPath() for the paths the kit reads (`$.a.b`, `$.a[0].b`): a string as is, a number or boolean as
 * text, null or a missing path as the empty string. An empty or unparsable subject fails, as it does in NiFi.
 */
export function jsonPathValue(json: string, path: string): string {
  if (json === '') throw new ExpressionError('jsonPath: the subject is empty');
  return jsonPathOf(JSON.parse(json), path);
}

/** The same over a subject already parsed (one parse for all the attributes an answer sets). */
export function jsonPathOf(subject: unknown, path: string): string {
  const steps = /^\$((\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])+)$/.exec(path);
  if (!steps) throw new ExpressionError(`jsonPath: ${path} is not a path of names and indexes`);
  let value = subject;
  for (const [, name, index] of steps[1]!.matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]/g)) {
    if (value === null || typeof value !== 'object') return '';
    value = name !== undefined ? (value as Record<string, unknown>)[name] : (value as unknown[])[Number(index)];
    if (value === undefined) return '';
  }
  if (value === null) return '';
  if (typeof value === 'object') throw new ExpressionError(`jsonPath: ${path} is not a scalar`);
  return String(value);
}

const parsedTexts = new Map<string, Template>();

/** A property value rendered over these attributes, its parse kept for the next time. */
export function evaluateText(text: string, attributes: Scope['attributes']): string {
  let template = parsedTexts.get(text);
  if (!template) {
    template = parseTemplate(text);
    parsedTexts.set(text, template);
  }
  return render(template, { attributes });
}

/**
 * The `#{…}` references NiFi's parameter parser substitutes before any expression is evaluated (its
 * ExpressionLanguageAwareParameterParser, or with `expressionLanguage: false` the agnostic one): every reference,
 * or only those outside `${…}` — a reference inside an expression stays for the expression to read, and inside an
 * expression's string literal it is text. `##{` is an escaped `#{`; a parameter the context lacks is empty.
 */
export function substituteParameters(
  value: string,
  parameters: Readonly<Record<string, string | undefined>>,
  options: { expressionLanguage: boolean },
): string {
  let out = '';
  let depth = 0;
  let oddDollars = false;
  let lastChar = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '#' && depth === 0) {
      const reference = /^(#+)\{([^{}]*)\}/.exec(value.slice(i));
      if (reference) {
        const hashes = reference[1]!.length;
        out += '#'.repeat(Math.floor(hashes / 2));
        out += hashes % 2 === 0 ? `{${reference[2]}}` : (parameters[reference[2]!] ?? '');
        i += reference[0].length - 1;
        lastChar = '}';
        oddDollars = false;
        continue;
      }
    }
    if (options.expressionLanguage) {
      if (c === '{' && oddDollars && lastChar === '$') depth++;
      else if (c === '{' && depth > 0) depth++;
      else if (c === '}' && depth > 0 && --depth === 0) oddDollars = false;
      if (c === '$') oddDollars = !oddDollars;
    }
    out += c;
    lastChar = c;
  }
  return out;
}

/**
 * A processor's property value as NiFi computes it (StandardProcessContext): the parameters substituted, then —
 * for a property that supports the Expression Language — its expressions evaluated over the FlowFile's attributes,
 * a `#{…}` inside one reading the parameter context.
 */
export function evaluateProperty(value: string, scope: Required<Scope>, options: { expressionLanguage: boolean }): string {
  const substituted = substituteParameters(value, scope.parameters, options);
  return options.expressionLanguage ? render(parseTemplate(substituted), scope) : substituted;
}

/** The `#{…}` references written inside an expression's string literal, which NiFi leaves as text. */
export function parametersInLiterals(template: Template): string[] {
  const found: string[] = [];
  const visit = (node: Node) => {
    if (node.kind === 'literal' && typeof node.value === 'string') found.push(...(node.value.match(/#\{[^}]*\}/g) ?? []));
    else if (node.kind === 'call') {
      if (node.subject) visit(node.subject);
      node.args.forEach(visit);
    }
  };
  for (const part of template) if (typeof part !== 'string') visit(part);
  return found;
}

/** UpdateAttribute's way: every value evaluated over the FlowFile as it arrived. */
export function evaluateProperties(properties: Record<string, string>, attributes: Scope['attributes']): Record<string, string> {
  return Object.fromEntries(Object.entries(properties).map(([name, text]) => [name, evaluateText(text, attributes)]));
}
